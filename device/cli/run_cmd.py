"""``edgevoice run``: the daemon."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from edgevoice.device.cli.common import add_common_options, load
from edgevoice.device.events import Event


def register(sub: Any) -> None:
    parser = sub.add_parser("run", help="run the voice daemon (what the systemd unit starts)")
    add_common_options(parser)
    parser.add_argument("--events", action="store_true",
                        help="print every event as a JSON line on stdout")
    parser.set_defaults(func=_run)


def _print_event(event: Event) -> None:
    sys.stdout.write(json.dumps(event.as_dict(), ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def _run(args: argparse.Namespace) -> int:
    from edgevoice.device.runtime.daemon import Daemon

    loaded = load(args)
    daemon = Daemon(loaded, config_path=args.config, overrides=tuple(args.overrides),
                    on_event=_print_event if args.events else None)
    return asyncio.run(daemon.run())
