"""``edgevoice config show|check|docs``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from edgevoice.device.cli.common import (
    EXIT_CONFIG,
    EXIT_OK,
    add_common_options,
    load,
    print_json,
)
from edgevoice.device.config import ConfigError, to_dict, to_toml
from edgevoice.device.config.docs import render


def register(sub: Any) -> None:
    parser = sub.add_parser("config", help="show, check or document the configuration")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = actions.add_parser("show", help="print the effective config, secrets redacted")
    add_common_options(show, json_output=True)
    show.set_defaults(func=_show)
    check = actions.add_parser("check", help="validate; exit non-zero listing every problem")
    add_common_options(check, json_output=True)
    check.set_defaults(func=_check)
    docs = actions.add_parser("docs", help="print the configuration reference (Markdown)")
    docs.set_defaults(func=_docs)


def _show(args: argparse.Namespace) -> int:
    loaded = load(args)
    data = to_dict(loaded.config, redact=True)
    if args.json:
        print_json(data)
    else:
        sys.stdout.write(f"# sources: {', '.join(loaded.sources) or 'defaults only'}\n")
        sys.stdout.write(to_toml(data))
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    try:
        loaded = load(args)
    except ConfigError as err:
        if args.json:
            print_json({"ok": False, "problems": [
                {"source": p.source, "key": p.key, "message": p.message} for p in err.problems
            ]})
        else:
            print(err.message, file=sys.stderr)
        return EXIT_CONFIG
    if args.json:
        print_json({"ok": True, "sources": list(loaded.sources)})
    else:
        print(f"config ok ({', '.join(loaded.sources) or 'defaults only'})")
    return EXIT_OK


def _docs(args: argparse.Namespace) -> int:
    sys.stdout.write(render())
    return EXIT_OK
