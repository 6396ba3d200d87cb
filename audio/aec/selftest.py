"""The echo-path self-test: play a probe, record it, measure delay, level and ERLE.

    result = run_selftest(backend, create_canceller("edgevoice"))
    result.delay_ms, result.echo_gain_db, result.erle_db, result.reference_ok

Works on any :class:`~edgevoice.audio.io.backend.AudioBackend` (ALSA, the simulated room):
it drives the backend one period at a time (read, then write — the duplex loop's order),
so the measured delay is what the canceller sees in the running device. The reference
is the hardware loopback channel where the backend has one, else the written frames.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from edgevoice.audio.aec.base import PERIOD_SAMPLES, AecError, EchoCanceller
from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.io.backend import AudioBackend

_Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class SelftestResult:
    engine: str
    delay_ms: float | None  # bulk delay reference -> mic, measured from the whole probe
    echo_gain_db: float | None  # echo level at the mic relative to the reference
    erle_db: float | None  # echo removed by the canceller over the probe's second half
    engine_delay_ms: float | None  # the canceller's own blind estimate
    reference_ok: bool
    noise_dbfs: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def probe_signal(seconds: float = 3.0, level_dbfs: float = -20.0, seed: int = 7) -> Pcm:
    """Speech-shaped noise bursts (pink-ish, 300 ms on / 100 ms off): wide band for a
    sharp correlation peak, bursty so the canceller sees onsets like speech."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SAMPLE_RATE)
    white = rng.standard_normal(n)
    spectrum = np.fft.rfft(white)
    freqs = np.fft.rfftfreq(n, 1.0 / SAMPLE_RATE)
    spectrum /= np.sqrt(np.maximum(freqs, 100.0))
    pink = np.fft.irfft(spectrum, n)
    gate = (np.arange(n) % (SAMPLE_RATE * 4 // 10)) < SAMPLE_RATE * 3 // 10
    pink *= gate
    pink *= 10 ** (level_dbfs / 20) / (np.sqrt(np.mean(pink[gate] ** 2)) + 1e-12)
    out: Pcm = np.clip(np.rint(pink * 32768), -32768, 32767).astype(np.int16)
    return out


def measure_delay(mic: _Floats, reference: _Floats, max_delay_ms: float = 1000.0) -> tuple[int, float]:
    """Full-rate GCC-PHAT over whole recordings: (delay in samples, peak-to-median ratio)."""
    max_lag = int(max_delay_ms * SAMPLE_RATE / 1000)
    n = 1 << int(np.ceil(np.log2(len(mic) + len(reference))))
    cross = np.conj(np.fft.rfft(reference, n)) * np.fft.rfft(mic, n)
    corr = np.abs(np.fft.irfft(cross / (np.abs(cross) + 1e-12), n)[: max_lag + 1])
    peak = int(np.argmax(corr))
    return peak, float(corr[peak] / (np.median(corr) + 1e-12))


def analyse(mic: Pcm, reference: Pcm, canceller: EchoCanceller, *, lead_in: int) -> SelftestResult:
    """Measure a recording made while ``reference`` was played (pure: no I/O)."""
    m = mic.astype(np.float64) / 32768.0
    r = reference.astype(np.float64) / 32768.0
    noise = m[: max(PERIOD_SAMPLES, lead_in - PERIOD_SAMPLES)]
    noise_power = float(np.mean(noise ** 2)) + 1e-20
    lag, confidence = measure_delay(m, r)
    delay_ms: float | None = 1000.0 * lag / SAMPLE_RATE
    gain_db: float | None = None
    active = np.abs(np.roll(r, lag)) > 0
    active[:lag] = False
    if active.any():
        echo_power = max(float(np.mean(m[active] ** 2)) - noise_power, 1e-20)
        ref_power = float(np.mean(np.roll(r, lag)[active] ** 2)) + 1e-20
        gain_db = 10.0 * float(np.log10(echo_power / ref_power))
    reference_ok = confidence > 8.0 and gain_db is not None and gain_db > -60.0
    if not reference_ok:
        delay_ms = None
    out = canceller.process_signal(mic, reference).astype(np.float64) / 32768.0
    half = len(out) // 2
    latency = int(canceller.latency_ms * SAMPLE_RATE / 1000)
    tail = active[half:len(out) - latency]
    erle: float | None = None
    if tail.any():
        mic_e = float(np.sum(m[half:len(out) - latency][tail] ** 2))
        out_e = float(np.sum(out[half + latency:][tail] ** 2)) + 1e-20
        erle = 10.0 * float(np.log10(mic_e / out_e))
    return SelftestResult(
        engine=canceller.name, delay_ms=delay_ms, echo_gain_db=gain_db, erle_db=erle,
        engine_delay_ms=canceller.stats.delay_ms, reference_ok=reference_ok,
        noise_dbfs=10.0 * float(np.log10(noise_power)),
    )


def run_selftest(backend: AudioBackend, canceller: EchoCanceller, *, probe_s: float = 4.0,
                 level_dbfs: float = -20.0) -> SelftestResult:
    """Play the probe through ``backend`` (opened and closed here) and measure it."""
    if backend.period_samples != PERIOD_SAMPLES:
        raise AecError(f"the self-test needs 10 ms periods ({PERIOD_SAMPLES} samples); "
                       f"set [audio] period_ms = 10")
    lead_in = SAMPLE_RATE // 2
    tail = SAMPLE_RATE // 2
    probe = probe_signal(probe_s, level_dbfs)
    played = np.concatenate((np.zeros(lead_in, np.int16), probe, np.zeros(tail, np.int16)))
    periods = len(played) // PERIOD_SAMPLES
    mic = np.zeros(periods * PERIOD_SAMPLES, np.int16)
    ref = np.zeros(periods * PERIOD_SAMPLES, np.int16)
    backend.open()
    try:
        for i in range(periods):
            span = slice(i * PERIOD_SAMPLES, (i + 1) * PERIOD_SAMPLES)
            captured = backend.read()
            out = played[span]
            backend.write(out)
            mic[span] = captured.mic
            ref[span] = captured.loopback if captured.loopback is not None else out
    finally:
        backend.close()
    return analyse(mic, ref, canceller, lead_in=lead_in)
