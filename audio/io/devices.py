"""What ALSA devices exist and what each accepts, found by opening them.

API::

    infos = list_devices()                         # every capture and playback PCM
    infos = list_devices(kinds=("capture",), extra=("hw:CARD=Array,DEV=0",))
    info = probe_device("hw:1,0", "capture")      # PcmInfo(name, kind, channels, rates, ...)

alsa-lib advertises PCM names (``alsaaudio.pcms``); what a PCM accepts is found by
opening it (non-blocking) with each candidate channel count, rate and format and
keeping the ones it opens with exactly (``info()`` reports what was negotiated).
pyalsaaudio's ``getchannels()`` is not used: on unbounded devices such as ``null`` it
tests every count up to 2^32 and never returns. Plugins that need a server (jack,
pulse) write complaints to stderr while being probed; the probe silences file
descriptor 2 for its duration (``quiet=True``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from edgevoice.audio.io.alsa import alsa_module, list_pcm_names

CANDIDATE_CHANNELS = (1, 2, 4, 6, 8)
CANDIDATE_RATES = (8000, 16000, 22050, 24000, 32000, 44100, 48000)
CANDIDATE_FORMATS = ("S16_LE", "S24_LE", "S24_3LE", "S32_LE", "FLOAT_LE")
KINDS = ("capture", "playback")


@dataclass(frozen=True, slots=True)
class PcmInfo:
    """One PCM and what it accepts (empty tuples and ``error`` when it cannot be opened)."""

    name: str
    kind: str  # "capture" or "playback"
    channels: tuple[int, ...] = ()
    rates: tuple[int, ...] = ()
    formats: tuple[str, ...] = ()
    error: str = ""
    description: str = field(default="")

    @property
    def available(self) -> bool:
        return not self.error and bool(self.channels)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["available"] = self.available
        for key in ("channels", "rates", "formats"):
            data[key] = list(data[key])
        return data


@contextlib.contextmanager
def _quiet_stderr(enabled: bool) -> Iterator[None]:
    """Silence fd 2 (alsa-lib and jack print there directly) for the block."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class _Prober:
    def __init__(self, name: str, kind: str) -> None:
        self.alsa = alsa_module()
        self.name = name
        self.kind = kind
        self.pcm_type = self.alsa.PCM_CAPTURE if kind == "capture" else self.alsa.PCM_PLAYBACK
        self.last_error = ""

    def accepts(self, channels: int, rate: int, fmt: str) -> bool:
        alsa = self.alsa
        code = getattr(alsa, f"PCM_FORMAT_{fmt}", None)
        if code is None:
            return False
        try:
            pcm = alsa.PCM(self.pcm_type, mode=alsa.PCM_NONBLOCK, device=self.name,
                           channels=channels, rate=rate, format=code,
                           periodsize=max(1, rate // 100), periods=4)
        except alsa.ALSAAudioError as err:
            self.last_error = str(err)
            return False
        try:
            info = pcm.info()
        finally:
            pcm.close()
        return bool(info.get("channels") == channels and info.get("rate") == rate
                    and info.get("format_name") == fmt)

    def probe(self) -> PcmInfo:
        baseline = next(
            ((c, r, f) for f in ("S16_LE", "S32_LE") for r in (48000, 16000, 44100)
             for c in (2, 1, 4, 6, 8) if self.accepts(c, r, f)),
            None,
        )
        if baseline is None:
            return PcmInfo(self.name, self.kind, error=self.last_error or "cannot be opened")
        channels, rate, fmt = baseline
        return PcmInfo(
            self.name,
            self.kind,
            channels=tuple(c for c in CANDIDATE_CHANNELS if self.accepts(c, rate, fmt)),
            rates=tuple(r for r in CANDIDATE_RATES if self.accepts(channels, r, fmt)),
            formats=tuple(f for f in CANDIDATE_FORMATS if self.accepts(channels, rate, f)),
        )


def probe_device(name: str, kind: str, *, quiet: bool = True) -> PcmInfo:
    """Open ``name`` for ``kind`` with each candidate setting; report what it accepts."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    with _quiet_stderr(quiet):
        return _Prober(name, kind).probe()


def list_devices(kinds: Iterable[str] = KINDS, extra: Iterable[str] = (), *,
                 quiet: bool = True) -> list[PcmInfo]:
    """Every PCM alsa-lib advertises (plus ``extra`` names) for each kind, probed."""
    infos: list[PcmInfo] = []
    extra_names = list(extra)
    with _quiet_stderr(quiet):
        for kind in kinds:
            names = list(dict.fromkeys([*list_pcm_names(kind), *extra_names]))
            infos.extend(_Prober(name, kind).probe() for name in names)
    return infos
