"""The fetch progress bar: redrawn in place on a terminal, sparse lines in a log."""

from __future__ import annotations

import io

from edgevoice.models import FetchPhase, FetchProgress, TerminalProgress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def updates(total: int, step: int) -> list[FetchProgress]:
    return [FetchProgress("m", "m.zip", FetchPhase.DOWNLOAD, done, total)
            for done in range(0, total + 1, step)]


def test_terminal_redraws_one_line() -> None:
    out = FakeTerminal()
    bar = TerminalProgress(out, width=10)
    for update in updates(1_000_000, 250_000):
        bar(update)
    bar.close()
    text = out.getvalue()
    assert text.count("\r") == 5 and text.count("\n") == 1
    assert "[##########] 100.0%  1.0 MB / 1.0 MB" in text


def test_log_gets_sparse_lines() -> None:
    out = io.StringIO()
    now = [0.0]
    bar = TerminalProgress(out, line_interval_s=5.0, clock=lambda: now[0])
    for update in updates(1_000_000, 10_000):  # 101 updates within one second
        now[0] += 0.01
        bar(update)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert len(lines) == 2  # the first update and the finished one
    assert lines[-1].endswith("100.0%  1.0 MB / 1.0 MB")


def test_unknown_total_shows_bytes() -> None:
    out = io.StringIO()
    TerminalProgress(out)(FetchProgress("m", "m.zip", FetchPhase.DOWNLOAD, 2_500_000, None))
    assert out.getvalue() == "download m.zip  2.5 MB\n"
