"""The arm64 root ``./dev board`` works in: commands run in it, mounts into it, its removal.

``Board`` keeps what a run did to the root (its mounts, the mount points it had to create)
so that all of it goes at the end, and the table of steps (step, seconds, result) the job
prints. The steps themselves are in ``board.py``. Stdlib only: the host's python3 runs it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from smoke import SmokeFailed


def log(message: str) -> None:
    print(f"\033[1m[board]\033[0m {message}", file=sys.stderr, flush=True)


class StepFailed(Exception):
    """A step's check did not hold; the message says what was seen."""


@dataclass
class Step:
    name: str
    seconds: float = 0.0
    result: str = "-"
    detail: str = ""


@dataclass
class Board:
    root: Path
    cache: Path
    keep: bool
    steps: list[Step] = field(default_factory=list)
    mounts: list[Path] = field(default_factory=list)
    created: list[Path] = field(default_factory=list)
    failed: bool = False

    # --- bookkeeping -----------------------------------------------------------------------
    def step(self, name: str, action: Callable[[], str], *, needed: bool = True) -> bool:
        """Run one step and record its time and result; after a needed step fails the rest skip."""
        record = Step(name)
        self.steps.append(record)
        if self.failed and needed:
            record.result, record.detail = "skipped", "an earlier step failed"
            return False
        log(f"step: {name}")
        started = time.monotonic()
        try:
            record.detail = action()
            record.result = "ok"
        except (StepFailed, SmokeFailed, json.JSONDecodeError, KeyError, subprocess.CalledProcessError,
                subprocess.TimeoutExpired, OSError) as err:
            record.result = "FAIL"
            record.detail = one_line(str(err))
            log(f"FAILED: {name}: {err}")
            if needed:
                self.failed = True
        record.seconds = time.monotonic() - started
        return record.result == "ok"

    def table(self) -> str:
        width = max(len(s.name) for s in self.steps)
        lines = [f"{'step':<{width}}  {'time':>8}  {'result':<7}  detail", "-" * (width + 40)]
        for s in self.steps:
            lines.append(f"{s.name:<{width}}  {_clock(s.seconds):>8}  {s.result:<7}  {s.detail}")
        total = sum(s.seconds for s in self.steps)
        lines.append(f"{'total':<{width}}  {_clock(total):>8}  {'FAIL' if self.failed_any else 'ok':<7}")
        return "\n".join(lines)

    @property
    def failed_any(self) -> bool:
        return any(s.result == "FAIL" for s in self.steps)

    # --- running things ----------------------------------------------------------------------
    def chroot(self, command: str, *, timeout: float = 1800, env: dict[str, str] | None = None,
               check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a bash command in the arm64 root with a clean environment (nothing of the host's)."""
        base = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "HOME": "/root", "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}
        base.update(env or {})
        argv = ["chroot", str(self.root), "/usr/bin/env", "-i",
                *(f"{k}={v}" for k, v in base.items()), "/bin/bash", "-ec", command]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        if check and result.returncode != 0:
            tail = last_lines(result.stderr or result.stdout)
            raise StepFailed(f"exit {result.returncode}: {command[:80]}: {tail}")
        return result

    def mount(self, source: str, target: Path, *options: str) -> None:
        """Mount onto ``target``, making (and remembering, to remove) what the mount point needs."""
        if not target.exists():
            missing = [target]
            while not missing[-1].parent.exists():
                missing.append(missing[-1].parent)
            for folder in reversed(missing[1:]):
                folder.mkdir()
                self.created.append(folder)
            if Path(source).is_dir() or "-t" in options:
                target.mkdir()
            else:
                target.touch()
            self.created.append(target)
        subprocess.run(["mount", *options, source, str(target)], check=True, capture_output=True, text=True)
        self.mounts.append(target)

    def unmount_all(self) -> None:
        for target in reversed(self.mounts):
            done = subprocess.run(["umount", str(target)], capture_output=True, text=True, check=False)
            if done.returncode != 0:
                subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)
        self.mounts.clear()
        for path in reversed(self.created):
            with contextlib.suppress(OSError):
                path.rmdir() if path.is_dir() else path.unlink()
        self.created.clear()

    @contextlib.contextmanager
    def mounted(self, source: str, target: Path, *options: str) -> Iterator[None]:
        """A mount that lasts one block; what it needed to create in the root goes with it."""
        before_mounts, before_created = len(self.mounts), len(self.created)
        self.mount(source, target, *options)
        try:
            yield
        finally:
            for path in reversed(self.mounts[before_mounts:]):
                subprocess.run(["umount", str(path)], check=False, capture_output=True)
            del self.mounts[before_mounts:]
            for path in reversed(self.created[before_created:]):
                with contextlib.suppress(OSError):
                    path.rmdir() if path.is_dir() else path.unlink()
            del self.created[before_created:]


def mounts_under(root: Path) -> list[str]:
    listed = subprocess.run(["findmnt", "-rno", "TARGET"], capture_output=True, text=True, check=False).stdout
    return [t for t in listed.splitlines() if t == str(root) or t.startswith(str(root) + "/")]


def remove_root(root: Path) -> None:
    """Delete a scratch root, never through a mount (a bound /dev is the host's own)."""
    if not root.exists():
        return
    for target in sorted(mounts_under(root), reverse=True):
        subprocess.run(["umount", "-l", target], capture_output=True, check=False)
    left = mounts_under(root)
    if left:
        raise StepFailed(f"not deleting {root}: still mounted there: {left}")
    shutil.rmtree(root)


def one_line(text: str) -> str:
    return " ".join(text.split())[:160]


def last_lines(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{seconds % 60:04.1f}"


def run(argv: list[str], *, timeout: float = 3600, **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        tail = last_lines(result.stderr or result.stdout)
        raise StepFailed(f"exit {result.returncode}: {' '.join(argv)[:80]}: {tail}")
    return result  # type: ignore[no-any-return]
