"""Pure parsers for streamed replies: bytes to lines, SSE events, NDJSON. No I/O, no clock."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

_BREAK = re.compile(r"\r\n|\r|\n")


class LineBuffer:
    """Split a byte stream into text lines (``\\n``, ``\\r\\n`` or ``\\r``), UTF-8 safely."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._text = ""
        self._pending_cr = False

    def feed(self, data: bytes) -> list[str]:
        self._text += self._decoder.decode(data)
        return self._split()

    def flush(self) -> list[str]:
        self._text += self._decoder.decode(b"", final=True)
        lines = self._split()
        if self._text:
            lines.append(self._text)
            self._text = ""
        return lines

    def _split(self) -> list[str]:
        text = self._text
        if self._pending_cr and text.startswith("\n"):
            text = text[1:]  # the \n of a \r\n split across two feeds
        self._pending_cr = False
        parts = _BREAK.split(text)
        self._text = parts.pop()
        if self._text == "" and text.endswith("\r"):
            self._pending_cr = True
        return parts


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched server-sent event."""

    data: str
    event: str = "message"


class SseParser:
    """Server-sent events per the WHATWG rules, fed line by line.

    Comment lines (``: keep-alive``) count as heartbeats; lines that are not
    ``field: value`` of a known field are counted as garbage and otherwise ignored.
    """

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = ""
        self.heartbeats = 0
        self.garbage = 0

    def feed_line(self, line: str) -> SseEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            self.heartbeats += 1
            return None
        field, sep, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field in ("id", "retry"):
            pass
        else:
            self.garbage += 1
        return None

    def finish(self) -> SseEvent | None:
        """At end of stream: an event still being built is dispatched (lenient)."""
        return self._dispatch()

    def _dispatch(self) -> SseEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SseEvent("\n".join(self._data), self._event or "message")
        self._data = []
        self._event = ""
        return event
