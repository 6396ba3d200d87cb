"""``edgevoice doctor [--json] [--only CHECK,...]``: can this device do its job?"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from edgevoice.device.cli.common import EXIT_FAILURE, EXIT_OK, add_common_options, load, print_json
from edgevoice.device.doctor import CHECKS, DoctorOptions, failed, render_table, run_checks


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "doctor", help="check audio, models, agent, MQTT, GPIO, SoC, clock and disk",
        description="Run every check and print a table with a fix for each failure; exits 1 when "
                    "any check fails.")
    add_common_options(parser, json_output=True)
    parser.add_argument("--only", metavar="CHECK,...", default=",".join(CHECKS),
                        help=f"checks to run (default: all of {', '.join(CHECKS)})")
    parser.add_argument("--agent-timeout", type=float, default=15.0, metavar="S",
                        help="seconds the agent probe may take (default 15)")
    parser.set_defaults(func=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    only = tuple(name.strip() for name in args.only.split(",") if name.strip())
    unknown = [name for name in only if name not in CHECKS]
    if unknown:
        print(f"edgevoice doctor: unknown check(s) {', '.join(unknown)}; known: {', '.join(CHECKS)}",
              file=sys.stderr)
        return 2
    config = load(args).config
    results = asyncio.run(run_checks(config, only=only,
                                     options=DoctorOptions(agent_timeout_s=args.agent_timeout)))
    if args.json:
        print_json({"ok": not failed(results), "checks": [r.as_dict() for r in results]})
    else:
        sys.stdout.write(render_table(results))
    return EXIT_FAILURE if failed(results) else EXIT_OK
