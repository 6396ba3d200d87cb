"""The ALSA backend (pyalsaaudio): a microphone array in, a speaker out, one period each.

API::

    backend = AlsaBackend(160, capture_device="hw:CARD=Array,DEV=0", capture_channels=6,
                          capture_rate=48000, capture_format="S32_LE", mic_channels=(1, 2, 3, 4),
                          reference_channel=5, playback_device="default", playback_rate=48000,
                          playback_channels=2, buffer_periods=4, keep_mics=True)
    backend.open(); backend.read(); backend.write(pcm); backend.close()
    # read() -> Captured(mic, loopback, discontinuity, mics): mics is (160, 4) float32 here

Capture. The capture PCM is opened with N channels at the device's native rate and format
(S16_LE or S32_LE), one native period (``period_samples`` at 16 kHz, scaled to the rate)
per read. The configured microphone channels are picked (one) or averaged (several) to
mono, S32 is reduced to 16 bits, and the result is converted to 16 kHz by a streaming
polyphase resampler (:mod:`.polyphase`: ~2 ms delay, one output period per input
period; soxr's stream mode delivers 30 ms bursts at 10 ms periods) and re-cut into
exact 16 kHz periods. With ``reference_channel`` >= 0
that channel (a hardware loopback of the speaker) goes through the same path and is
returned as ``Captured.loopback``: the echo reference.

Microphone arrays. With ``keep_mics=True`` and several microphone channels, each period
also carries every microphone as ``Captured.mics``, ``(period_samples, mics)`` in the
order of ``mic_channels``: int16 as the device gave it where the capture is 16 kHz S16,
otherwise float32 on the int16 scale (S32 scaled like the mix, not rounded), converted
by one multichannel resampler of the same design as the mix's, so the columns keep the
same delay as each other, as ``mic`` and as the loopback. ``mic`` stays the mix, exactly
as without ``keep_mics``; one microphone channel gives no ``mics``.

Playback. Each 16 kHz mono period is converted to the playback PCM's rate and copied to
each of its channels (S16_LE). At open, half the buffer is pre-filled with silence so
the first periods do not underrun; that fixed delay is part of the echo path.

Errors. A name alsa-lib does not know raises :class:`DeviceNotFoundError` listing the
PCMs that exist. Overruns (pyalsaaudio's read returns ``-EPIPE``) and underruns (the
playback PCM found in the XRUN state, or a write failing with a broken pipe) are
counted in ``stats``, logged once per burst, and recovered without stopping. Any other
failure of an open device raises :class:`DeviceLostError`; the duplex loop closes and
reopens it with backoff.

``output_latency_samples`` is what ALSA reports as still queued in the playback buffer
(``buffer_size - avail()``; pyalsaaudio 0.11 has no ``delay()``), at 16 kHz.

``paced=False`` tells the duplex loop that reads return at once (alsa-lib ``file``
devices over a plain file), so it waits for its consumer instead of dropping frames.

Tests inject a PCM stand-in through ``pcm_factory``. ``alsaaudio.PCM`` cannot be
subclassed (the C type is not a base type), so the stand-in wraps a real PCM opened on
an alsa-lib virtual device and injects faults around it; see :class:`PcmLike`.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, Protocol

import numpy as np
import numpy.typing as npt

from edgevoice.audio.errors import AudioDeviceError, DeviceLostError, DeviceNotFoundError
from edgevoice.audio.frames import SAMPLE_RATE, MicPeriods, Pcm, unchanging
from edgevoice.audio.io.backend import AudioBackend, Captured
from edgevoice.audio.io.resample_polyphase import PolyphaseResampler
from edgevoice.audio.io.resample_soxr import FixedPeriods
from edgevoice.errors import require

_LOGGER = logging.getLogger(__name__)

FORMATS = {"S16_LE": "<i2", "S32_LE": "<i4"}
# snd_strerror texts: the device is not there (at open) or went away (while open).
_NOT_FOUND = (os.strerror(errno.ENOENT), os.strerror(errno.ENODEV))
_XRUN_TEXTS = (os.strerror(errno.EPIPE), os.strerror(errno.ESTRPIPE))
_BURST_QUIET_S = 2.0  # an xrun after this long without one starts a new burst
_MAX_FAILED_READS = 50  # overruns in a row before the device counts as lost


class PcmLike(Protocol):
    """The part of ``alsaaudio.PCM`` the backend uses (a real PCM, or a test stand-in)."""

    def read(self) -> tuple[int, bytes]: ...
    def write(self, data: bytes) -> int: ...
    def avail(self) -> int: ...
    def state(self) -> int: ...
    def info(self) -> dict[str, Any]: ...
    def drop(self) -> int: ...
    def close(self) -> None: ...


PcmFactory = Callable[..., PcmLike]


def alsa_module() -> Any:
    """pyalsaaudio, imported lazily (a clear error names the extra when missing)."""
    return require("alsaaudio", "alsa", "The ALSA audio backend")


def list_pcm_names(kind: str) -> list[str]:
    """PCM names alsa-lib advertises for ``kind`` ("capture" or "playback")."""
    alsa = alsa_module()
    pcm_type = alsa.PCM_CAPTURE if kind == "capture" else alsa.PCM_PLAYBACK
    try:
        return list(alsa.pcms(pcm_type))
    except alsa.ALSAAudioError:
        return []


def _is_not_found(message: str) -> bool:
    return any(text in message for text in _NOT_FOUND)


class _XrunLog:
    """Logs the first xrun of a burst and a summary when the burst is over."""

    def __init__(self, kind: str, device: str) -> None:
        self.kind = kind
        self.device = device
        self.in_burst = 0
        self.last = float("-inf")

    def note(self, total: int) -> None:
        now = time.monotonic()
        if now - self.last > _BURST_QUIET_S:
            if self.in_burst > 1:
                _LOGGER.info("%s burst on %s ended after %d", self.kind, self.device, self.in_burst)
            self.in_burst = 0
            _LOGGER.warning("%s on %s (recovered; %d so far)", self.kind, self.device, total)
        self.in_burst += 1
        self.last = now


class _PeriodRows:
    """Re-cut ``(samples, channels)`` pieces of any dtype into periods of ``period`` rows
    (:class:`FixedPeriods` for a microphone array's channels)."""

    def __init__(self, period: int) -> None:
        self.period = period
        self._pending: MicPeriods | None = None

    def push(self, rows: MicPeriods) -> list[MicPeriods]:
        data = rows if self._pending is None else np.concatenate([self._pending, rows])
        count = len(data) // self.period
        periods = [data[i * self.period : (i + 1) * self.period] for i in range(count)]
        rest = data[count * self.period :]
        self._pending = rest.copy() if len(rest) else None
        return periods

    @property
    def pending(self) -> int:
        return 0 if self._pending is None else len(self._pending)


class AlsaBackend(AudioBackend):
    """Duplex ALSA I/O at 16 kHz mono on the outside (see the module docstring)."""

    def __init__(
        self,
        period_samples: int,
        *,
        capture_device: str = "default",
        playback_device: str = "default",
        capture_channels: int = 1,
        capture_rate: int = 16000,
        capture_format: str = "S16_LE",
        mic_channels: Sequence[int] = (0,),
        reference_channel: int = -1,
        playback_rate: int = 16000,
        playback_channels: int = 1,
        buffer_periods: int = 4,
        prefill_periods: int | None = None,
        paced: bool = True,
        keep_mics: bool = False,
        pcm_factory: PcmFactory | None = None,
    ) -> None:
        super().__init__(period_samples)
        if capture_format not in FORMATS:
            raise ValueError(f"capture_format must be one of {sorted(FORMATS)}")
        if not mic_channels:
            raise ValueError("name at least one microphone channel")
        for channel in (*mic_channels, reference_channel):
            if channel >= capture_channels:
                raise ValueError(f"channel {channel} does not exist on a {capture_channels}-channel "
                                 "capture; channels count from 0")
        self.capture_device = capture_device
        self.playback_device = playback_device
        self.capture_channels = capture_channels
        self.capture_rate = capture_rate
        self.capture_format = capture_format
        self.mic_channels = tuple(mic_channels)
        self.reference_channel = reference_channel
        self.playback_rate = playback_rate
        self.playback_channels = playback_channels
        self.buffer_periods = max(2, buffer_periods)
        self.prefill_periods = self.buffer_periods // 2 if prefill_periods is None else prefill_periods
        self._pcm_factory = pcm_factory
        self._paced = paced
        self._capture: PcmLike | None = None
        self._playback: PcmLike | None = None
        self._dtype = np.dtype(FORMATS[capture_format])
        self._playback_buffer = 0  # frames, as negotiated
        self._actual_capture_rate = capture_rate
        self._actual_playback_rate = playback_rate
        self._ready: deque[tuple[Pcm, Pcm | None]] = deque()
        self._overrun_log = _XrunLog("capture overrun", capture_device)
        self._underrun_log = _XrunLog("playback underrun", playback_device)
        self._xrun_state = -1
        self._written_pcm: Pcm | None = None  # the last read-only period written, converted
        self._written_bytes = b""
        self._direct = False
        self._direct_bytes = 0
        # Every mic's period as well as the mix; a single mic is the mix already.
        self.keep_mics = keep_mics and len(self.mic_channels) > 1
        self._ready_mics: deque[MicPeriods] = deque()  # in step with _ready when keep_mics
        self._mic_index = np.array(self.mic_channels, dtype=np.intp)
        self._mic_scale = np.float32(1.0 / 65536.0 if self._dtype.itemsize == 4 else 1.0)
        self._mic_weights = self._weights(self.mic_channels)
        self._ref_weights = self._weights((max(reference_channel, 0),))
        self._init_pipeline()

    # --- the backend interface --------------------------------------------------------------

    @property
    def name(self) -> str:
        if self.capture_device == self.playback_device:
            return f"alsa:{self.capture_device}"
        return f"alsa:{self.capture_device}|{self.playback_device}"

    @property
    def paced(self) -> bool:
        """True for real cards; False for alsa-lib file devices, which return at once."""
        return self._paced

    @property
    def capture_period_frames(self) -> int:
        return max(1, round(self.period_samples * self.capture_rate / SAMPLE_RATE))

    @property
    def playback_period_frames(self) -> int:
        return max(1, round(self.period_samples * self.playback_rate / SAMPLE_RATE))

    def open(self) -> None:
        if self._capture is not None:
            return
        alsa = alsa_module()
        self._xrun_state = int(alsa.PCM_STATE_XRUN)
        factory: PcmFactory = self._pcm_factory or alsa.PCM
        capture = self._open_pcm(factory, alsa, alsa.PCM_CAPTURE, self.capture_device,
                                 rate=self.capture_rate, channels=self.capture_channels,
                                 fmt=getattr(alsa, f"PCM_FORMAT_{self.capture_format}"),
                                 period=self.capture_period_frames)
        try:
            playback = self._open_pcm(factory, alsa, alsa.PCM_PLAYBACK, self.playback_device,
                                      rate=self.playback_rate, channels=self.playback_channels,
                                      fmt=alsa.PCM_FORMAT_S16_LE, period=self.playback_period_frames)
        except BaseException:
            capture.close()
            raise
        self._capture, self._playback = capture, playback
        try:
            self._check_negotiated(capture.info(), playback.info())
        except BaseException:
            self.close()
            raise
        self._init_pipeline()
        silence = np.zeros(self.period_samples, np.int16)
        for _ in range(self.prefill_periods):
            self.write(silence)
        _LOGGER.info("ALSA open: capture %s %d ch %d Hz %s, playback %s %d ch %d Hz, "
                     "buffer %d frames", self.capture_device, self.capture_channels,
                     self._actual_capture_rate, self.capture_format, self.playback_device,
                     self.playback_channels, self._actual_playback_rate, self._playback_buffer)

    def read(self) -> Captured:
        captured = self.read_raw()
        if isinstance(captured, bytes):
            return Captured(np.frombuffer(captured, np.int16))
        return captured

    def read_raw(self) -> Captured | bytes:
        """One period: the device's bytes as they came when the capture is 16 kHz mono
        S16 (see :meth:`AudioBackend.read_raw`), otherwise converted as :meth:`read`."""
        capture = self._require(self._capture)
        failed = 0
        while not self._ready:
            try:
                count, data = capture.read()
            except Exception as err:
                self._raise_lost(err, self.capture_device, "capture")
            if count < 0 or (count == 0 and not data):
                # -EPIPE: an overrun; pyalsaaudio has already prepared the PCM again.
                self.stats.overruns += 1
                self._overrun_log.note(self.stats.overruns)
                failed += 1
                if failed >= _MAX_FAILED_READS:
                    raise DeviceLostError(f"the ALSA capture device {self.capture_device!r} returned "
                                          f"no audio {failed} times in a row; reconnecting")
                continue
            if self._direct and len(data) == self._direct_bytes and self._mic_periods.pending == 0:
                return data  # 16 kHz mono S16: the period is already what the front end takes
            self._push_capture(data)
        mic, loopback = self._ready.popleft()
        return Captured(mic, loopback, mics=self._ready_mics.popleft() if self._ready_mics else None)

    def _playback_bytes(self, pcm: Pcm) -> bytes:
        """One 16 kHz mono period as the playback PCM's interleaved S16 bytes (empty while
        the resampler fills)."""
        if pcm is self._written_pcm:
            return self._written_bytes  # the same read-only period again (idle silence)
        out = self._play_resampler.process(pcm)
        if len(out) == 0:
            return b""
        if self.playback_channels > 1:
            out = np.repeat(out[:, None], self.playback_channels, axis=1)
        data = out.astype("<i2", copy=False).tobytes()
        if self._play_resampler.passthrough and unchanging(pcm):
            # An array that owns its data and cannot change, converted without state:
            # the speaker's silent period. Kept so the idle loop converts it once.
            self._written_pcm, self._written_bytes = pcm, data
        return data

    def write(self, pcm: Pcm) -> None:
        playback = self._require(self._playback)
        data = self._playback_bytes(pcm)
        if not data:
            return
        try:
            if playback.state() == self._xrun_state:
                self._note_underrun()
            playback.write(data)
        except Exception as err:
            if any(text in str(err) for text in _XRUN_TEXTS):
                self._note_underrun()
                try:
                    playback.drop()  # drop() also prepares the PCM for the next write
                    playback.write(data)
                except Exception as again:
                    self._raise_lost(again, self.playback_device, "playback")
                return
            self._raise_lost(err, self.playback_device, "playback")

    def output_latency_samples(self) -> int:
        playback = self._playback
        if playback is None or self._playback_buffer <= 0:
            return 0
        try:
            avail = int(playback.avail())
        except Exception:
            return 0
        queued = min(max(self._playback_buffer - avail, 0), self._playback_buffer)
        return round(queued * SAMPLE_RATE / self._actual_playback_rate)

    def close(self) -> None:
        for pcm in (self._capture, self._playback):
            if pcm is not None:
                try:
                    pcm.close()
                except Exception:  # closing a vanished device fails; it is closed anyway
                    _LOGGER.debug("closing a PCM failed", exc_info=True)
        self._capture = None
        self._playback = None

    # --- internals ------------------------------------------------------------------------------

    def _init_pipeline(self) -> None:
        rate = self._actual_capture_rate
        self._mic_resampler = PolyphaseResampler(rate, SAMPLE_RATE)
        self._mic_periods = FixedPeriods(self.period_samples)
        self._ref_resampler = PolyphaseResampler(rate, SAMPLE_RATE)
        self._ref_periods = FixedPeriods(self.period_samples)
        self._play_resampler = PolyphaseResampler(SAMPLE_RATE, self._actual_playback_rate)
        self._ready.clear()
        self._ready_mics.clear()
        # Without keep_mics a pass-through: no filter table to design at each open.
        self._mics_resampler = PolyphaseResampler(rate if self.keep_mics else SAMPLE_RATE,
                                                  SAMPLE_RATE, channels=len(self.mic_channels))
        self._mics_periods = _PeriodRows(self.period_samples)
        # 16 kHz S16: the mics are the device's samples, untouched (int16).
        self._mics_as_captured = self._dtype.itemsize == 2 and rate == SAMPLE_RATE
        # One 16 kHz mono S16 channel and nothing else: read_raw() hands the bytes over as is.
        self._direct = (self.capture_channels == 1 and self._dtype.itemsize == 2
                        and self.reference_channel < 0 and rate == SAMPLE_RATE)
        self._direct_bytes = self.period_samples * 2
        self._written_pcm = None
        self._written_bytes = b""

    def _open_pcm(self, factory: PcmFactory, alsa: Any, pcm_type: int, device: str, *, rate: int,
                  channels: int, fmt: int, period: int) -> PcmLike:
        kind = "capture" if pcm_type == alsa.PCM_CAPTURE else "playback"
        try:
            return factory(pcm_type, mode=alsa.PCM_NORMAL, device=device, rate=rate,
                           channels=channels, format=fmt, periodsize=period,
                           periods=self.buffer_periods)
        except alsa.ALSAAudioError as err:
            message = str(err)
            if _is_not_found(message):
                known = list_pcm_names(kind)
                listing = ", ".join(known) if known else "none"
                raise DeviceNotFoundError(
                    f"no ALSA {kind} device called {device!r} ({message}). Devices that exist: "
                    f"{listing}. See them with 'edgevoice devices' and set audio.{kind}_device."
                ) from err
            raise AudioDeviceError(
                f"cannot open ALSA {kind} device {device!r} with {channels} channels at {rate} Hz "
                f"({message}). Check what it accepts with 'edgevoice devices'."
            ) from err

    def _check_negotiated(self, cap: dict[str, Any], play: dict[str, Any]) -> None:
        if int(cap.get("channels", self.capture_channels)) != self.capture_channels:
            raise AudioDeviceError(f"{self.capture_device} opened with {cap.get('channels')} "
                                   f"channels, not {self.capture_channels}")
        fmt = cap.get("format_name")
        if fmt is not None and fmt != self.capture_format:
            raise AudioDeviceError(f"{self.capture_device} captures {fmt}, not {self.capture_format}; "
                                   "set audio.capture_format to it")
        self._actual_capture_rate = int(cap.get("rate", self.capture_rate))
        self._actual_playback_rate = int(play.get("rate", self.playback_rate))
        self._playback_buffer = int(play.get("buffer_size", 0))
        if self._actual_capture_rate != self.capture_rate:
            _LOGGER.warning("%s runs at %d Hz, not %d Hz: converting from its rate",
                            self.capture_device, self._actual_capture_rate, self.capture_rate)

    def _push_capture(self, data: bytes) -> None:
        frames = np.frombuffer(data, dtype=self._dtype)
        frames = frames[: len(frames) - len(frames) % self.capture_channels]
        frames = frames.reshape(-1, self.capture_channels)
        mic = self._mix(frames, self._mic_weights, self.mic_channels)
        self._push(self._mic_resampler.process(mic), self._mic_periods, loopback=False)
        if self.reference_channel >= 0:
            ref = self._mix(frames, self._ref_weights, (self.reference_channel,))
            self._push(self._ref_resampler.process(ref), self._ref_periods, loopback=True)
        if self.keep_mics:
            self._push_mics(frames)

    def _push_mics(self, frames: npt.NDArray[Any]) -> None:
        picked = frames[:, self._mic_index]  # a copy, columns in mic_channels' order
        if self._mics_as_captured:
            mics: MicPeriods = picked
        else:
            scaled = picked.astype(np.float32)
            if self._dtype.itemsize == 4:
                scaled *= self._mic_scale  # a power of two: exact, like the mix's weights
            mics = self._mics_resampler.process_float(scaled)
        # The same input lengths as the mix, so the same periods in the same order.
        if self._mics_periods.pending == 0 and len(mics) == self.period_samples:
            self._ready_mics.append(mics)
        else:
            self._ready_mics.extend(self._mics_periods.push(mics))

    def _push(self, pcm: Pcm, periods: FixedPeriods, *, loopback: bool) -> None:
        # The usual case: one native period gives exactly one 16 kHz period.
        ready = [pcm] if periods.pending == 0 and len(pcm) == self.period_samples else periods.push(pcm)
        if not loopback:
            self._ready.extend((period, None) for period in ready)
            return
        # Both streams see the same input lengths, so they stay in lockstep.
        start = len(self._ready) - len(ready)
        for offset, period in enumerate(ready):
            mic_period, _ = self._ready[start + offset]
            self._ready[start + offset] = (mic_period, period)

    def _mix(self, frames: npt.NDArray[Any], weights: npt.NDArray[np.float32],
             channels: tuple[int, ...]) -> npt.NDArray[Any]:
        """Mono from the capture frames: one 16-bit channel as is (bit-exact), otherwise
        the average of the channels (and S32 scaled to 16 bits) as float32."""
        if len(channels) == 1 and self._dtype.itemsize == 2:
            return np.ascontiguousarray(frames[:, channels[0]])
        mixed: npt.NDArray[np.float32] = frames.astype(np.float32) @ weights
        return mixed

    def _weights(self, channels: tuple[int, ...]) -> npt.NDArray[np.float32]:
        weights = np.zeros(self.capture_channels, dtype=np.float32)
        scale = 1.0 / 65536.0 if self._dtype.itemsize == 4 else 1.0
        weights[list(channels)] = scale / len(channels)
        return weights

    def _note_underrun(self) -> None:
        self.stats.underruns += 1
        self._underrun_log.note(self.stats.underruns)

    def _require(self, pcm: PcmLike | None) -> PcmLike:
        if pcm is None:
            raise DeviceLostError(f"{self.name} is not open")
        return pcm

    def _raise_lost(self, err: Exception, device: str, kind: str) -> NoReturn:
        raise DeviceLostError(
            f"the ALSA {kind} device {device!r} stopped working ({err}); reconnecting"
        ) from err
