"""device/system/memory.py: malloc_trim after the engines load, with real glibc heap memory."""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator

import pytest

from edgevoice.device.system import memory


@pytest.fixture(autouse=True)
def fresh_lookup() -> Iterator[None]:
    memory._malloc_trim.cache_clear()
    yield
    memory._malloc_trim.cache_clear()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim is Linux only")
def test_release_memory_returns_freed_heap_pages_to_the_os() -> None:
    if memory._malloc_trim() is None:
        pytest.skip("not glibc (no malloc_trim)")
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    # 64 MB in small blocks (below the mmap threshold: they live in the heap), touched so
    # they are resident; all freed but the last, which pins the heap's top, so glibc
    # cannot give the memory back on its own.
    blocks = [libc.malloc(4096) for _ in range(16384)]
    for block in blocks:
        libc.memset(block, 1, 4096)
    for block in blocks[:-1]:
        libc.free(block)
    before = memory.resident_mb()
    assert memory.release_memory() is True
    after = memory.resident_mb()
    libc.free(blocks[-1])
    assert before is not None and after is not None
    assert before - after > 40.0, f"released only {before - after:.1f} MB"


def test_release_memory_is_a_no_op_without_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert memory._malloc_trim() is None
    assert memory.release_memory() is False


def test_resident_mb_reads_proc() -> None:
    rss = memory.resident_mb()
    if not sys.platform.startswith("linux"):
        assert rss is None
        return
    assert rss is not None and 10.0 < rss < 4096.0
