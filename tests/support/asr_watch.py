"""A real recognition session, watched by a test: what it is fed, what it finishes with."""

from __future__ import annotations

from collections.abc import Callable

from edgevoice.audio.frames import Pcm
from edgevoice.audio.hearing.asr import AsrResult, AsrSession


class WatchedSession(AsrSession):
    """Passes everything to ``session``; ``on_accept`` sees each chunk fed, ``on_finish``
    each result."""

    def __init__(self, session: AsrSession, *, on_accept: Callable[[Pcm], None] | None = None,
                 on_finish: Callable[[AsrResult], None] | None = None) -> None:
        self._session = session
        self._on_accept = on_accept
        self._on_finish = on_finish

    def accept(self, pcm: Pcm) -> str | None:
        if self._on_accept is not None:
            self._on_accept(pcm)
        return self._session.accept(pcm)

    def finish(self) -> AsrResult:
        result = self._session.finish()
        if self._on_finish is not None:
            self._on_finish(result)
        return result

    def cancel(self) -> None:
        self._session.cancel()
