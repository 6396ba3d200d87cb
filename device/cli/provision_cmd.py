"""``edgevoice provision --boot-config PATH [--root DIR] [--dry-run] [--json]``: first boot."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from edgevoice.device.cli.common import EXIT_CONFIG, EXIT_OK, print_json
from edgevoice.device.config import ConfigError

DEFAULT_BOOT_CONFIG = Path("/boot/firmware/edgevoice.toml")


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "provision",
        help="apply the boot partition's edgevoice.toml (Wi-Fi, hostname, MQTT, config)",
        description="Check the boot config completely, then apply it: /etc/edgevoice/config.toml, "
                    "the Wi-Fi connection, hostname, time zone, MQTT CA, device identity. "
                    "Secrets are then removed from the boot partition (the file becomes "
                    "edgevoice.toml.applied). Nothing is changed when any check fails.",
    )
    parser.add_argument("--boot-config", type=Path, default=DEFAULT_BOOT_CONFIG, metavar="PATH",
                        help=f"the boot file (default: {DEFAULT_BOOT_CONFIG})")
    parser.add_argument("--root", type=Path, default=Path("/"), metavar="DIR",
                        help="apply under this directory instead of / (image builds, tests)")
    parser.add_argument("--dry-run", action="store_true", help="check and show what would change")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    parser.set_defaults(func=_provision)


def _provision(args: argparse.Namespace) -> int:
    # provisioning sits above device/: only the CLI (the front door) reaches up to it.
    from edgevoice.provisioning.provision import APPLIED_SUFFIX, provision

    boot: Path = args.boot_config
    applied = boot.with_name(boot.name + APPLIED_SUFFIX)
    if not boot.exists() and applied.exists():
        message = f"nothing to do: {boot} was already applied ({applied})"
        if args.json:
            print_json({"ok": True, "changed": False, "message": message})
        else:
            print(message)
        return EXIT_OK
    try:
        report = provision(boot, args.root, dry_run=args.dry_run)
    except ConfigError as err:
        if args.json:
            print_json({"ok": False, "applied": False, "problems": [
                {"source": p.source, "key": p.key, "message": p.message} for p in err.problems]})
        else:
            print(f"{err.message}\nnothing was changed.", file=sys.stderr)
        return EXIT_CONFIG
    if args.json:
        print_json({"ok": True, **report.as_dict()})
        return EXIT_OK
    width = max((len(c.what) for c in report.changes), default=4)
    for change in report.changes:
        print(f"{change.what:<{width}}  {change.status:<17} {change.path}")
    if report.identity is not None:
        print(f"{'identity':<{width}}  {report.identity_status:<17} {report.identity.device_id} "
              f"({report.identity.source})")
    for action in report.live:
        print(f"now: {action}")
    if report.boot_record:
        print(f"secrets removed from the boot partition: {report.boot_record}")
    if args.dry_run:
        print("dry run: nothing was changed.")
    elif not report.changed:
        print("unchanged: the system already matched the boot config.")
    return EXIT_OK
