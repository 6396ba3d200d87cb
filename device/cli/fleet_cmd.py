"""``edgevoice fleet list|send``: the operator's view of a fleet over MQTT.

Connects with the ``[mqtt]`` settings of the config it is given (an operator's
config: its url, user name and password — the ``fleet`` user of the shipped ACL).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from edgevoice.device.cli.common import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    add_common_options,
    load,
    print_json,
)
from edgevoice.device.config.schema import MqttConfig
from edgevoice.device.mqtt.fleet import Addressee, DeviceInfo, FleetClient, SendReport
from edgevoice.errors import EdgeVoiceError


def register(sub: Any) -> None:
    parser = sub.add_parser("fleet", help="list devices and send them commands over MQTT")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    listing = actions.add_parser("list", help="every device from the broker's retained status")
    add_common_options(listing, json_output=True)
    listing.add_argument("--group", help="only devices of this group")
    listing.add_argument("--timeout", type=float, default=5.0, metavar="S",
                         help="give up on the broker after S seconds (default 5)")
    listing.set_defaults(func=_list)

    send = actions.add_parser("send", help="send a command; print one line per device")
    add_common_options(send, json_output=True)
    who = send.add_mutually_exclusive_group(required=True)
    who.add_argument("--device", metavar="ID", help="one device")
    who.add_argument("--group", metavar="G", help="every device of a group")
    who.add_argument("--all", action="store_true", help="every device")
    send.add_argument("command", metavar="CMD", help="ping, say, interrupt, set_volume, set_config, …")
    send.add_argument("arguments", nargs="?", default="{}", metavar="JSON",
                      help='arguments as a JSON object, e.g. \'{"text": "hello"}\'')
    send.add_argument("--wait", type=float, default=5.0, metavar="S",
                      help="collect answers for up to S seconds (default 5)")
    send.set_defaults(func=_send)


def _mqtt(args: argparse.Namespace) -> MqttConfig:
    config = load(args).config.mqtt
    if not config.url:
        raise EdgeVoiceError(
            "no broker configured: set [mqtt] url in the config or pass --set mqtt.url=mqtt://host:1883",
            code="broker_unavailable",
        )
    return config


def _age(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 120:
        return f"{value:.0f}s"
    if value < 7200:
        return f"{value / 60:.0f}m"
    return f"{value / 3600:.0f}h"


def format_table(devices: list[DeviceInfo]) -> str:
    rows = [("ID", "ONLINE", "VERSION", "GROUP", "STATE", "TELEMETRY")]
    for d in devices:
        rows.append((d.id, "yes" if d.online else "no", d.version or "-", d.group or "-",
                     d.state or "-", _age(d.telemetry_age_s)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows) + "\n"


def _list(args: argparse.Namespace) -> int:
    with FleetClient(_mqtt(args)) as fleet:
        devices = fleet.list_devices(args.group, timeout_s=args.timeout)
    if args.json:
        print_json([d.as_dict() for d in devices])
    else:
        sys.stdout.write(format_table(devices))
        online = sum(d.online for d in devices)
        sys.stdout.write(f"{len(devices)} device(s), {online} online\n")
    return EXIT_OK


def summarise_result(result: object) -> str:
    """One line for a result: a doctor report as its verdict and the checks that did not
    pass (``FAIL agent, mqtt; WARN disk``), anything else as compact JSON."""
    if isinstance(result, dict) and isinstance(result.get("checks"), list) and "ok" in result:
        checks = [c for c in result["checks"] if isinstance(c, dict)]
        by_status: dict[str, list[str]] = {}
        for check in checks:
            by_status.setdefault(str(check.get("status", "?")), []).append(str(check.get("name", "?")))
        verdict = "doctor ok" if result.get("ok") else "doctor FAIL"
        bad = "; ".join(f"{status.upper()} {', '.join(names)}" for status, names in sorted(by_status.items())
                        if status not in ("ok", "skip"))
        passed = len(by_status.get("ok", []))
        return f"{verdict}  {passed}/{len(checks)} ok" + (f"  {bad}" if bad else "")
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def format_report(report: SendReport) -> str:
    lines = []
    for device_id in sorted(report.answers):
        answer = report.answers[device_id]
        if answer.get("ok"):
            lines.append(f"{device_id}  ok  {summarise_result(answer.get('result'))}")
        else:
            error = answer.get("error") or {}
            lines.append(f"{device_id}  error  {error.get('code', '?')}: {error.get('message', '')}")
    if report.missing:
        lines.append(f"no answer ({len(report.missing)}): {', '.join(report.missing)}")
    if report.dropped:
        who = ", ".join(f"{sender} as {'/'.join(claims)}"
                        for sender, claims in sorted(report.impostors.items()))
        lines.append(f"dropped {report.dropped} answer(s) claiming another identity: {who}")
    lines.append(f"{len(report.answers)} answer(s) in {report.elapsed_s:.2f} s")
    return "\n".join(lines) + "\n"


def _send(args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.arguments)
    except ValueError as err:
        print(f"edgevoice: the arguments are not valid JSON: {err}", file=sys.stderr)
        return EXIT_USAGE
    if not isinstance(arguments, dict):
        print("edgevoice: the arguments must be a JSON object", file=sys.stderr)
        return EXIT_USAGE
    to = Addressee(device=args.device, group=args.group, everyone=bool(args.all))
    with FleetClient(_mqtt(args)) as fleet:
        report = fleet.send(to, args.command, arguments, wait_s=args.wait)
    if args.json:
        print_json(report.as_dict())
    else:
        sys.stdout.write(format_report(report))
    return EXIT_OK if report.all_ok else EXIT_FAILURE
