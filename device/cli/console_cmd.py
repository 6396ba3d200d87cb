"""``edgevoice console token [--captions]``: print the console's token (made if there is none)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from edgevoice.device.cli.common import EXIT_OK, add_common_options, load, print_json
from edgevoice.device.console.tokens import load_tokens
from edgevoice.device.identity import state_dir


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "console", help="the local console: print its login token",
        description="The local web console (/captions, /operator, /v1/events, /metrics); see "
                    "docs/console.md.",
    )
    actions = parser.add_subparsers(dest="console_action", metavar="ACTION", required=True)
    token = actions.add_parser(
        "token", help="print the console token (generated and kept in the state directory)",
        description="Print the full-access console token, or with --captions the read-only "
                    "token that opens /captions only (for a kiosk screen). Both are created on "
                    "first use in [device] state_dir.",
    )
    token.add_argument("--captions", action="store_true", help="the read-only captions token")
    add_common_options(token, json_output=True)
    token.set_defaults(func=_token)


def _token(args: argparse.Namespace) -> int:
    config = load(args).config
    tokens = load_tokens(config.console, state_dir(config.device))
    value = tokens.captions if args.captions else tokens.full
    if args.json:
        print_json({"token": value, "role": "captions" if args.captions else "full"})
    else:
        sys.stdout.write(value + "\n")
    return EXIT_OK
