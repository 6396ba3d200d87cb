"""What every subcommand shares: exit codes, config loading, JSON and error output."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgevoice.device.config import ConfigError, LoadedConfig, load_config
from edgevoice.device.config.loader import secret_values
from edgevoice.device.system.logs import scrub_secrets
from edgevoice.errors import EdgeVoiceError

EXIT_OK = 0
EXIT_FAILURE = 1  # the command ran and what it checked or did failed
EXIT_USAGE = 2  # bad command line (argparse uses 2 as well)
EXIT_CONFIG = 3  # the configuration is invalid
EXIT_UNAVAILABLE = 4  # a device, model, server or broker could not be reached

Handler = Callable[[argparse.Namespace], int]


def add_common_options(parser: argparse.ArgumentParser, *, json_output: bool = False) -> None:
    """``--config``/``--set`` (and ``--json``) for a subcommand that reads the config."""
    parser.add_argument("--config", type=Path, metavar="PATH",
                        help="config file (default: /etc/edgevoice/config.toml, then "
                             "~/.config/edgevoice/config.toml)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="SECTION.KEY=VALUE", help="override one key (repeatable)")
    if json_output:
        parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def load(args: argparse.Namespace) -> LoadedConfig:
    """Load the config named by the common options; scrub its secrets from logs."""
    loaded = load_config(getattr(args, "config", None), getattr(args, "overrides", []))
    scrub_secrets(secret_values(loaded.config))
    return loaded


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, ensure_ascii=False, default=str)
    sys.stdout.write("\n")
    sys.stdout.flush()


def report_error(err: EdgeVoiceError, *, as_json: bool) -> None:
    """An error for a person on stderr, or ``{"error": {code, message}}`` on stdout."""
    if as_json:
        print_json({"error": err.as_dict()})
    else:
        print(f"edgevoice: {err.message}", file=sys.stderr)


def exit_code_for(err: EdgeVoiceError) -> int:
    if isinstance(err, ConfigError):
        return EXIT_CONFIG
    if err.code.endswith("unavailable") or err.code in {"device_not_found", "model_not_found"}:
        return EXIT_UNAVAILABLE
    return EXIT_FAILURE
