"""The piper TTS engine (piper-tts 1.8, onnxruntime), imported lazily.

The voice is an ``.onnx`` model with its ``.onnx.json`` beside it (resolve names
with the model registry first). The onnxruntime session is built here rather
than by ``PiperVoice.load`` so its thread count can be set: two intra-op threads whose
idle workers sleep, not spin, gave the first chunk in ~58-72 ms against ~95 with one on a
quiet 2-core machine, at no cost to the audio loop under a CPU quota (``docs/speaking.md``, "Two
threads for piper"; onnxruntime's default spinning pool did cost it).

piper speaks at 22 050 Hz; audio is resampled to 16 kHz here, at the edge.
Word timing: this piper build gives phoneme alignments only with the ``onnx``
package (a heavy extra), so word ends are spread over each chunk's samples in
proportion to each word's phoneme count (espeak's own word grouping), falling
back to character counts when espeak's words do not line up with the text's
(numbers, abbreviations read out as several words).

Memory (``docs/runtime.md``, "Memory"): onnxruntime's arena keeps the largest
synthesis's buffers for reuse, and they grow with the chunk's length (one 150-character
chunk leaves ~110 MB, more after several). Without the arena every chunk pays for
fresh pages (a first piece's CPU +12 %, a long sentence's +40 % measured). So the arena
stays, and :meth:`PiperTts.release_memory` (called when a reply is over) shrinks it
after a chunk longer than ``keep_chars``: one tiny run with onnxruntime's
arena-shrinkage option frees it, and two short syntheses (``keep_chars`` / 2 and
``keep_chars`` characters) grow it back to what a first piece needs. The next first
piece still meets a few thousand fresh pages (a few ms of CPU; figures in the docs).

When the device is idle for a while, :meth:`PiperTts.set_idle` (called from the event
loop; the daemon's idle policy, ``edgevoice.device.system.memory.IdleRelease``) asks the next
:meth:`PiperTts.release_memory` on the TTS worker to free the arena entirely (~40 MB
for a first piece's buffers), and ``set_idle(False)`` when someone starts speaking asks
it to grow the arena back while they talk, before the reply's first piece needs it.
Measured without the pre-grow, a first piece in a freed arena costs 15-40 ms more CPU
(8 000-13 000 fresh pages), so the grow-back is what keeps first audio as fast. The
grow-back (two runs of the model from phoneme ids, ~300 ms of CPU) runs on a helper
thread at nice 19: on the TTS worker it competed with the recognizer finishing the
turn and delayed the ASR final by up to 450 ms on this loaded 2-core machine.

onnxruntime's memory patterns are off for piper: they are cached per input length and
each one later asks the arena for one block of its whole size, which grew the arena by
10-40 MB over a dozen first pieces; without them the CPU time of first pieces is the
same (paired runs, median difference +0.8 ms of ~210).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.io.resample_soxr import resample
from edgevoice.audio.speaking.tts import TtsAudio, TtsEngine, TtsError, WordEnds, proportional_word_ends
from edgevoice.errors import require

_LOGGER = logging.getLogger(__name__)

# Re-grows the arena after a release, cut to ``keep_chars`` (30 by default: the first
# piece the splitter sends is a clause, cut at its first clause mark or connective).
_REWARM_TEXT = ("Sure, here is what I found for you, and I will read it out now, "
                "one sentence after the other, so please listen closely.")
_SHRINK = "memory.enable_memory_arena_shrinkage"


def load_piper_voice(model_path: str | Path, threads: int = 2, config_path: str | Path | None = None) -> Any:
    """A ``piper.PiperVoice`` whose onnxruntime session uses ``threads`` intra-op threads,
    no more than the machine has cores (0: onnxruntime's default)."""
    piper = require("piper", "speaking", "Piper TTS")
    ort = require("onnxruntime", "speaking", "Piper TTS")
    from piper.config import PiperConfig

    model = Path(model_path)
    config_file = Path(config_path) if config_path else Path(f"{model}.json")
    if not model.is_file():
        raise TtsError(f"piper voice {model} does not exist; run 'edgevoice models list' to see voices")
    if not config_file.is_file():
        raise TtsError(f"piper voice config {config_file} is missing; it belongs beside the .onnx file")
    import json

    try:
        config = PiperConfig.from_dict(json.loads(config_file.read_text(encoding="utf-8")))
        options = ort.SessionOptions()  # type: ignore[attr-defined]
        options.enable_mem_pattern = False  # see the module docstring (memory)
        if threads > 0:  # 0: onnxruntime's default (one thread per core)
            options.intra_op_num_threads = min(int(threads), os.cpu_count() or 1)
            options.inter_op_num_threads = 1
        # Idle worker threads sleep rather than spin: between piper's operators they would
        # otherwise hold a core the audio front end and the recognizer need (a few ms slower
        # per piece here and ~6 % less CPU; under a CPU quota spinning made replies late
        # 2.4x as often)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(  # type: ignore[attr-defined]
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except (OSError, ValueError, KeyError, RuntimeError) as err:
        raise TtsError(f"cannot load piper voice {model}: {err}; fetch it again") from err
    return piper.PiperVoice(session=_Session(session, ort), config=config)  # type: ignore[attr-defined]


class _Session:
    """The onnxruntime session as piper calls it (``run(outputs, feeds)``), passing the
    arena-shrinkage run option while :attr:`shrink` is set."""

    def __init__(self, session: Any, ort: Any) -> None:
        self.session = session
        self.shrink = False
        self._shrink_options = ort.RunOptions()
        self._shrink_options.add_run_config_entry(_SHRINK, "cpu:0")

    def run(self, output_names: Any, input_feed: Any) -> Any:
        if self.shrink:
            return self.session.run(output_names, input_feed, self._shrink_options)
        return self.session.run(output_names, input_feed)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


class PiperTts(TtsEngine):
    """piper through :func:`load_piper_voice`; see the module docstring."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        threads: int = 2,
        length_scale: float = 1.0,
        volume: float = 1.0,
        voice_name: str | None = None,
        keep_chars: int = 30,
        still: bool = False,
    ) -> None:
        """``still``: piper's VITS noise off, so a text comes out as the same take on every
        call and in every process (a scripted person, a test). Otherwise each call draws
        its timing and voice afresh, as a device's replies should sound."""
        self.model_path = Path(model_path)
        self.voice = load_piper_voice(self.model_path, threads)
        self.keep_chars = keep_chars
        self.longest_chars = 0  # the longest chunk since the arena was last sized
        self._idle = False  # asked by set_idle(): free the whole arena at the next release
        self._arena_freed = False  # released while idle, not grown back to a first piece's size
        self.native_rate = int(self.voice.config.sample_rate)
        self._voice_name = voice_name or self.model_path.name.removesuffix(".onnx")
        from piper.config import SynthesisConfig

        noise = 0.0 if still else None  # None: the voice's own noise scales
        self.syn_config = SynthesisConfig(length_scale=length_scale, volume=volume, noise_scale=noise,
                                          noise_w_scale=noise)
        # The grow-back's inputs, phonemized now (espeak is used by one thread only).
        self._grow_ids = [ids for length in (keep_chars // 2, keep_chars)
                          for ids in self._phoneme_ids(_rewarm_text(length))]
        self._arena_lock = threading.Lock()  # a shrink and a grow-back never overlap
        self._grow_requests: queue.SimpleQueue[bool] = queue.SimpleQueue()
        self._grower: threading.Thread | None = None
        self._grown = threading.Event()  # no grow-back pending
        self._grown.set()

    @property
    def name(self) -> str:
        return self._voice_name

    def set_idle(self, idle: bool) -> None:
        """Idle: the next :meth:`release_memory` frees the whole arena. Not idle (someone
        started talking): the next one grows it back to a first piece's size if it was
        freed. Only sets a flag (any thread); the work is done by :meth:`release_memory`
        on the TTS worker, so the last request wins."""
        self._idle = idle

    def release_memory(self) -> bool:
        """Bring the arena to what is asked (see the module docstring): idle, free it
        all; else, after it was freed, grow it back; else, after a chunk longer than
        ``keep_chars``, shrink it and grow it back to a first piece's size. Blocking (up
        to two short syntheses); True when memory was given back (then trim the heap).
        Call it on the TTS worker when no reply is being synthesized."""
        if self._idle:
            if self._arena_freed:
                return False
            with self._arena_lock:  # after a grow-back still running
                self._shrink()
            self._arena_freed = True
            self.longest_chars = 0
            _LOGGER.debug("piper arena freed while idle")
            return True
        if self._arena_freed:
            self._arena_freed = False
            self._grow_in_background()
            return False
        if self.longest_chars <= self.keep_chars:
            return False
        with self._arena_lock:
            self._shrink()
            self.longest_chars = 0
            self._regrow()
        _LOGGER.debug("piper arena shrunk after a %d-character chunk", self.longest_chars)
        return True

    def _shrink(self) -> None:
        """One tiny synthesis with the arena-shrinkage run option: the arena frees its regions."""
        session = self.voice.session
        session.shrink = True
        try:
            for _chunk in self.voice.synthesize("Ok.", self.syn_config):
                pass
        finally:
            session.shrink = False

    def _regrow(self) -> None:
        # Half the length, then the whole: measured to leave an arena in which first
        # pieces find most of their buffers (2 000-6 000 page faults; one synthesis
        # alone left ~10 000 on some sentences). From phoneme ids: no espeak, so any thread.
        for ids in self._grow_ids:
            self.voice.phoneme_ids_to_audio(ids, self.syn_config)
        self.longest_chars = max(self.longest_chars, len(_rewarm_text(self.keep_chars)))

    def _phoneme_ids(self, text: str) -> list[list[int]]:
        return [self.voice.phonemes_to_ids(phonemes) for phonemes in self.voice.phonemize(text)]

    def _grow_in_background(self) -> None:
        """Grow the arena back on a helper thread at the lowest CPU priority (nice 19), so
        it takes no CPU from the recognizer finishing the person's turn; onnxruntime runs
        one session from several threads, and a reply's first piece synthesized
        meanwhile on the worker simply finds part of the arena grown."""
        if self._grower is None:
            self._grower = threading.Thread(target=self._grow_loop, name="tts-arena", daemon=True)
            self._grower.start()
        self._grown.clear()
        self._grow_requests.put(True)

    def wait_grown(self, timeout: float | None = None) -> bool:
        """Wait until no grow-back is pending (benchmarks, tests); False on timeout."""
        return self._grown.wait(timeout)

    def _grow_loop(self) -> None:
        try:  # only this thread: Linux gives each thread its own nice value
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (AttributeError, OSError) as err:
            _LOGGER.debug("cannot lower the arena thread's priority: %s", err)
        while self._grow_requests.get():
            started = time.monotonic()
            with self._arena_lock:
                try:
                    if not self._idle:  # not idle again before it ran
                        self._regrow()
                        _LOGGER.debug("piper arena grown back in %.0f ms",
                                      (time.monotonic() - started) * 1000.0)
                except Exception as err:  # a helper thread: log, keep serving
                    _LOGGER.warning("piper arena grow-back failed: %s", err)
                finally:
                    if self._grow_requests.empty():
                        self._grown.set()

    def close(self) -> None:
        if self._grower is not None:
            self._grow_requests.put(False)
            self._grower.join(timeout=10.0)
            self._grower = None

    def synthesize(self, text: str) -> TtsAudio:
        self.longest_chars = max(self.longest_chars, len(text))
        if len(text) >= self.keep_chars:
            self._arena_freed = False  # this synthesis grows it to a first piece's size
        started = time.monotonic()
        native: list[np.ndarray[Any, Any]] = []
        groups: list[tuple[int, list[int]]] = []  # (samples, phonemes per word) per piper chunk
        try:
            for chunk in self.voice.synthesize(text, self.syn_config):
                audio = chunk.audio_int16_array
                native.append(audio)
                groups.append((len(audio), _phonemes_per_word(chunk.phonemes)))
        except Exception as err:
            raise TtsError(f"piper failed on {text[:40]!r}: {err}") from err
        raw: Pcm = np.concatenate(native).astype(np.int16) if native else np.zeros(0, np.int16)
        pcm = resample(raw, self.native_rate, SAMPLE_RATE)
        word_ends = _word_ends(text, groups, len(pcm) / max(1, len(raw)))
        return TtsAudio(text, pcm, word_ends, started, time.monotonic())


def _rewarm_text(length: int) -> str:
    """The start of the re-warming sentence, at most ``length`` characters, whole words."""
    text = _REWARM_TEXT[:max(4, length) + 1]
    return text if len(text) <= length else text.rsplit(" ", 1)[0]


def _phonemes_per_word(phonemes: list[str]) -> list[int]:
    counts: list[int] = []
    current = 0
    for phoneme in phonemes:
        if phoneme == " ":
            if current:
                counts.append(current)
            current = 0
        elif phoneme.strip() and phoneme not in ",.;:!?":
            current += 1
    if current:
        counts.append(current)
    return counts


def _word_ends(text: str, groups: list[tuple[int, list[int]]], scale: float) -> WordEnds:
    """Phoneme-weighted word ends when espeak's words match the text's, else by characters."""
    total = round(sum(samples for samples, _ in groups) * scale)
    words = text.split()
    if sum(len(counts) for _, counts in groups) != len(words):
        return proportional_word_ends(text, total)
    ends: list[tuple[int, int]] = []
    position = 0.0
    char_pos = 0
    for samples, counts in groups:
        chunk_samples = samples * scale
        weight_total = float(sum(counts)) or 1.0
        acc = 0
        for count in counts:
            acc += count
            word = words[len(ends)]
            char_pos = text.index(word, char_pos) + len(word)
            ends.append((char_pos, round(position + chunk_samples * acc / weight_total)))
        position += chunk_samples
    return tuple(ends)
