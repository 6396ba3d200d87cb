"""Giving freed heap memory back to the operating system once the engines are loaded.

Loading piper, Silero and the ASR frees a lot of temporary memory (model bytes parsed
into tensors, onnxruntime's graph optimisation, the first synthesis's buffers); glibc
keeps it in its heaps, where it still counts as the daemon's resident memory.
:func:`release_memory` asks glibc to return it (``malloc_trim(0)``); the daemon calls
it once after its warm-up, and the reply speaker after a reply whose long chunk grew
piper's arena (once the arena has shrunk). Figures: ``docs/runtime.md`` ("Memory").

Elsewhere (macOS, musl, Windows) there is no ``malloc_trim`` and the call does nothing.

:class:`IdleRelease` is the daemon's policy for the TTS engine's scratch memory (piper's
onnxruntime arena, ~40 MB for a first piece's buffers): once the conversation has been
idle (or muted) for ``idle_s``, the engine frees it on the TTS worker and the heap is
trimmed; the moment the device starts listening (speech onset, wake word, button) the
engine grows it back on the worker while the person talks, so the reply's first piece
finds its buffers as before.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import sys
from functools import cache
from typing import TYPE_CHECKING, Any

from edgevoice.device.events import Event, EventBus, EventType

if TYPE_CHECKING:
    from edgevoice.audio.speaking.tts import Synthesizer

_LOGGER = logging.getLogger(__name__)


@cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # musl (Alpine) has no malloc_trim
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_memory() -> bool:
    """Collect Python's garbage, then return free heap pages to the OS. True when the C
    library released something; False when it had nothing to give or cannot (not glibc)."""
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    released = bool(trim(0))
    _LOGGER.debug("malloc_trim released memory: %s", released)
    return released


def resident_mb() -> float | None:
    """This process's resident memory (``VmRSS``) in MB, or None where /proc is missing."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


_IDLE_STATES = frozenset({"idle", "muted"})


class IdleRelease:
    """Frees the TTS engine's scratch memory after ``idle_s`` idle, takes it back when the
    device starts listening (see the module docstring). Subscribes to ``bus``
    (``state.changed``); lives on the event loop. An engine without ``set_idle`` (the
    test fakes) is left alone. ``idle_s`` 0: never release."""

    def __init__(self, bus: EventBus, synthesizer: Synthesizer, idle_s: float,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.synthesizer = synthesizer
        self.idle_s = idle_s
        self.released = False  # the last request to the engine was "idle"
        self._set_idle = getattr(synthesizer.engine, "set_idle", None)
        self._loop = loop
        self._timer: asyncio.TimerHandle | None = None
        self._unsubscribe = bus.subscribe(self._on_event)
        if self._loop is None:
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:  # built outside the loop: the first idle state arms it
                return
        self._arm()  # the daemon starts idle

    def _on_event(self, event: Event) -> None:
        if event.type != EventType.STATE_CHANGED:
            return
        state = str(event.data.get("state", ""))
        if state in _IDLE_STATES:
            self._arm()
            return
        self._cancel()
        if state == "listening" and self.released:
            self._request(idle=False)  # grow it back while the person talks

    def _arm(self) -> None:
        self._cancel()
        if self.idle_s <= 0 or self._set_idle is None or self.released:
            return
        loop = self._loop or asyncio.get_running_loop()
        self._timer = loop.call_later(self.idle_s, self._request, True)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _request(self, idle: bool) -> None:
        self._timer = None
        if self._set_idle is None:
            return
        self.released = idle
        self._set_idle(idle)
        self.synthesizer.release_memory(then=release_memory)
        _LOGGER.debug("TTS scratch memory: %s", "release (idle)" if idle else "grow back (listening)")

    def close(self) -> None:
        self._cancel()
        self._unsubscribe()
