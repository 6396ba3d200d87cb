"""Each echo canceller runs and removes echo on a short synthetic scenario."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from support.aec import echo_scenario, erle_db

from edgevoice.audio.aec import AecError, create_canceller
from edgevoice.audio.aec.speex import load_speexdsp
from edgevoice.audio.frames import dbfs


def _speex_available() -> bool:
    try:
        load_speexdsp()
    except AecError:
        return False
    return True


def test_edgevoice_removes_echo_and_reports_stats() -> None:
    mic, ref = echo_scenario(seconds=6.0, delay_ms=120.0)
    aec = create_canceller("edgevoice")
    out = aec.process_signal(mic, ref)
    assert len(out) == len(mic)
    assert erle_db(mic, out, 3.0, aec.latency_ms) > 25.0
    stats = aec.stats
    assert stats.delay_ms is not None and abs(stats.delay_ms - 120.0) < 3.0
    assert stats.converged and stats.reference_ok
    assert stats.erle_db is not None and stats.erle_db > 15.0
    # the residual-echo level the barge-in detector compares speech against: well under
    # the echo at the mic, but not absent
    mic_level = dbfs(mic[-16000:])
    assert -110.0 < stats.residual_echo_dbfs < mic_level - 20.0


def test_edgevoice_keeps_the_near_end_when_the_far_end_is_silent() -> None:
    near, _ = echo_scenario(seconds=3.0, delay_ms=0.0, seed=5)
    aec = create_canceller("edgevoice")
    out = aec.process_signal(near, np.zeros_like(near))
    lat = int(aec.latency_ms * 16)
    a = near[: len(near) - lat].astype(np.float64)
    b = out[lat:].astype(np.float64)
    assert abs(10 * np.log10((a @ a) / (b @ b))) < 0.5
    assert not aec.stats.reference_ok  # nothing played: no evidence the reference works


def test_edgevoice_reset_forgets_the_path() -> None:
    mic, ref = echo_scenario(seconds=3.0, delay_ms=40.0)
    aec = create_canceller("edgevoice")
    aec.process_signal(mic, ref)
    assert aec.stats.delay_ms is not None
    aec.reset()
    assert aec.stats.delay_ms is None and aec.stats.periods == 0


def test_wrong_period_length_is_refused() -> None:
    aec = create_canceller("edgevoice")
    with pytest.raises(AecError):
        aec.process(np.zeros(320, np.int16), np.zeros(320, np.int16))


def test_unknown_engine_is_refused() -> None:
    with pytest.raises(AecError, match="choose one of"):
        create_canceller("magic")


def test_passthrough_changes_nothing_and_never_claims_a_reference() -> None:
    mic, ref = echo_scenario(seconds=1.0)
    aec = create_canceller("none")
    out = aec.process_signal(mic, ref)
    assert np.array_equal(out, mic[: len(out)])
    assert not aec.stats.reference_ok


@pytest.mark.skipif(not _speex_available(), reason="libspeexdsp.so.1 is not installed (apt libspeexdsp1)")
def test_speex_removes_echo() -> None:
    mic, ref = echo_scenario(seconds=6.0, delay_ms=40.0)
    aec = create_canceller("speex", filter_ms=200)
    out = aec.process_signal(mic, ref)
    assert erle_db(mic, out, 3.0) > 10.0
    delay = aec.stats.delay_ms
    assert delay is not None and abs(delay - 40.0) < 5.0
    aec.reset()
    aec.close()


_WEBRTC_CHILD = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
    from support.aec import echo_scenario, erle_db
    from edgevoice.audio.aec import create_canceller
    mic, ref = echo_scenario(seconds=6.0, delay_ms=60.0)
    aec = create_canceller("webrtc")
    out = aec.process_signal(mic, ref)
    print(json.dumps({"erle": erle_db(mic, out, 3.0), "stats_erle": aec.stats.erle_db}))
    sys.stdout.flush()
    os._exit(0)  # livekit's runtime can abort during interpreter teardown
""")


