"""Resumable HTTP download into a ``.part`` file, hashed as it is written.

A connection that drops mid-body, times out or answers 5xx is retried with an
HTTP ``Range`` request that continues where the ``.part`` file ends; a server
that ignores the range (answers 200) is read again from the start. The
``.part`` file survives a failed fetch, so the next ``fetch`` resumes too.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from edgevoice import __version__
from edgevoice.models.errors import ModelDownloadError
from edgevoice.models.progress import FetchPhase, FetchProgress, ProgressCallback
from edgevoice.models.store import storage_error

_LOGGER = logging.getLogger(__name__)

CHUNK = 64 * 1024
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
_CONTENT_RANGE_UNSATISFIED = re.compile(r"bytes \*/(\d+)")


class _Interrupted(Exception):
    """A transient failure: retry, resuming from what the .part file holds."""


@dataclass(frozen=True, slots=True)
class DownloadPolicy:
    """How patient a download is."""

    timeout_s: float = 30.0
    retries: int = 4
    retry_delay_s: float = 1.0  # doubled after each failed attempt, at most 30 s
    sleep: Callable[[float], None] = time.sleep


def download(
    url: str,
    part: Path,
    *,
    model: str,
    label: str,
    expected_size: int | None = None,
    progress: ProgressCallback | None = None,
    policy: DownloadPolicy | None = None,
) -> str:
    """Download ``url`` into ``part`` (resuming what is there); return its sha256 hex."""
    policy = policy or DownloadPolicy()
    attempt = 0
    while True:
        try:
            return _attempt(_Job(url, part, model, label, expected_size, progress, policy))
        except _Interrupted as err:
            attempt += 1
            have = part.stat().st_size if part.exists() else 0
            if attempt > policy.retries:
                raise ModelDownloadError(
                    f"downloading {label} for model {model} from {url} failed after "
                    f"{attempt} attempts ({err}). {have} bytes are kept in {part}; run "
                    f"`edgevoice models fetch {model}` again to resume."
                ) from err
            delay = min(policy.retry_delay_s * 2 ** (attempt - 1), 30.0)
            _LOGGER.warning(
                "download of %s interrupted at %d bytes (%s); resuming in %.1f s (attempt %d of %d)",
                label, have, err, delay, attempt + 1, policy.retries + 1,
            )
            policy.sleep(delay)


@dataclass(frozen=True, slots=True)
class _Job:
    url: str
    part: Path
    model: str
    label: str
    expected_size: int | None
    progress: ProgressCallback | None
    policy: DownloadPolicy


def _attempt(job: _Job) -> str:
    url, part, model, label, policy = job.url, job.part, job.model, job.label, job.policy
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": f"edgevoice/{__version__}"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=policy.timeout_s)
    except urllib.error.HTTPError as err:
        err.close()
        if err.code == 416 and have:
            size = _CONTENT_RANGE_UNSATISFIED.match(err.headers.get("Content-Range", "") or "")
            if size is not None and int(size.group(1)) == have:
                _LOGGER.info("%s was already downloaded completely", label)
                return sha256_file(part)
            # Our .part is longer than the file or the server cannot say: start again.
            _LOGGER.warning("server refused to resume %s at %d bytes; downloading it again", label, have)
            _truncate(part)
            raise _Interrupted("range not satisfiable") from err
        if err.code >= 500 or err.code in (408, 429):
            raise _Interrupted(f"HTTP {err.code} {err.reason}") from err
        raise ModelDownloadError(
            f"{url} answered HTTP {err.code} {err.reason} for model {model}. The manifest's URL "
            "may be out of date; check it, or give the model by path instead."
        ) from err
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise _Interrupted(f"cannot reach {url}: {reason}") from err

    with response:
        status = response.status
        length_header = response.headers.get("Content-Length")
        length = int(length_header) if length_header and length_header.isdigit() else None
        if have and status == 206:
            match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
            if match is None or int(match.group(1)) != have:
                _truncate(part)
                raise _Interrupted("server resumed at the wrong offset")
            start = have
            total = int(match.group(3)) if match.group(3) != "*" else None
            _LOGGER.info("resuming %s at %d bytes", label, have)
        else:
            if have:
                _LOGGER.info("server does not resume downloads; fetching %s from the start", label)
            start = 0
            total = length if length is not None else job.expected_size
        hasher = hashlib.sha256()
        if start:
            _hash_file(part, hasher)
        try:
            out = part.open("ab" if start else "wb")
        except OSError as err:
            raise storage_error(err, part) from err
        with out:
            received = _copy(job, response, out, hasher, start=start, total=total)
        if length is not None and received - start < length:
            raise _Interrupted(f"connection closed after {received} of {start + length} bytes")
    return hasher.hexdigest()


def _copy(
    job: _Job,
    response: http.client.HTTPResponse,
    out: BinaryIO,
    hasher: hashlib._Hash,
    *,
    start: int,
    total: int | None,
) -> int:
    model, label, progress, part = job.model, job.label, job.progress, job.part
    done = start
    if progress is not None:
        progress(FetchProgress(model, label, FetchPhase.DOWNLOAD, done, total))
    while True:
        try:
            chunk = response.read(CHUNK)
        except (http.client.IncompleteRead, ConnectionError, TimeoutError) as err:
            _flush(out, part)
            raise _Interrupted(f"connection lost after {done} bytes: {err!r}") from err
        except OSError as err:
            _flush(out, part)
            raise _Interrupted(f"connection lost after {done} bytes: {err}") from err
        if not chunk:
            break
        try:
            out.write(chunk)
        except OSError as err:
            raise storage_error(err, part) from err
        hasher.update(chunk)
        done += len(chunk)
        if progress is not None:
            progress(FetchProgress(model, label, FetchPhase.DOWNLOAD, done, total))
    _flush(out, part)
    return done


def _flush(out: BinaryIO, part: Path) -> None:
    try:
        out.flush()
    except OSError as err:
        raise storage_error(err, part) from err


def _truncate(part: Path) -> None:
    try:
        part.unlink(missing_ok=True)
    except OSError as err:
        raise storage_error(err, part) from err


def _hash_file(path: Path, hasher: hashlib._Hash) -> None:
    with path.open("rb") as src:
        while chunk := src.read(1 << 20):
            hasher.update(chunk)


def sha256_file(path: Path) -> str:
    hasher = hashlib.sha256()
    _hash_file(path, hasher)
    return hasher.hexdigest()
