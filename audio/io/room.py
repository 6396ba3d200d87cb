"""The simulated room: a duplex audio backend with a virtual clock, for tests and the demo.

What the microphone hears is computed, period by period, from what the speaker played::

    mic = echo_gain * (speaker ⊛ impulse_response, delayed by echo_delay) + talkers + noise

API (everything takes plain parameters; :func:`edgevoice.device.assembly.audio_io.open_backend`
builds one from the ``[room]`` config section)::

    room = SimulatedRoom(period_samples=160, speed=0.0, echo_gain_db=-6.0,
                         echo_delay_ms=30.0, rt60_s=0.25, noise_dbfs=-70.0, seed=0,
                         record_dir="/tmp/run")
    room.add_talker(pcm, start_s=1.5, gain_db=0.0)   # any thread, any time
    room.now_s                                        # audio time of the mic stream
    room.open(); room.read(); room.write(pcm); room.close()
    room.recording_paths()                            # {"mic": Path, ...} after close

Clock. ``speed`` 1.0 paces :meth:`read` at real time (the demo); ``speed`` 0 runs as
fast as the consumer goes (tests) and :attr:`paced` is then False, so the duplex loop
waits for its consumer instead of dropping frames. ``duration_s`` ends the input with
:class:`EndOfInput` after that much audio.

Timeline. Period ``k`` read from the mic covers samples ``[kP, (k+1)P)`` of the room's
clock. The room's loudspeaker has one period of buffer: the period written after read
``k`` leaves the loudspeaker during ``[(k+1)P, (k+2)P)``, so
:meth:`output_latency_samples` is ``P`` and the echo of written period ``k`` reaches
the mic at ``(k+1)P + delay``. The echo path measured between the recorded ``speaker``
stream (emission time) and ``mic`` is exactly the configured delay and gain; between
``reference`` (the written frames, as the duplex loop hands them to the echo canceller)
and ``mic`` it is the delay plus one period.

Echo path. The impulse response comes from a WAV file or, by default, a synthetic
room: a direct path followed by exponentially decaying noise with the given RT60
(``rt60_s`` 0 gives a pure delay). It is scaled to unit energy, so ``echo_gain_db`` is
the level of the echo relative to the speaker signal (white noise in at X dBFS comes
back at X + gain dBFS). Convolution is FFT overlap-add, skipped for silent periods.

Talkers and noise. :meth:`add_talker` schedules 16 kHz PCM (or a WAV path) at an audio
time; the part of it scheduled before the current audio time is skipped. Noise is white
at ``noise_dbfs``. The same seed, configuration, talkers and written frames give the
same bytes.

Recordings (``record_dir``): ``mic.wav``, ``reference.wav`` (what was written, by
period), ``speaker.wav`` (what left the loudspeaker, on the room's clock) and
``near_end.wav`` (the talkers alone: the clean target for echo cancellation tests).

Microphone array (``geometry``): the room then simulates each of the array's mics
(:mod:`.room_array`: per-mic direct paths, diffuse reverberation and noise), talkers stand
at an azimuth (``add_talker(..., azimuth_deg=...)``, else ``talker_azimuth_deg``), the
loudspeaker at ``speaker_position_m`` in the array's frame, and :meth:`read` returns
``Captured(mic=<the mics' average>, mics=<(period, mics) int16>)``. ``near_end.wav`` is
then the talkers as the average of the mics hears them, and ``mics.wav`` records every
mic. Without a geometry nothing of this applies and the bytes are what they always were.
"""

from __future__ import annotations

import logging
import threading
import time
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from edgevoice.audio.array.geometry import ArrayGeometry
from edgevoice.audio.errors import AudioError, EndOfInput
from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.io.backend import AudioBackend, Captured
from edgevoice.audio.io.room_array import (
    DEFAULT_SPEAKER_POSITION_M,
    EARLY_REFLECTIONS,
    TAIL_ONSET_S,
    TAIL_SCALE,
    ArrayAcoustics,
    Position,
)
from edgevoice.audio.io.wav import read_wav

