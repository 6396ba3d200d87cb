"""``edgevoice devices``: the ALSA capture and playback PCMs and what each accepts.

The parser is built by :func:`add_arguments` so that further options (for example a
``--suggest`` that proposes an ``[audio]`` section) can be added beside the others.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
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
    parser.add_argument("--suggest", action="store_true",
                        help="recognise the connected hardware and propose a profile preset")
    parser.add_argument("--root", type=Path, default=Path("/"), metavar="DIR",
                        help="with --suggest: read /proc/asound and /sys/bus/usb under DIR "
                             "(a copy taken from another board) instead of this machine's")


def _suggest(args: argparse.Namespace) -> int:
    from edgevoice.device.config import to_toml
    from edgevoice.device.hardware.profiles import read_hardware, suggest

    hits = suggest(read_hardware(args.root))
    if args.json:
        print_json({"suggestions": [hit.as_dict() for hit in hits]})
        return EXIT_OK
    if not hits:
        sys.stdout.write("no known hardware recognised; see docs/provisioning.md for the profiles\n")
    for rank, hit in enumerate(hits):
        preset = hit.preset_path()
        sys.stdout.write(f"{'suggested' if rank == 0 else 'also fits'}: {hit.profile.name} "
                         f"({hit.profile.title})\n  because {hit.reason}\n"
                         f"  preset: {preset or 'not installed'}\n")
        if hit.profile.geometry:
            sys.stdout.write(f"  array geometry: {hit.profile.geometry}"
                             + (" (on in the preset: direction of arrival and a beam toward the "
                                "talker)\n" if hit.array_in_preset() else
                                f" (off in the preset; to steer a beam, set [array] geometry = "
                                f"\"{hit.profile.geometry}\")\n"))
        if hit.overrides:
            sys.stdout.write("  and set for this exact hardware:\n    "
                             + to_toml(hit.overrides).strip().replace("\n", "\n    ") + "\n")
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    from edgevoice.audio.io.devices import KINDS, list_devices

    if args.suggest:
        return _suggest(args)

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
