"""The array in the live path (audio/array/hearing.py): the echo cancelled per mic or after
the beam, the beam steered at the talker, and the beam held while the speaker plays when
the canceller sits after it. A pyroomacoustics room, the real edgevoice canceller."""

from __future__ import annotations

import numpy as np
import pytest
from support.array_scenes import RATE, noise_burst, room

from edgevoice.audio.aec import create_canceller
from edgevoice.audio.array.doa import angle_difference_deg
from edgevoice.audio.array.frontend import ArraySettings
from edgevoice.audio.array.geometry import parse_geometry
from edgevoice.audio.array.hearing import HOP, ArrayHearing

GEOMETRY = parse_geometry("respeaker-4mic")
TALKER_DEG = 60.0
SPEAKER_DEG = 200.0


def _speechlike(seconds: float, seed: int) -> np.ndarray:
    """Noise with a syllable-rate envelope: the canceller and the direction finder need
    broadband sound, and speech is not steady."""
    burst = noise_burst(seconds, seed, level=2500.0)
    t = np.arange(len(burst)) / RATE
    return burst * (0.35 + 0.65 * np.abs(np.sin(2 * np.pi * 2.5 * t)))


@pytest.fixture(scope="module")
def scene() -> dict[str, np.ndarray]:
    """8 s of the device talking (the loudspeaker 20 cm away), then 2 s of a person at
    60° alone, 1.2 s of quiet."""
    total = int(11.2 * RATE)
    reference = np.zeros(total)
    reference[: 8 * RATE] = _speechlike(8.0, 1)
    talker = np.zeros(total)
    talker[8 * RATE : 10 * RATE] = _speechlike(2.0, 2) * 0.5
    echo = room(GEOMETRY, [(SPEAKER_DEG, 0.2, reference)], rt60_s=0.25)[:total]
    near = room(GEOMETRY, [(TALKER_DEG, 1.2, talker)], rt60_s=0.25)[:total]
    # levels as a board hears them: the echo at -26 dBFS, the person at -32 dBFS
    echo *= 1600.0 / np.sqrt(np.mean(echo[: 8 * RATE] ** 2))
    near *= 800.0 / np.sqrt(np.mean(near[8 * RATE : 10 * RATE] ** 2))
    rng = np.random.default_rng(3)
    noise = rng.standard_normal((total, GEOMETRY.mic_count)) * 3.0
    return {
        "mics": np.clip(echo + near + noise, -32768, 32767),
        "echo": echo,
        "reference": np.clip(np.rint(reference), -32768, 32767).astype(np.int16),
        "talker": talker,
    }


def _run(hearing: ArrayHearing, scene: dict[str, np.ndarray]) -> tuple[np.ndarray, list[float]]:
    mics = np.rint(scene["mics"]).astype(np.int16)
    reference = scene["reference"]
    talker = scene["talker"]
    out = []
    steered = []
    for start in range(0, len(mics) - HOP + 1, HOP):
        speech = bool(np.any(talker[start : start + HOP]))
        far_end = bool(np.any(reference[start : start + HOP]))
        clean, _ = hearing.process(mics[start : start + HOP], reference[start : start + HOP],
                                   speech=speech, far_end=far_end)
        out.append(clean)
        steered.append(hearing.steered_deg)
    return np.concatenate(out).astype(np.float64), steered


def _db(x: np.ndarray) -> float:
    return 10 * np.log10(np.mean(x.astype(np.float64) ** 2) + 1e-9)


@pytest.mark.parametrize("placement", ["per-mic", "after-beam"])
def test_the_echo_is_cancelled_and_the_beam_turns_to_the_talker(
    scene: dict[str, np.ndarray], placement: str
) -> None:
    count = GEOMETRY.mic_count if placement == "per-mic" else 1
    cancellers = [create_canceller("edgevoice") for _ in range(count)]
    hearing = ArrayHearing(GEOMETRY, ArraySettings(), cancellers, placement)  # type: ignore[arg-type]
    out, steered = _run(hearing, scene)
    lag = hearing.latency_periods * HOP
    # the last 3 s of the reply, converged: the echo that reached the mics against what is left
    echo_in = scene["echo"][5 * RATE : 8 * RATE].mean(axis=1)
    echo_out = out[5 * RATE + lag : 8 * RATE + lag]
    assert _db(echo_in) - _db(echo_out) > 25.0, placement
    # the person was heard: their direction found, the beam steered at them
    estimate = hearing.last_segment
    assert estimate is not None and angle_difference_deg(estimate.direction_deg, TALKER_DEG) < 15.0
    assert angle_difference_deg(steered[-1], TALKER_DEG) < 15.0
    # and they come through: their segment is well above the quiet after it
    assert _db(out[8 * RATE + lag : 10 * RATE + lag]) - _db(out[10 * RATE + lag + 3200 :]) > 15.0
    assert hearing.smoothed_deg is not None


def test_after_the_beam_the_beam_holds_while_the_speaker_plays(scene: dict[str, np.ndarray]) -> None:
    # a person who talks over the reply: the beam must not move under the canceller
    hearing = ArrayHearing(GEOMETRY, ArraySettings(initial_azimuth_deg=300.0),
                           [create_canceller("edgevoice")], "after-beam")
    mics = np.rint(scene["mics"]).astype(np.int16)
    reference = scene["reference"]
    for start in range(0, 8 * RATE, HOP):
        speech = start >= 7 * RATE  # the last second of the reply: "double talk"
        hearing.process(mics[start : start + HOP], reference[start : start + HOP], speech=speech,
                        far_end=True)
    assert hearing.steered_deg == 300.0
    # the reply ends (a barge-in): the beam is free again and turns within the same segment
    for start in range(8 * RATE, 10 * RATE, HOP):
        hearing.process(mics[start : start + HOP], reference[start : start + HOP], speech=True, far_end=False)
    assert hearing.steered_deg != 300.0


def test_a_twenty_ms_period_is_two_hops_and_the_canceller_count_is_checked() -> None:
    with pytest.raises(ValueError, match="per-mic echo cancellation takes 4"):
        ArrayHearing(GEOMETRY, ArraySettings(), [create_canceller("edgevoice")], "per-mic")
    hearing = ArrayHearing(GEOMETRY, ArraySettings(), [create_canceller("none") for _ in range(4)], "per-mic")
    period = np.zeros((2 * HOP, 4), dtype=np.int16)
    clean, linear = hearing.process(period, np.zeros(2 * HOP, dtype=np.int16), speech=False, far_end=False)
    assert clean.shape == (2 * HOP,) and clean.dtype == np.int16
