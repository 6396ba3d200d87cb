"""Signals as an array hears them: exact far-field plane waves and small simulated rooms."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from edgevoice.audio.array.geometry import ArrayGeometry

RATE = 16000
Floats = npt.NDArray[np.float64]


def plane_wave(signal: Floats, geometry: ArrayGeometry, azimuth_deg: float) -> Floats:
    """(samples, mics): ``signal`` arriving from ``azimuth_deg`` with exact fractional delays."""
    n = len(signal)
    freqs = np.fft.rfftfreq(n, 1.0 / RATE)
    spectrum = np.fft.rfft(signal)
    delays = geometry.delays_s(azimuth_deg)
    return np.stack([np.fft.irfft(spectrum * np.exp(-2j * np.pi * freqs * d), n) for d in delays], axis=1)


def noise_burst(seconds: float, seed: int, level: float = 3000.0) -> Floats:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(int(seconds * RATE)) * level


def room(
    geometry: ArrayGeometry,
    sources: list[tuple[float, float, Floats]],
    *,
    rt60_s: float = 0.3,
    dim: tuple[float, float, float] = (6.0, 5.0, 2.7),
) -> Floats:
    """(samples, mics) of each (azimuth_deg, distance_m, signal) source in a shoebox room, the
    array in the middle at 1 m height, sources at the array's height."""
    import pyroomacoustics as pra

    absorption, order = pra.inverse_sabine(rt60_s, list(dim))
    sim = pra.ShoeBox(
        list(dim), fs=RATE, materials=pra.Material(absorption), max_order=min(order, 25), air_absorption=False
    )
    centre = np.array([dim[0] / 2, dim[1] / 2, 1.0])
    sim.add_microphone_array((geometry.centred() + centre).T)
    length = max(len(s) for _, _, s in sources)
    for azimuth, distance, signal in sources:
        position = centre + distance * np.array(
            [np.cos(np.radians(azimuth)), np.sin(np.radians(azimuth)), 0.0]
        )
        sim.add_source(position.tolist(), signal=signal)
    sim.simulate()
    out: Floats = np.asarray(sim.mic_array.signals, dtype=np.float64).T[:length]
    return out