def test_webrtc_removes_echo_in_a_child_process() -> None:
    pytest.importorskip("livekit.rtc",
                        reason="livekit is not installed (pip install 'edgevoice[aec-reference]')")
    tests_dir = os.path.dirname(os.path.dirname(__file__))
    proc = subprocess.run([sys.executable, "-c", _WEBRTC_CHILD, tests_dir], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["erle"] > 15.0
    assert result["stats_erle"] is not None


def test_edgevoice_tracks_clock_drift() -> None:
    # the speaker's clock runs 100 ppm fast: the echo arrives 1.6 samples a second earlier
    mic, ref = echo_scenario(seconds=10.0, delay_ms=80.0, drift_ppm=100.0)
    aec = create_canceller("edgevoice")
    out = aec.process_signal(mic, ref)
    assert -140.0 < aec.drift_ppm < -60.0  # type: ignore[attr-defined]
    assert erle_db(mic, out, 7.0, aec.latency_ms) > 25.0
    still = create_canceller("edgevoice")
    still.process_signal(*echo_scenario(seconds=10.0, delay_ms=80.0))
    assert abs(still.drift_ppm) < 10.0  # type: ignore[attr-defined]


def test_quiet_far_end_fast_path_is_bit_exact() -> None:
    """While the far end is silent the engine skips the filter; the output must be exactly
    what the full computation gives, through silence, speech and silence again."""
    rng = np.random.default_rng(7)
    speech = (rng.standard_normal(16000 * 2) * 3000).astype(np.int16)
    silence = np.zeros(16000, np.int16)
    far = np.concatenate([speech, silence, silence, silence, speech[:8000], silence, silence])
    echo = np.concatenate([np.zeros(800, np.int16), (far[:-800] * 0.3).astype(np.int16)])
    mic = (echo + rng.standard_normal(len(far)) * 30).astype(np.int16)
    fast = create_canceller("edgevoice")
    full = create_canceller("edgevoice")
    full._quiet_after = 10**9  # type: ignore[attr-defined]
    quiet = 0
    for i in range(0, len(far), 160):
        out_fast = fast.process(mic[i:i + 160], far[i:i + 160])
        out_full = full.process(mic[i:i + 160], far[i:i + 160])
        assert np.array_equal(out_fast, out_full), f"differs at period {i // 160}"
        quiet += fast._silent_periods > fast._quiet_after  # type: ignore[attr-defined]
    assert quiet > 100  # the fast path really ran


def test_edgevoice_linear_output_is_the_error_before_suppression_aligned_with_the_output() -> None:
    mic, ref = echo_scenario(seconds=6.0, delay_ms=60.0, seed=2)
    aec = create_canceller("edgevoice")
    lat = int(aec.latency_ms * 16)
    out = np.zeros_like(mic)
    linear = np.zeros_like(mic)
    for start in range(0, len(mic) - 159, 160):
        out[start:start + 160] = aec.process(mic[start:start + 160], ref[start:start + 160])
        linear[start:start + 160] = aec.linear
    # the linear filter takes most of the echo; the suppressor takes more of what is left
    linear_erle = erle_db(mic, linear, 3.0, aec.latency_ms)
    assert 15.0 < linear_erle < erle_db(mic, out, 3.0, aec.latency_ms) - 3.0
    # with the far end silent it is the microphone, exactly, one period late (as the output)
    near, _ = echo_scenario(seconds=1.0, delay_ms=0.0, seed=5)
    quiet = create_canceller("edgevoice")
    heard = np.concatenate([
        (quiet.process(near[i:i + 160], np.zeros(160, np.int16)), quiet.linear)[1]
        for i in range(0, len(near) - 159, 160)
    ])
    assert np.array_equal(heard[lat:], near[: len(heard) - lat])
    assert create_canceller("none").linear is None  # engines without the stage say so


def test_a_long_silent_far_end_passes_the_mic_through_without_the_suppressor() -> None:
    """Once the residual-echo estimate is exactly zero the suppressor's gains are exactly 1
    and the engine skips its FFTs: the output stays the full path's to 1 LSB, and the echo
    is cancelled the same when the far end comes back."""
    rng = np.random.default_rng(11)
    speech = (rng.standard_normal(16000 * 2) * 3000).astype(np.int16)
    silence = np.zeros(16000 * 5, np.int16)
    far = np.concatenate([speech, silence, speech])
    echo = np.concatenate([np.zeros(800, np.int16), (far[:-800] * 0.3).astype(np.int16)])
    mic = (echo + rng.standard_normal(len(far)) * 30).astype(np.int16)
    fast = create_canceller("edgevoice")
    full = create_canceller("edgevoice")
    full.idle_pass_through = False  # type: ignore[attr-defined]
    outs_fast, outs_full, settled = [], [], 0
    for i in range(0, len(far), 160):
        outs_fast.append(fast.process(mic[i:i + 160], far[i:i + 160]))
        outs_full.append(full.process(mic[i:i + 160], far[i:i + 160]))
        settled += fast._settled  # type: ignore[attr-defined]
    a, b = np.concatenate(outs_fast), np.concatenate(outs_full)
    assert settled > 200  # seconds of the silence went through without the suppressor
    assert np.max(np.abs(a.astype(int) - b.astype(int))) <= 1
    back = len(speech) + len(silence) + 16000  # a second after the far end came back
    assert abs(erle_db(mic[back:], a[back:], 0.0, 10.0) - erle_db(mic[back:], b[back:], 0.0, 10.0)) < 0.1
    assert not fast._settled  # type: ignore[attr-defined]
