"""The echo canceller's ring buffers hold exactly what shifting arrays would hold."""

from __future__ import annotations

import numpy as np
import pytest

from edgevoice.audio.aec.ring import RowHistory, SampleRing


def test_row_history_matches_a_shifted_array() -> None:
    rng = np.random.default_rng(1)
    depth, width = 5, 7
    rows = RowHistory(depth, width, np.complex128)
    shifted = np.zeros((depth, width), dtype=np.complex128)
    for _ in range(3 * depth + 2):  # wraps around the ring several times
        row = rng.standard_normal(width) + 1j * rng.standard_normal(width)
        shifted[1:] = shifted[:-1]
        shifted[0] = row
        view = rows.push(row)
        assert np.array_equal(view, shifted)
        assert np.array_equal(rows.view, shifted)
        assert view.flags.c_contiguous


def test_row_history_assign_and_clear() -> None:
    rows = RowHistory(3, 2)
    for i in range(4):
        rows.push(np.full(2, float(i)))
    content = np.arange(6.0).reshape(3, 2)
    assert np.array_equal(rows.assign(content), content)
    rows.push(np.full(2, 9.0))  # the mirror was rewritten too: the next push rotates it
    assert np.array_equal(rows.view, np.array([[9.0, 9.0], [0.0, 1.0], [2.0, 3.0]]))
    rows.clear()
    assert not rows.view.any()
    with pytest.raises(ValueError):
        RowHistory(0, 3)


@pytest.mark.parametrize("spare", [1, 3, 7, 64])
def test_sample_ring_matches_a_shifted_array(spare: int) -> None:
    rng = np.random.default_rng(spare)
    length = 10
    ring = SampleRing(length, spare)
    shifted = np.zeros(length)
    for _ in range(40):
        period = rng.standard_normal(int(rng.integers(1, min(spare, length) + 1)))
        n = len(period)
        shifted[:-n] = shifted[n:]
        shifted[-n:] = period
        ring.push(period)
        assert len(ring.view) == len(ring) == length
        assert np.array_equal(ring.view, shifted)
    ring.clear()
    assert not ring.view.any()


def test_sample_ring_refuses_more_than_it_holds() -> None:
    ring = SampleRing(8, 4)
    with pytest.raises(ValueError, match="at most 4"):
        ring.push(np.zeros(5))
