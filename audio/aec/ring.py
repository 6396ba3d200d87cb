"""Ring buffers for the echo canceller's per-period histories, read as contiguous views.

Shifting a whole history by one period per 10 ms (``a[1:] = a[:-1]``) copies everything
every period; these keep the same contents with a couple of small writes per period and
still hand numpy one contiguous array, so the maths reading them is unchanged.

    rows = RowHistory(depth=25, width=161, dtype=np.complex128)
    rows.push(spectrum)      # becomes rows.view[0]; the oldest row drops off
    rows.view                # (depth, width), newest first, contiguous

    ring = SampleRing(length=8648, spare=10240)
    ring.push(period)        # the newest samples at the end of ring.view
    ring.view                # the last `length` samples, oldest first, contiguous
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


class RowHistory:
    """The last ``depth`` rows pushed, newest first, as one contiguous ``(depth, width)``
    view. The rows are stored twice (``buf[i]`` equals ``buf[i + depth]``), so every
    rotation of the ring is a contiguous slice; a push writes one row twice."""

    def __init__(self, depth: int, width: int, dtype: npt.DTypeLike = np.float64) -> None:
        if depth < 1 or width < 1:
            raise ValueError(f"a row history needs depth and width >= 1, got {depth}x{width}")
        self._depth = depth
        self._buf: npt.NDArray[Any] = np.zeros((2 * depth, width), dtype=dtype)
        self._head = 0

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def view(self) -> npt.NDArray[Any]:
        """Row 0 is the newest. Writes into the view do not reach the mirror: use
        :meth:`assign` to replace the contents."""
        return self._buf[self._head:self._head + self._depth]

    def push(self, row: npt.ArrayLike) -> npt.NDArray[Any]:
        """Add ``row`` as the newest (the oldest drops off); returns the new view."""
        head = (self._head - 1) % self._depth
        self._buf[head] = row
        self._buf[head + self._depth] = self._buf[head]
        self._head = head
        return self._buf[head:head + self._depth]

    def assign(self, rows: npt.ArrayLike) -> npt.NDArray[Any]:
        """Replace every row (``rows[0]`` newest); returns the new view."""
        self._head = 0
        self._buf[: self._depth] = rows
        self._buf[self._depth:] = self._buf[: self._depth]
        return self._buf[: self._depth]

    def clear(self) -> None:
        self._buf[:] = 0
        self._head = 0


class SampleRing:
    """The newest ``length`` samples, oldest first, as one contiguous view. New samples
    are appended into ``spare`` room behind the window; only when that room runs out is
    the window moved back to the front (one copy every ``spare`` samples)."""

    def __init__(self, length: int, spare: int, dtype: npt.DTypeLike = np.float64) -> None:
        if length < 1 or spare < 1:
            raise ValueError(f"a sample ring needs length and spare >= 1, got {length}, {spare}")
        self._length = length
        self._buf: npt.NDArray[Any] = np.zeros(length + spare, dtype=dtype)
        self._end = length

    def __len__(self) -> int:
        return self._length

    @property
    def view(self) -> npt.NDArray[Any]:
        return self._buf[self._end - self._length:self._end]

    def push(self, samples: npt.NDArray[Any]) -> None:
        """Append ``samples`` (at most ``min(length, spare)`` of them); the oldest drop off."""
        n = len(samples)
        room = min(self._length, len(self._buf) - self._length)
        if n > room:
            raise ValueError(f"pushed {n} samples at once into a ring that takes at most {room}")
        if self._end + n > len(self._buf):
            keep = self._length - n  # the window after this push starts at end - keep
            self._buf[:keep] = self._buf[self._end - keep:self._end]
            self._end = keep
        self._buf[self._end:self._end + n] = samples
        self._end += n

    def clear(self) -> None:
        self._buf[:] = 0.0
        self._end = self._length