_LOGGER = logging.getLogger(__name__)

Float = npt.NDArray[np.float64]

RECORDED_STREAMS = ("mic", "reference", "speaker", "near_end")


def synthetic_impulse_response(rt60_s: float, seed: int, rate: int = SAMPLE_RATE) -> Float:
    """A small room: a direct path, a few early reflections, then decaying noise.

    The energy decays by 60 dB over ``rt60_s``; the direct path is the strongest tap
    (so the echo's bulk delay is where cross-correlation peaks). Unit energy."""
    if rt60_s <= 0:
        return np.ones(1, dtype=np.float64)
    rng = np.random.default_rng([seed, 0x1A])
    length = max(2, int(rt60_s * rate))
    t = np.arange(length) / rate
    # Amplitude envelope: -60 dB of energy at rt60 is -60 dB of amplitude too (20 log10).
    envelope = np.power(10.0, -3.0 * t / rt60_s)
    tail = rng.standard_normal(length) * envelope * TAIL_SCALE
    onset = int(TAIL_ONSET_S * rate)  # reverberation builds up after the direct sound
    tail[:onset] *= np.linspace(0.0, 1.0, onset, endpoint=False) if onset else 1.0
    ir = tail
    ir[0] = 1.0
    for delay_ms, gain in EARLY_REFLECTIONS:
        index = int(delay_ms * rate / 1000)
        if index < length:
            ir[index] += gain
    out: Float = ir / np.sqrt(np.sum(ir * ir))
    return out


def load_impulse_response(path: str | Path) -> Float:
    """An impulse response from a WAV file (mixed to mono, 16 kHz), scaled to unit energy."""
    pcm, _ = read_wav(path)
    ir = pcm.astype(np.float64)
    energy = float(np.sum(ir * ir))
    if energy <= 0:
        raise AudioError(f"{path}: the impulse response is silent; give a recorded or "
                         "synthetic room response")
    out: Float = ir / np.sqrt(energy)
    return out


@dataclass(slots=True, eq=False)
class _Talker:
    start: int  # room clock sample of its first sample
    signal: Float  # already scaled by its gain; (samples, mics) in an array room


class _OverlapAdd:
    """Streaming FFT convolution of fixed-size blocks with one impulse response."""

    def __init__(self, ir: Float, block: int) -> None:
        self.block = block
        self.ir_len = len(ir)
        size = block + len(ir) - 1
        self.nfft = 1 << (size - 1).bit_length()
        self.spectrum = np.fft.rfft(ir, self.nfft)
        self.direct = len(ir) == 1
        self.gain = float(ir[0])

    def convolve(self, block: Float) -> Float:
        """Full convolution of one block (length ``block + ir_len - 1``)."""
        if self.direct:
            out: Float = block * self.gain
            return out
        full = np.fft.irfft(np.fft.rfft(block, self.nfft) * self.spectrum, self.nfft)
        result: Float = full[: self.block + self.ir_len - 1]
        return result


class _Recorder:
    """Streams int16 WAVs to a folder while the room runs: mono, and ``mics.wav`` with
    one channel per mic of an array."""

    def __init__(self, folder: Path, mic_count: int = 1) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        channels = {name: 1 for name in RECORDED_STREAMS}
        if mic_count > 1:
            channels["mics"] = mic_count
        self.paths = {name: folder / f"{name}.wav" for name in channels}
        self._handles: dict[str, wave.Wave_write] = {}
        for name, path in self.paths.items():
            handle = wave.open(str(path), "wb")  # noqa: SIM115 - closed in close()
            handle.setnchannels(channels[name])
            handle.setsampwidth(2)
            handle.setframerate(SAMPLE_RATE)
            self._handles[name] = handle

    def write(self, name: str, pcm: Pcm) -> None:
        # (samples, channels) in C order is interleaved frames
        self._handles[name].writeframes(np.ascontiguousarray(pcm, dtype="<i2").tobytes())

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()


