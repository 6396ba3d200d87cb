"""The demo's event stream against a checked-in snapshot (as Home Assistant's pipeline
tests snapshot their event lists): the order of event types, and the field names of
every type. A change in what the device publishes (a renamed field, a dropped or new
event, events in another order) fails here and is then either a bug or a decision;
MQTT and log consumers see this stream.

The whole daemon runs ``edgevoice demo --fast`` (the simulated room as fast as the
machine goes, the bundled piper voice, pocketsphinx, the built-in agent). Two things
depend on wall-clock timing in that mode and are normalised: a run of
``transcript.user.delta`` counts as one (how many partials a turn gets), and
``barge_in.mode`` is left out of the order (when the canceller's reading settles
relative to the first reply); its fields are still compared.

Regenerate after a deliberate change, then review the diff of the snapshot:

    EDGEVOICE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/runtime/test_event_stream_golden.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from edgevoice.device.cli.demo_cmd import DEMO_DEFAULTS
from edgevoice.device.config import load_config
from edgevoice.device.events import Event, EventType
from edgevoice.device.runtime.demo import run_demo

SNAPSHOT = Path(__file__).parent / "golden" / "demo_events.json"
COLLAPSED = {str(EventType.TRANSCRIPT_USER_DELTA)}
UNORDERED = {str(EventType.BARGE_IN_MODE)}


def stream_shape(events: list[dict[str, Any]]) -> dict[str, Any]:
    order: list[str] = []
    fields: dict[str, set[str]] = {}
    for event in events:
        kind = event["type"]
        fields.setdefault(kind, set()).update(event)
        if kind in UNORDERED or (order and kind in COLLAPSED and order[-1] == kind):
            continue
        order.append(kind)
    return {"order": order, "fields": {kind: sorted(names) for kind, names in sorted(fields.items())}}


async def test_the_demo_publishes_the_snapshotted_event_stream(tmp_path: Path) -> None:
    loaded = load_config(None, [*DEMO_DEFAULTS, "room.speed=0"], search_paths=[])
    published: list[dict[str, Any]] = []

    def record(event: Event, _audio_s: float) -> None:
        published.append(event.as_dict())

    report = await run_demo(loaded, tmp_path, on_event=record)
    assert report.ok, report.problems
    shape = stream_shape(published)
    if os.environ.get("EDGEVOICE_UPDATE_GOLDEN"):
        SNAPSHOT.write_text(json.dumps(shape, indent=1) + "\n", encoding="utf-8")
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert shape["fields"] == expected["fields"]
    assert shape["order"] == expected["order"]


def test_the_normalisation_keeps_order_and_collapses_only_partials() -> None:
    events = [{"type": "input.speech.started", "ts": 1.0, "audio_s": 0.5},
              {"type": "transcript.user.delta", "ts": 1.1, "text": "a"},
              {"type": "transcript.user.delta", "ts": 1.2, "text": "a b"},
              {"type": "barge_in.mode", "ts": 1.25, "mode": "normal"},
              {"type": "transcript.user", "ts": 1.3, "text": "a b", "start_s": 0.5},
              {"type": "transcript.user.delta", "ts": 1.4, "text": "c"},
              {"type": "state.changed", "ts": 1.5, "state": "idle", "previous": "thinking"},
              {"type": "state.changed", "ts": 1.6, "state": "listening", "previous": "idle"}]
    assert stream_shape(events) == {
        "order": ["input.speech.started", "transcript.user.delta", "transcript.user",
                  "transcript.user.delta", "state.changed", "state.changed"],
        "fields": {"barge_in.mode": ["mode", "ts", "type"],
                   "input.speech.started": ["audio_s", "ts", "type"],
                   "state.changed": ["previous", "state", "ts", "type"],
                   "transcript.user": ["start_s", "text", "ts", "type"],
                   "transcript.user.delta": ["text", "ts", "type"]},
    }
