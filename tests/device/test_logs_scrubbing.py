"""Secrets never reach the log: messages, tracebacks, stack info; secrets rotated out;
short secrets. Through a real logging handler and formatter."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from edgevoice.device.system.logs import RecentLogHandler, SecretFilter, recent_log, scrub_secrets


@pytest.fixture
def root_handlers() -> Iterator[tuple[logging.StreamHandler, RecentLogHandler, io.StringIO]]:  # type: ignore[type-arg]
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    recent = RecentLogHandler(capacity=5000)
    root.handlers = [handler, recent]
    root.setLevel(logging.DEBUG)
    yield handler, recent, stream
    root.handlers = saved
    root.setLevel(level)


def test_a_traceback_carrying_a_secret_is_scrubbed(root_handlers) -> None:  # type: ignore[no-untyped-def]
    _, recent, stream = root_handlers
    scrub_secrets(["hunter2-long-password"])
    log = logging.getLogger("edgevoice.test")
    try:
        raise ConnectionError("login refused for password hunter2-long-password")
    except ConnectionError:
        log.exception("connecting with %s failed", "hunter2-long-password")
    log.warning("here", stack_info=True, extra={})
    text = stream.getvalue()
    assert "hunter2-long-password" not in text
    assert "Traceback (most recent call last)" in text  # the traceback itself is kept
    assert "login refused for password ***" in text
    assert "connecting with *** failed" in text
    assert all("hunter2-long-password" not in line for line in recent.tail(5000))
    assert any("login refused for password ***" in line for line in recent.tail(5000))


def test_a_secret_rotated_out_stays_masked(root_handlers) -> None:  # type: ignore[no-untyped-def]
    _, _, stream = root_handlers
    scrub_secrets(["old-secret-value"])
    scrub_secrets(["new-secret-value"])  # a reload with a rotated password
    log = logging.getLogger("edgevoice.test")
    log.info("late retry with old-secret-value, now new-secret-value")
    assert stream.getvalue().strip() == "INFO late retry with ***, now ***"


def test_short_secrets_are_masked_where_they_stand_alone() -> None:
    scrubber = SecretFilter(["7f3", "ab"])
    assert scrubber.scrub("pin=7f3 key ab.") == "pin=*** key ***."
    # not inside longer words: "ab" in "about" is not the secret
    assert scrubber.scrub("about 7f3x") == "about 7f3x"
    assert scrubber.scrub("token:ab") == "token:***"


def test_the_longest_secret_wins_when_one_contains_another() -> None:
    scrubber = SecretFilter(["secret-one", "secret-one-and-more"])
    assert scrubber.scrub("x secret-one-and-more y") == "x *** y"


def test_recent_log_keeps_the_last_lines(root_handlers) -> None:  # type: ignore[no-untyped-def]
    _, recent, _ = root_handlers
    assert recent_log() is recent
    small = RecentLogHandler(capacity=50)
    logging.getLogger().addHandler(small)
    log = logging.getLogger("edgevoice.test")
    for i in range(60):
        log.info("line %d", i)
    tail = small.tail(3)
    assert [line.rsplit(" ", 1)[1] for line in tail] == ["57", "58", "59"]
    assert len(small.tail(1000)) == 50
    assert small.tail(0) == []