def _to_pcm(samples: Float) -> Pcm:
    out: Pcm = np.clip(np.rint(samples), -32768, 32767).astype(np.int16)
    return out


class SimulatedRoom(AudioBackend):
    """A room with a loudspeaker, a microphone (or an array), an echo path, talkers and noise."""

    def __init__(
        self,
        period_samples: int,
        *,
        speed: float = 1.0,
        echo_gain_db: float = -6.0,
        echo_delay_ms: float = 30.0,
        impulse_response: str | Path | npt.NDArray[np.floating] | None = None,
        rt60_s: float = 0.25,
        noise_dbfs: float = -70.0,
        seed: int = 0,
        record_dir: str | Path | None = None,
        duration_s: float | None = None,
        geometry: ArrayGeometry | None = None,
        talker_azimuth_deg: float = 30.0,
        speaker_position_m: Position = DEFAULT_SPEAKER_POSITION_M,
        talker_drr_db: float = 6.0,
    ) -> None:
        super().__init__(period_samples)
        if speed < 0:
            raise ValueError("speed must be >= 0 (0: as fast as possible)")
        self.speed = float(speed)
        self.echo_gain_db = float(echo_gain_db)
        self.echo_delay_samples = round(echo_delay_ms * SAMPLE_RATE / 1000.0)
        self.noise_dbfs = float(noise_dbfs)
        self.seed = int(seed)
        self.record_dir = Path(record_dir) if record_dir else None
        self.duration_samples = None if duration_s is None else round(duration_s * SAMPLE_RATE)
        if impulse_response is None:
            ir = synthetic_impulse_response(rt60_s, self.seed)
        elif isinstance(impulse_response, (str, Path)):
            ir = load_impulse_response(impulse_response)
        else:
            ir = np.asarray(impulse_response, dtype=np.float64)
            ir = ir / np.sqrt(float(np.sum(ir * ir)))
        self.impulse_response: Float = ir
        self._echo_gain = float(10.0 ** (self.echo_gain_db / 20.0))
        self._noise_rms = 32768.0 * float(10.0 ** (self.noise_dbfs / 20.0))
        self._conv = _OverlapAdd(ir, period_samples)
        self.geometry = geometry
        self.talker_azimuth_deg = float(talker_azimuth_deg)
        self._array = None if geometry is None else ArrayAcoustics(
            geometry, period_samples=period_samples, rate=SAMPLE_RATE,
            echo_delay_samples=self.echo_delay_samples, echo_gain=self._echo_gain, rt60_s=rt60_s,
            impulse_response=None if impulse_response is None else ir,
            noise_rms=self._noise_rms, talker_drr_db=talker_drr_db,
            speaker_position_m=speaker_position_m, seed=self.seed,
        )
        self._lock = threading.Lock()
        self._talkers: list[_Talker] = []
        self._recorder: _Recorder | None = None
        self._recording_paths: dict[str, Path] = {}
        self._open = False
        self._reset()

    def _reset(self) -> None:
        period = self.period_samples
        # Echo arriving at the mic, indexed from the start of the next period to read.
        self._echo = np.zeros(period + self.echo_delay_samples + len(self.impulse_response) + period)
        self._mic_pos = 0  # room clock: samples of mic produced
        self._pending_write: Pcm | None = None  # written, emitted during the next period
        self._rng = np.random.default_rng([self.seed, 0x0E])
        self._wall_start: float | None = None
        if self._array is not None:
            self._array.reset()

    # --- the backend interface ----------------------------------------------------------

    @property
    def name(self) -> str:
        if self.geometry is not None:
            return f"simulated(speed={self.speed:g}, seed={self.seed}, array={self.geometry.name})"
        return f"simulated(speed={self.speed:g}, seed={self.seed})"

    @property
    def paced(self) -> bool:
        return self.speed > 0

    @property
    def now_s(self) -> float:
        """Audio time: seconds of microphone signal produced so far."""
        return self._mic_pos / SAMPLE_RATE

    @property
    def now_samples(self) -> int:
        return self._mic_pos

    def open(self) -> None:
        if self._open:
            return
        self._reset()
        if self.record_dir is not None:
            mic_count = 1 if self.geometry is None else self.geometry.mic_count
            self._recorder = _Recorder(self.record_dir, mic_count)
            self._recording_paths = dict(self._recorder.paths)
        self._open = True
        _LOGGER.info("simulated room open: echo %.1f dB after %.1f ms, IR %d taps, "
                     "noise %.0f dBFS, speed %g", self.echo_gain_db,
                     self.echo_delay_samples * 1000 / SAMPLE_RATE, len(self.impulse_response),
                     self.noise_dbfs, self.speed)
        if self.geometry is not None:
            _LOGGER.info("simulated array %s: %d mics, talkers at %.0f° by default",
                         self.geometry.name, self.geometry.mic_count, self.talker_azimuth_deg)

    def close(self) -> None:
        self._open = False
        if self._recorder is not None:
            self._recorder.close()
            self._recorder = None

    def recording_paths(self) -> dict[str, Path]:
        """The WAV files recorded (complete once the room is closed)."""
        return dict(self._recording_paths)

    def output_latency_samples(self) -> int:
        # The period written last leaves the loudspeaker during the next period.
        return self.period_samples if self._pending_write is not None else 0

    def add_talker(self, pcm: Pcm | str | Path, start_s: float | None = None,
                   gain_db: float = 0.0, *, after_s: float | None = None,
                   azimuth_deg: float | None = None) -> float:
        """Schedule a near-end talker: 16 kHz mono int16 PCM (or a WAV file) starting at
        audio time ``start_s``, or ``after_s`` from the audio time it is scheduled at
        (neither: now). Returns its start (s). Safe from any thread at any time.

        With an array, the talker stands at ``azimuth_deg`` (None: the room's
        ``talker_azimuth_deg``); its start is when its direct sound reaches the array's
        centre. A single mic hears no direction: there the azimuth is ignored.

        ``after_s`` is read under the room's lock: a caller that read :attr:`now_s` and
        then scheduled could lose a second of audio between the two in a room running
        faster than real time, and the talker's first words with it."""
        if start_s is not None and after_s is not None:
            raise ValueError("give the talker's start_s or its after_s, not both")
        if isinstance(pcm, (str, Path)):
            pcm, _ = read_wav(pcm)
        signal = np.asarray(pcm, dtype=np.float64) * float(10.0 ** (gain_db / 20.0))
        lead = 0
        if self._array is not None:
            # the per-mic convolution runs on the caller's thread, outside the lock
            azimuth = self.talker_azimuth_deg if azimuth_deg is None else float(azimuth_deg)
            lead, signal = self._array.talker_image(signal, azimuth)
        with self._lock:
            now = self._mic_pos
            if after_s is not None:
                start = now + round(after_s * SAMPLE_RATE)
            else:
                start = now if start_s is None else round(start_s * SAMPLE_RATE)
            if start < now:
                _LOGGER.debug("talker scheduled %d samples in the past: its start is skipped",
                              now - start)
            self._talkers.append(_Talker(start - lead, signal))
        return start / SAMPLE_RATE

    def read(self) -> Captured:
        if not self._open:
            raise AudioError("the simulated room is not open; call open() first")
        period = self.period_samples
        if self.duration_samples is not None and self._mic_pos + period > self.duration_samples:
            raise EndOfInput(f"the simulated room's script ended at {self.now_s:.2f} s")
        self._pace()
        start = self._mic_pos
        # The period written last is emitted now, during [start, start + period).
        emitted = self._pending_write
        self._pending_write = None
        self._emit(emitted)
        if self._array is not None:
            return self._read_array(start, emitted)
        near = self._near_end(start, period)
        mic = self._echo[:period] + near
        if self._noise_rms > 0:
            mic = mic + self._rng.standard_normal(period) * self._noise_rms
        self._echo = np.roll(self._echo, -period)
        self._echo[-period:] = 0.0
        with self._lock:
            self._mic_pos = start + period
        mic_pcm = _to_pcm(mic)
        if self._recorder is not None:
            self._recorder.write("mic", mic_pcm)
            self._recorder.write("near_end", _to_pcm(near))
            self._recorder.write("speaker", emitted if emitted is not None
                                 else np.zeros(period, np.int16))
        return Captured(mic_pcm)

    def write(self, pcm: Pcm) -> None:
        if not self._open:
            raise AudioError("the simulated room is not open; call open() first")
        if len(pcm) != self.period_samples:
            raise ValueError(f"write one period of {self.period_samples} samples, got {len(pcm)}")
        if self._pending_write is not None:
            # Two writes without a read between: the first one is emitted right away
            # (the loudspeaker buffer holds one period).
            self._emit_late()
        self._pending_write = np.array(pcm, dtype=np.int16)
        if self._recorder is not None:
            self._recorder.write("reference", self._pending_write)

    def _emit_late(self) -> None:
        emitted = self._pending_write
        self._pending_write = None
        self._emit(emitted)

    # --- internals -------------------------------------------------------------------------

    def _emit(self, emitted: Pcm | None) -> None:
        """``emitted`` leaves the loudspeaker now: its echo joins what the mic will hear."""
        if emitted is None or not np.any(emitted):
            return
        if self._array is not None:
            self._array.emit(emitted.astype(np.float64))
            return
        echo = self._conv.convolve(emitted.astype(np.float64)) * self._echo_gain
        offset = self.echo_delay_samples
        self._echo[offset : offset + len(echo)] += echo

    def _read_array(self, start: int, emitted: Pcm | None) -> Captured:
        assert self._array is not None
        period = self.period_samples
        near = self._near_end(start, period)
        mics = self._array.take_echo() + near + self._array.take_noise()
        with self._lock:
            self._mic_pos = start + period
        # each mic clips on its own converter; the mix is what a one-mic device hears
        mics_pcm = _to_pcm(mics)
        mic_pcm = _to_pcm(mics_pcm.mean(axis=1))
        if self._recorder is not None:
            self._recorder.write("mic", mic_pcm)
            self._recorder.write("mics", mics_pcm)
            self._recorder.write("near_end", _to_pcm(near.mean(axis=1)))
            self._recorder.write("speaker", emitted if emitted is not None
                                 else np.zeros(period, np.int16))
        return Captured(mic_pcm, mics=mics_pcm)

    def _near_end(self, start: int, period: int) -> Float:
        out = np.zeros((period, self._array.mic_count) if self._array is not None else period)
        end = start + period
        with self._lock:
            talkers = list(self._talkers)
        finished = []
        for talker in talkers:
            t_end = talker.start + len(talker.signal)
            if t_end <= start:
                finished.append(talker)
                continue
            if talker.start >= end:
                continue
            lo = max(start, talker.start)
            hi = min(end, t_end)
            out[lo - start : hi - start] += talker.signal[lo - talker.start : hi - talker.start]
        if finished:
            with self._lock:
                gone = {id(t) for t in finished}
                self._talkers = [t for t in self._talkers if id(t) not in gone]
        return out

    def _pace(self) -> None:
        if self.speed <= 0:
            return
        now = time.monotonic()
        if self._wall_start is None:
            self._wall_start = now
            return
        due = self._wall_start + (self._mic_pos + self.period_samples) / SAMPLE_RATE / self.speed
        if due > now:
            time.sleep(due - now)
        elif now - due > 1.0:
            # The consumer stalled for a long time: rebase instead of racing to catch up.
            self._wall_start = now - (self._mic_pos + self.period_samples) / SAMPLE_RATE / self.speed
