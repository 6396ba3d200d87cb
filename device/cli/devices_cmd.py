"""``edgevoice devices``: the ALSA capture and playback PCMs and what each accepts.

The parser is built by :func:`add_arguments` so that further options (for example a
``--suggest`` that proposes an ``[audio]`` section) can be added beside the others.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from edgevoice.device.cli.common import EXIT_OK, add_common_options, load, print_json


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "devices",
        help="list ALSA capture and playback devices with the channels, rates and formats "
             "each accepts",
        description="List the ALSA PCMs alsa-lib knows (and the configured ones), probing "
                    "each by opening it.",
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser, json_output=True)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--capture", dest="kinds", action="store_const", const=("capture",),
                       help="only capture devices")
    which.add_argument("--playback", dest="kinds", action="store_const", const=("playback",),
                       help="only playback devices")
    parser.add_argument("--device", dest="devices", action="append", default=[], metavar="PCM",
                        help="also probe this PCM name (repeatable)")
    parser.add_argument("--all", dest="show_all", action="store_true",
                        help="also list devices that cannot be opened")


def run(args: argparse.Namespace) -> int:
    from edgevoice.audio.devices import KINDS, list_devices

    loaded = load(args)
    extra = list(args.devices)
    audio = loaded.config.audio
    if audio.backend == "alsa":
        extra += [audio.capture_device, audio.playback_device]
    infos = list_devices(args.kinds or KINDS, extra)
    if args.json:
        print_json({"devices": [info.as_dict() for info in infos]})
        return EXIT_OK
    out = sys.stdout
    for kind in args.kinds or KINDS:
        rows = [i for i in infos if i.kind == kind and (i.available or args.show_all)]
        out.write(f"{kind.upper()} ({len(rows)})\n")
        if not rows:
            out.write("  none found\n")
        width = max([len(i.name) for i in rows] + [4])
        for info in rows:
            if info.available:
                out.write(f"  {info.name:<{width}}  channels {_ints(info.channels)}  rates "
                          f"{_ints(info.rates)}  formats {', '.join(info.formats)}\n")
            else:
                out.write(f"  {info.name:<{width}}  cannot be opened: {info.error}\n")
    hidden = sum(1 for i in infos if not i.available)
    if hidden and not args.show_all:
        out.write(f"({hidden} more cannot be opened; --all lists them)\n")
    return EXIT_OK


def _ints(values: tuple[int, ...]) -> str:
    return ",".join(str(v) for v in values) if values else "-"
