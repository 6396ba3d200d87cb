"""The running daemon's own diagnostics, for the fleet commands ``doctor``,
``aec_selftest`` and ``logs`` (:mod:`edgevoice.device.mqtt.remote`).

- ``doctor`` runs the CLI's checks, except that the audio check reads the live duplex
  loop instead of opening the device (the daemon holds it).
- ``aec_selftest`` plays the CLI's probe through the running speaker and records what
  the duplex loop hands the front end (microphone and reference, one clock), through a
  :class:`FrameTap` the conversation reads its frames from; the listener is muted
  meanwhile so the probe is not taken for speech. Only when the device is idle.
- ``logs`` reads the in-memory ring of the log, which the secret filter covers.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, DuplexFrame
from edgevoice.device.doctor import CheckResult, CheckStatus, DoctorOptions, failed, run_checks
from edgevoice.device.mqtt.remote import BusyError
from edgevoice.device.runtime.state import State
from edgevoice.device.system.logs import recent_log
from edgevoice.errors import EdgeVoiceError

if TYPE_CHECKING:
    from edgevoice.device.runtime.daemon import Daemon
    from edgevoice.device.runtime.frontend import FrameSource

_LOGGER = logging.getLogger(__name__)

PROBE_S = 4.0
PROBE_DBFS = -20.0
LEAD_IN_S = 0.5
TAIL_S = 0.5


class FrameTap:
    """Wraps the duplex loop's ``take`` for the conversation; while a recording is
    armed, keeps a copy of every frame taken (on the front-end thread)."""

    def __init__(self, source: FrameSource) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._frames: list[DuplexFrame] | None = None
        self._wanted = 0
        self._done: tuple[asyncio.AbstractEventLoop, asyncio.Future[list[DuplexFrame]]] | None = None
        # Mean square of the last second of microphone frames: the speech level that
        # wake-word arbitration weighs the wake score by.
        self._powers: deque[float] = deque(maxlen=100)

    def take(self, timeout: float, at_least: int = 1) -> list[DuplexFrame] | None:
        frames = self._source.take(timeout, at_least)
        if frames:
            powers = [float(np.mean(np.square(np.asarray(f.mic, dtype=np.float32)))) / 2.0 ** 30
                      for f in frames]
            with self._lock:
                self._powers.extend(powers)
            with self._lock:
                if self._frames is not None:
                    self._frames.extend(frames)
                    if len(self._frames) >= self._wanted and self._done is not None:
                        loop, future = self._done
                        taken, self._frames, self._done = self._frames, None, None
                        loop.call_soon_threadsafe(_resolve, future, taken)
        return frames

    def speech_level(self) -> float:
        """RMS (0..1 of full scale) of the loudest 30 % of the last second's frames:
        the wake word, not the silence after it."""
        with self._lock:
            powers = sorted(self._powers)
        if not powers:
            return 0.0
        loud = powers[int(len(powers) * 0.7):]
        return float(np.sqrt(np.mean(loud)))

    def record(self, periods: int) -> asyncio.Future[list[DuplexFrame]]:
        """The next ``periods`` frames the conversation takes (or more: whole batches)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[DuplexFrame]] = loop.create_future()
        with self._lock:
            if self._frames is not None:
                raise BusyError("a recording is already running")
            self._frames, self._wanted, self._done = [], periods, (loop, future)
        return future

    def cancel(self) -> None:
        with self._lock:
            self._frames, self._done = None, None


def _resolve(future: asyncio.Future[list[DuplexFrame]], frames: list[DuplexFrame]) -> None:
    if not future.done():
        future.set_result(frames)


