"""The simulated room's acoustics around a microphone array: per-mic talker, echo and
noise paths. Pure numpy, no clock and no I/O; :class:`~edgevoice.audio.io.room.SimulatedRoom`
drives it when it is given an :class:`~edgevoice.audio.array.geometry.ArrayGeometry`.

What mic ``m`` hears::

    mic_m = echo_gain * (speaker ⊛ echo_ir_m, delayed by echo_delay + δ_m)
            + Σ talkers ⊛ talker_ir_m(azimuth) + diffuse_noise_m

Direct paths are coherent: a talker's sound reaches each mic at the far-field delay
:meth:`ArrayGeometry.delays_s` gives for its azimuth (relative to the array's centre), the
loudspeaker's at its near-field distance from each mic (``δ_m``: the difference between
that mic's distance and the centre's). Fractional delays are Kaiser-windowed sincs
(:func:`fractional_delay_taps`), band-limited and exact to well under a hundredth of a
sample, never rounded to whole samples.

Reverberation is diffuse: every mic gets its own tail, drawn so that two mics ``d`` apart
have the coherence of a spherically isotropic field, ``sinc(2 f d / c)`` (correlated at
low frequencies, nearly independent above ``c / 2d``), as a real room's late sound is. The
echo's impulse responses are today's synthetic family (direct path, three early
reflections, exponentially decaying tail of the given RT60) with those per-mic tails; a
recorded impulse response is used for every mic as it is, only delayed per mic (one
recording cannot be decorrelated honestly). A talker's responses are its direct path plus
a diffuse tail of the same RT60, ``talker_drr_db`` below it. Every response is scaled to
unit energy per mic, so gains mean what they mean for the single-mic room: a talker at
``gain_db`` and the echo at ``echo_gain_db`` arrive at that level on every mic (the echo's
near-field level differences between mics are not modelled).

Noise is diffuse too, with the same sinc coherence, at ``noise_dbfs`` on each mic: frames
of white noise shaped per frequency bin by the coherence matrix's square root, overlap-added
with square-root Hann windows (their squares sum to one, so the level is steady).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from edgevoice.audio.array.geometry import SPEED_OF_SOUND_M_S, ArrayGeometry

Float = npt.NDArray[np.float64]
Position = tuple[float, float, float]

# The synthetic room's impulse response family, shared with the single-mic room.
EARLY_REFLECTIONS: tuple[tuple[float, float], ...] = ((3.1, 0.5), (5.3, -0.4), (7.9, 0.3))  # (ms, gain)
TAIL_SCALE = 0.25  # tail amplitude relative to the direct path, before the decay
TAIL_ONSET_S = 0.002  # reverberation builds up after the direct sound

# The loudspeaker sits near the array: 5 cm behind its centre and 2 cm below, so each mic
# hears it at a slightly different delay.
DEFAULT_SPEAKER_POSITION_M: Position = (-0.05, 0.0, -0.02)

SINC_HALF_TAPS = 32  # a fractional delay looks this many samples ahead and behind
_KAISER_BETA = 8.0  # ~80 dB stopband; flat to ~7.3 kHz at 16 kHz with 32 taps a side
_NOISE_FRAME = 1024


def fractional_delay_taps(positions: Float, length: int, half: int = SINC_HALF_TAPS) -> Float:
    """(length, N): column ``m`` is a unit impulse at sample ``positions[m]`` (fractional),
    band-limited: a sinc under a Kaiser window of ``half`` samples each side."""
    offset = np.arange(length, dtype=np.float64)[:, None] - np.asarray(positions, np.float64)[None, :]
    inside = np.clip(1.0 - (offset / half) ** 2, 0.0, None)
    window = np.where(np.abs(offset) < half, np.i0(_KAISER_BETA * np.sqrt(inside)) / np.i0(_KAISER_BETA), 0.0)
    taps: Float = np.sinc(offset) * window
    return taps


def diffuse_mixing(geometry: ArrayGeometry, size: int, rate: int) -> Float:
    """(bins, N, N) real symmetric square roots of the spherically isotropic coherence
    ``sinc(2 f d_ij / c)`` on the ``rfft`` grid of ``size`` samples."""
    points = geometry.centred()
    distance = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=-1)
    freqs = np.fft.rfftfreq(size, 1.0 / rate)
    coherence = np.sinc(2.0 * freqs[:, None, None] * distance[None, :, :] / SPEED_OF_SOUND_M_S)
    values, vectors = np.linalg.eigh(coherence)
    # The symmetric root (not V·sqrt(Λ)) varies smoothly across bins: no sign flips of
    # eigenvectors turning into odd temporal structure.
    roots = np.sqrt(np.clip(values, 0.0, None))
    mixing: Float = np.einsum("fik,fk,fjk->fij", vectors, roots, vectors)
    return mixing


def diffuse_field(white: Float, mixing: Float) -> Float:
    """Give (length, N) independent white noise the coherence ``mixing`` was made for."""
    spectrum = np.fft.rfft(white, axis=0)
    shaped = np.einsum("fij,fj->fi", mixing, spectrum)
    field: Float = np.fft.irfft(shaped, n=len(white), axis=0)
    return field


def _decay(length: int, rt60_s: float, rate: int) -> Float:
    """Amplitude envelope of the tail: -60 dB at rt60, ramped in over the onset."""
    t = np.arange(length) / rate
    envelope: Float = np.power(10.0, -3.0 * t / rt60_s)
    onset = min(length, int(TAIL_ONSET_S * rate))
    if onset:
        envelope[:onset] *= np.linspace(0.0, 1.0, onset, endpoint=False)
    return envelope


def _unit_energy(responses: Float) -> Float:
    out: Float = responses / np.sqrt(np.sum(responses * responses, axis=0, keepdims=True))
    return out


class _MultiOverlapAdd:
    """Streaming FFT convolution of mono blocks with one impulse response per mic."""

    def __init__(self, responses: Float, block: int) -> None:
        self.length = block + len(responses) - 1
        self.nfft = 1 << (self.length - 1).bit_length()
        self.spectra = np.fft.rfft(responses, self.nfft, axis=0)  # (bins, N)

    def convolve(self, block: Float) -> Float:
        """Full convolution of one block, (block + ir_len - 1, N)."""
        spectrum = np.fft.rfft(block, self.nfft)[:, None] * self.spectra
        out: Float = np.fft.irfft(spectrum, self.nfft, axis=0)[: self.length]
        return out


class _DiffuseNoise:
    """An endless diffuse noise field, (samples, N), made frame by frame."""

    def __init__(self, mixing: Float, rms: float, rng: np.random.Generator) -> None:
        self._mixing = mixing
        self._rms = rms
        self._rng = rng
        mics = mixing.shape[1]
        self._hop = _NOISE_FRAME // 2
        # periodic square-root Hann: at 50 % overlap the squares sum to one
        self._window = np.sqrt(0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(_NOISE_FRAME) / _NOISE_FRAME))
        self._pending = np.zeros((self._hop, mics))  # second half of the last frame
        self._ready = np.zeros((0, mics))

    def take(self, count: int) -> Float:
        while len(self._ready) < count:
            white = self._rng.standard_normal((_NOISE_FRAME, self._mixing.shape[1]))
            frame = diffuse_field(white, self._mixing) * (self._window[:, None] * self._rms)
            done = self._pending + frame[: self._hop]
            self._pending = frame[self._hop :]
            self._ready = np.concatenate([self._ready, done])
        out: Float = self._ready[:count]
        self._ready = self._ready[count:]
        return out


class ArrayAcoustics:
    """The per-mic paths of one room around one array (see the module docstring).

    ``echo_delay_samples`` is the bulk echo delay to the array's centre; ``seed`` makes
    every random part (tails, noise) repeatable."""

    def __init__(
        self,
        geometry: ArrayGeometry,
        *,
        period_samples: int,
        rate: int,
        echo_delay_samples: int,
        echo_gain: float,
        rt60_s: float,
        impulse_response: Float | None,
        noise_rms: float,
        talker_drr_db: float,
        speaker_position_m: Position,
        seed: int,
    ) -> None:
        self.geometry = geometry
        self.period_samples = period_samples
        self.rate = rate
        self.rt60_s = float(rt60_s)
        self.noise_rms = float(noise_rms)
        self.talker_drr_db = float(talker_drr_db)
        self.seed = int(seed)
        self._echo_gain = float(echo_gain)
        self._tail_length = max(2, int(self.rt60_s * rate)) if self.rt60_s > 0 else 0
        self._tail_mixing = diffuse_mixing(geometry, self._tail_length, rate) if self._tail_length else None
        self._noise_mixing = diffuse_mixing(geometry, _NOISE_FRAME, rate)
        self._talker_tails: dict[int, Float] = {}

        mics = geometry.centred()
        speaker = np.asarray(speaker_position_m, dtype=np.float64)
        distance = np.linalg.norm(mics - speaker[None, :], axis=1)
        # relative to the centre, so echo_delay stays the delay the single-mic room has
        self.echo_offsets_samples: Float = (distance - np.linalg.norm(speaker)) / SPEED_OF_SOUND_M_S * rate
        self.echo_responses = self._echo_responses(impulse_response)
        self._echo_conv = _MultiOverlapAdd(self.echo_responses, period_samples)
        # the responses look SINC_HALF_TAPS ahead; a bulk delay shorter than that loses
        # the start of the sinc (only for echo delays under 2 ms)
        self._echo_offset = echo_delay_samples - SINC_HALF_TAPS
        self.reset()

    @property
    def mic_count(self) -> int:
        return self.geometry.mic_count

    def reset(self) -> None:
        period = self.period_samples
        rows = period + max(self._echo_offset, 0) + len(self.echo_responses) + period
        self._echo = np.zeros((rows, self.mic_count))
        self._noise = (_DiffuseNoise(self._noise_mixing, self.noise_rms,
                                     np.random.default_rng([self.seed, 0x0E, 0xA7]))
                       if self.noise_rms > 0 else None)

    # --- talkers ----------------------------------------------------------------------------

    def talker_image(self, signal: Float, azimuth_deg: float) -> tuple[int, Float]:
        """What each mic hears of ``signal`` from ``azimuth_deg``: ``(lead, (samples, N))``,
        where row ``lead`` is when the direct sound reaches the array's centre."""
        responses = self.talker_responses(azimuth_deg)
        size = len(signal) + len(responses) - 1
        nfft = 1 << (size - 1).bit_length()
        spectrum = np.fft.rfft(signal, nfft)[:, None] * np.fft.rfft(responses, nfft, axis=0)
        image: Float = np.fft.irfft(spectrum, nfft, axis=0)[:size]
        return SINC_HALF_TAPS, image

    def talker_responses(self, azimuth_deg: float) -> Float:
        """(taps, N) unit-energy responses from a talker at ``azimuth_deg`` to each mic."""
        delays = self.geometry.delays_s(float(azimuth_deg)) * self.rate
        length = 2 * SINC_HALF_TAPS + 1 + self._tail_length
        direct = fractional_delay_taps(SINC_HALF_TAPS + delays, length)
        if self._tail_length:
            tail = self._talker_tail(azimuth_deg)
            direct_energy = np.sum(direct * direct, axis=0, keepdims=True)
            tail = tail * np.sqrt(direct_energy * 10.0 ** (-self.talker_drr_db / 10.0)
                                  / np.sum(tail * tail, axis=0, keepdims=True))
            direct[SINC_HALF_TAPS : SINC_HALF_TAPS + self._tail_length] += tail
        return _unit_energy(direct)

    def _talker_tail(self, azimuth_deg: float) -> Float:
        # Seeded by position, not by scheduling order: the same place in the room has the
        # same response however the script adds its talkers.
        key = round((float(azimuth_deg) % 360.0) * 100.0)
        tail = self._talker_tails.get(key)
        if tail is None:
            tail = self._diffuse_tail(np.random.default_rng([self.seed, 0x7A, key]))
            self._talker_tails[key] = tail
        return tail

    def _diffuse_tail(self, rng: np.random.Generator) -> Float:
        assert self._tail_mixing is not None
        white = rng.standard_normal((self._tail_length, self.mic_count))
        envelope = _decay(self._tail_length, self.rt60_s, self.rate)
        tail: Float = diffuse_field(white, self._tail_mixing) * envelope[:, None] * TAIL_SCALE
        return tail

    # --- the loudspeaker's echo -------------------------------------------------------------

    def _echo_responses(self, impulse_response: Float | None) -> Float:
        positions = SINC_HALF_TAPS + self.echo_offsets_samples
        reach = 2 * SINC_HALF_TAPS + 1 + int(np.ceil(np.max(np.abs(self.echo_offsets_samples))))
        if impulse_response is not None:
            # one recorded response for every mic, each delayed by its own offset
            shifts = fractional_delay_taps(positions, reach)
            recorded = np.asarray(impulse_response, dtype=np.float64)
            columns = [np.convolve(recorded, shifts[:, m]) for m in range(self.mic_count)]
            return _unit_energy(np.stack(columns, axis=1))
        length = reach + self._tail_length + int(max(ms for ms, _ in EARLY_REFLECTIONS) * self.rate / 1000)
        if not self._tail_length:
            return _unit_energy(fractional_delay_taps(positions, reach))  # a pure delay
        responses = fractional_delay_taps(positions, length)
        for delay_ms, gain in EARLY_REFLECTIONS:
            if delay_ms * self.rate / 1000 < self._tail_length:
                responses += gain * fractional_delay_taps(positions + delay_ms * self.rate / 1000, length)
        tail = self._diffuse_tail(np.random.default_rng([self.seed, 0x1A, 0xA7]))
        responses[SINC_HALF_TAPS : SINC_HALF_TAPS + self._tail_length] += tail
        return _unit_energy(responses)

    def emit(self, emitted: Float) -> None:
        """One period leaves the loudspeaker now: its echo joins what the mics will hear."""
        echo = self._echo_conv.convolve(emitted) * self._echo_gain
        offset = self._echo_offset
        if offset < 0:
            echo, offset = echo[-offset:], 0
        self._echo[offset : offset + len(echo)] += echo

    def take_echo(self) -> Float:
        """The echo on every mic during the period now read, (period, N); advances."""
        period = self.period_samples
        out: Float = self._echo[:period].copy()
        self._echo = np.roll(self._echo, -period, axis=0)
        self._echo[-period:] = 0.0
        return out

    def take_noise(self) -> Float:
        """The period's diffuse noise, (period, N)."""
        if self._noise is None:
            return np.zeros((self.period_samples, self.mic_count))
        return self._noise.take(self.period_samples)
