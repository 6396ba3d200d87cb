"""The timer book on disk, written atomically: a temporary file in the same folder,
fsync, rename over the old one, fsync of the folder. After a power cut the file is the
old book or the new one, never half of either."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

from edgevoice.device.timers.model import TimerBook, TimerError

_LOGGER = logging.getLogger(__name__)

FILE_NAME = "timers.json"


def load_book(path: Path) -> TimerBook:
    """The saved book; an empty one when there is none or it cannot be read (said in
    the log: a broken file must not stop the device)."""
    try:
        return TimerBook.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return TimerBook()
    except (OSError, ValueError, TimerError) as err:
        _LOGGER.warning("ignoring the timers file %s: %s", path, err)
        return TimerBook()


def save_book(path: Path, book: TimerBook) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".timers-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(book.to_json(), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