def live_audio_check(daemon: Daemon) -> CheckResult:
    """The audio check of a running daemon: the duplex loop, not a second open."""
    audio = daemon.config.audio
    duplex = daemon.duplex
    data: dict[str, Any] = {"backend": audio.backend, "capture_device": audio.capture_device,
                            "playback_device": audio.playback_device, "live": True}
    if duplex is None or not duplex.running:
        return CheckResult("audio", CheckStatus.FAIL, f"{audio.backend}: the duplex loop is not running",
                           "see the daemon's log for the audio device error", data)
    stats = duplex.stats.as_dict()
    data["stats"] = stats
    xruns = int(stats.get("overruns", 0)) + int(stats.get("underruns", 0))
    detail = (f"{audio.backend}: running, {stats.get('frames', 0)} periods, {xruns} xruns, "
              f"{stats.get('dropped', 0)} dropped, device lost {stats.get('device_lost', 0)} times")
    if stats.get("dropped", 0) or stats.get("device_lost", 0):
        return CheckResult("audio", CheckStatus.WARN, detail,
                           "the front end fell behind or the device went away: check CPU load and the "
                           "USB/I2S connection", data)
    return CheckResult("audio", CheckStatus.OK, detail, data=data)


async def run_doctor(daemon: Daemon, only: tuple[str, ...]) -> dict[str, Any]:
    """``edgevoice doctor --json``'s object, from inside the daemon."""
    options = DoctorOptions(client_id=f"edgevoice-doctor-{daemon.device_id}"[:64])
    others = tuple(name for name in only if name != "audio")
    results = {r.name: r for r in await run_checks(daemon.config, only=others, options=options)}
    if "audio" in only:
        results["audio"] = live_audio_check(daemon)
    ordered = [results[name] for name in only]
    return {"ok": not failed(ordered), "checks": [r.as_dict() for r in ordered]}


async def run_live_selftest(daemon: Daemon, tap: FrameTap) -> dict[str, Any]:
    """``edgevoice aec-selftest --json``'s object, measured through the running loop."""
    from edgevoice.audio.aec.selftest import analyse, probe_signal
    from edgevoice.device.assembly.echo import build_canceller

    conversation, speaker = daemon.conversation, daemon.speaker
    if conversation is None or speaker is None:
        raise BusyError("the device is still starting; try again in a moment")
    if conversation.state is not State.IDLE or speaker.is_playing():
        raise BusyError(f"the device is {conversation.state}; the self-test runs only when it is idle")
    period = speaker.period_samples
    lead_in = int(LEAD_IN_S * SAMPLE_RATE)
    probe = probe_signal(PROBE_S, PROBE_DBFS)
    tail = np.zeros(int(TAIL_S * SAMPLE_RATE), np.int16)
    played = np.concatenate((np.zeros(lead_in, np.int16), probe, tail))
    # The probe starts after whatever the loop has queued towards the device: record the
    # queue's worth more.
    queued = daemon.config.audio.queue_periods
    periods = len(played) // period + queued + 10
    await conversation.set_muted(True)
    try:
        recording = tap.record(periods)
        speaker.enqueue(played, utterance_id="aec-selftest", kind="earcon")
        try:
            async with asyncio.timeout(periods * period / SAMPLE_RATE + 10.0):
                frames = await recording
        finally:
            tap.cancel()
            speaker.drop("aec-selftest")
    finally:
        await conversation.set_muted(False)
    mic = np.concatenate([np.asarray(f.mic, np.int16).reshape(-1) for f in frames])
    ref = np.concatenate([np.asarray(f.reference, np.int16).reshape(-1) for f in frames])
    nonzero = np.flatnonzero(ref)
    if len(nonzero) == 0:
        raise EdgeVoiceError("the probe never reached the speaker; check [audio] playback_device",
                             code="aec_selftest_failed")
    start = int(nonzero[0]) - lead_in  # the played buffer's first (silent) sample
    start = max(0, start)
    first = int(nonzero[0]) - start
    canceller = build_canceller(daemon.config.aec)
    try:
        result = await asyncio.to_thread(analyse, mic[start:], ref[start:], canceller, lead_in=first)
    finally:
        canceller.close()
    return result.as_dict()


def read_logs(lines: int) -> dict[str, Any]:
    ring = recent_log()
    if ring is None:
        raise EdgeVoiceError("this daemon keeps no log in memory (it was started without the CLI's "
                             "logging); read journalctl -u edgevoice on the device", code="logs_unavailable")
    return {"lines": ring.tail(lines)}
