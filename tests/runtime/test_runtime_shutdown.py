"""What a daemon leaves behind when it stops: its recognizer's worker process ends with it.
Until this was fixed every daemon started in one process (the test suite, anything that runs
the daemon in-process) left a pocketsphinx worker (~50 MB) and its reader thread alive for
good: 72 of them by the end of one test run."""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from support.device_harness import running_device

from edgevoice.audio.hearing.asr_pocketsphinx import PocketsphinxEngine
from edgevoice.audio.hearing.asr_worker import WorkerAsrEngine
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.vad import VoiceActivity
from edgevoice.audio.hearing.vad_energy import EnergyVad
from edgevoice.models import ModelKind, resolve_model


def _alive(pid: int) -> bool:
    """The process runs (a zombie, exited but not yet reaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def _readers() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == "edgevoice-asr-reader")


def _worker() -> WorkerAsrEngine:
    loc = resolve_model("pocketsphinx-en-us", ModelKind.ASR)
    return WorkerAsrEngine(functools.partial(PocketsphinxEngine, loc.path, model_name=loc.name,
                                             language=loc.language))


async def test_the_daemon_stops_its_recognizer_worker(tmp_path: Path) -> None:
    before = _readers()
    async with running_device(tmp_path, ["asr.process=worker"]) as device:
        asr = device.daemon.conversation.front.listener.asr
        assert isinstance(asr, WorkerAsrEngine) and asr.pid is not None
        pid = asr.pid
        assert _alive(pid) and _readers() == before + 1
    assert not _alive(pid)
    assert _readers() == before


def test_a_listener_closes_the_recognizer_it_owns_and_not_a_shared_one() -> None:
    shared = _worker()
    try:
        Listener(VoiceActivity(EnergyVad()), shared).close()
        assert shared.pid is not None and _alive(shared.pid)
        owned = _worker()
        Listener(VoiceActivity(EnergyVad()), owned, owns_asr=True).close()
        assert owned.pid is not None and not _alive(owned.pid)
    finally:
        shared.close()
    assert not _alive(shared.pid)
