"""The ``edgevoice`` command line: the one front door that may reach every layer.

Each subcommand lives in its own module with a ``register(subparsers)`` function
that adds its parser and sets ``func``; :data:`COMMANDS` lists them in help order.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from edgevoice import __version__
from edgevoice.device.cli.common import EXIT_FAILURE, EXIT_USAGE, exit_code_for, report_error
from edgevoice.device.system.logs import setup_logging
from edgevoice.errors import EdgeVoiceError

_LOGGER = logging.getLogger(__name__)

COMMANDS = (
    "edgevoice.device.cli.run_cmd",
    "edgevoice.device.cli.demo_cmd",
    "edgevoice.device.cli.config_cmd",
    "edgevoice.device.cli.aec_cmd",
    "edgevoice.device.cli.devices_cmd",
    "edgevoice.device.cli.say_cmd",
    "edgevoice.device.cli.models_cmd",
    "edgevoice.device.cli.provision_cmd",
    "edgevoice.device.cli.doctor_cmd",
    "edgevoice.device.cli.chat_cmd",
    "edgevoice.device.cli.fleet_cmd",
    "edgevoice.device.cli.transcribe_cmd",
    "edgevoice.device.cli.knowledge_cmd",
    "edgevoice.device.cli.array_cmd",
    "edgevoice.device.cli.console_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgevoice",
        description="On-device voice front end: the device owns the call, the agent owns "
                    "what to say.",
    )
    parser.add_argument("--version", action="version", version=f"edgevoice {__version__}")
    parser.add_argument("--debug", action="store_true", help="log at DEBUG level")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args.debug)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    as_json = bool(getattr(args, "json", False))
    try:
        code = func(args)
    except EdgeVoiceError as err:
        report_error(err, as_json=as_json)
        return exit_code_for(err)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_FAILURE
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
