"""Moonshine's bundled ``.ort`` files run by the Python onnxruntime: tiny-en (moonshine-voice's
copy) and base-en (moonshine-cpp's copy), on real piper and espeak-ng speech."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from support.hearing_audio import espeak_speech, piper_speech, place

from edgevoice.audio.frames import SAMPLE_RATE, Pcm
from edgevoice.audio.hearing.asr import AsrModelError
from edgevoice.audio.hearing.asr_moonshine import MoonshineEngine, model_arch
from edgevoice.audio.hearing.asr_moonshine_ort import (
    MAX_PIECE_S,
    OrtMoonshine,
    detokenize,
    load_tokens,
    pieces,
)
from edgevoice.audio.hearing.turn_text import LEFT_OUT_WEIGHT, Unfinished, read_text
from edgevoice.models import ModelKind, find_models

PAD = np.zeros(4800, dtype=np.int16)


def padded(pcm: Pcm) -> Pcm:
    return np.concatenate([PAD, pcm, PAD])


def folder(name: str) -> Path:
    found = [loc for loc in find_models(ModelKind.ASR, engine="moonshine") if loc.name == name]
    if not found:
        pytest.skip(f"{name} is not installed here")  # base-en: x86-64 only (moonshine-cpp)
    return found[0].path


@pytest.fixture(scope="module")
def base_engine() -> object:
    engine = MoonshineEngine(folder("moonshine-base-en"), model_name="moonshine-base-en")
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def tiny_ort_engine() -> object:
    engine = MoonshineEngine(folder("moonshine-tiny-en"), model_name="moonshine-tiny-en",
                             backend="onnxruntime")
    yield engine
    engine.close()


def test_the_tokenizer_reads_words_and_byte_tokens() -> None:
    tokens = load_tokens(folder("moonshine-tiny-en") / "tokenizer.bin")
    assert tokens[:3] == [b"<unk>", b"<s>", b"</s>"]
    assert tokens[3 + 0x41] == b"A"  # the byte-fallback tokens come first, in byte order
    ids = [tokens.index("\u2581turn".encode()), tokens.index("\u2581on".encode())]
    assert detokenize(tokens, [1, *ids, 2]) == "turn on"  # <s> and </s> say nothing


def test_a_token_of_128_bytes_or_more_has_a_two_byte_length(tmp_path: Path) -> None:
    long = "\u2581" + "x" * 200  # 203 bytes: 0xCB 0x01, low seven bits first
    data = b"".join(bytes([len(t)]) + t for t in (b"<unk>", b"<s>", b"</s>"))
    data += bytes([0x80 | (203 & 0x7F), 203 >> 7]) + long.encode() + b"\x02ok"
    (tmp_path / "tokenizer.bin").write_bytes(data)
    tokens = load_tokens(tmp_path / "tokenizer.bin")
    assert tokens[3:] == [long.encode(), b"ok"]
    assert detokenize(tokens, [3, 4]) == "x" * 200 + "ok"


def test_a_file_that_is_not_a_tokenizer_is_a_model_error(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.bin").write_bytes(b"\x03abc\x03def")
    with pytest.raises(AsrModelError):
        load_tokens(tmp_path / "tokenizer.bin")


def test_the_architecture_is_told_by_the_encoder() -> None:
    assert model_arch(folder("moonshine-tiny-en")) == "tiny"
    assert model_arch(folder("moonshine-base-en")) == "base"
    tiny = OrtMoonshine(folder("moonshine-tiny-en"))
    base = OrtMoonshine(folder("moonshine-base-en"))
    assert (tiny.layers, tiny.hidden) == (6, 288)
    assert (base.layers, base.hidden) == (8, 416)


def test_base_en_runs_on_onnxruntime_by_default(base_engine: MoonshineEngine) -> None:
    assert (base_engine.arch, base_engine.backend) == ("base", "onnxruntime")


def in_a_quiet_room(pcm: Pcm) -> Pcm:
    """0.3 s before and 0.5 s after, in white noise 50 dB below the speech: a microphone is
    never digitally silent (and base-en, given 0.3 s of exact zeros first, hears "turn" as
    "purn": docs/hearing.md)."""
    return place([(0.3, pcm)], 0.8 + len(pcm) / SAMPLE_RATE, snr_db=50).audio


@pytest.mark.parametrize("text", ["turn on the kitchen light", "what is the weather like today"])
def test_base_en_hears_clear_piper_phrases_word_for_word(base_engine: MoonshineEngine, text: str) -> None:
    result = base_engine.transcribe(in_a_quiet_room(piper_speech(text)))
    assert result.text == text
    assert [w.word for w in result.words] == text.split()
    assert result.words[0].start >= 0.25  # the 0.3 s of silence before the speech


@pytest.mark.parametrize(("text", "voice"), [("what time is it", "en-us"),
                                             ("turn on the kitchen light", "en-gb")])
def test_tiny_en_on_onnxruntime_hears_clear_phrases(tiny_ort_engine: MoonshineEngine, text: str,
                                                    voice: str) -> None:
    assert tiny_ort_engine.backend == "onnxruntime"
    assert tiny_ort_engine.transcribe(padded(espeak_speech(text, voice))).text == text
    assert tiny_ort_engine.transcribe(padded(piper_speech(text))).text == text


def test_silence_gives_no_words(base_engine: MoonshineEngine) -> None:
    assert base_engine.transcribe(np.zeros(SAMPLE_RATE, dtype=np.int16)).empty


def test_an_onnxruntime_decode_leaves_the_gil_to_other_threads(base_engine: MoonshineEngine) -> None:
    """While the worker decodes 6 s of speech with base-en, a Python thread keeps running."""
    audio = padded(np.concatenate([piper_speech("please tell me a long story about the sea")] * 3))
    ticks = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    spinner = threading.Thread(target=spin)
    spinner.start()
    started = time.monotonic()
    base_engine.decode(audio).result()
    elapsed = time.monotonic() - started
    stop.set()
    spinner.join()
    assert elapsed > 0.1  # a real decode, long enough to count ticks over
    assert ticks >= 0.3 * elapsed / 0.0011, f"{ticks} ticks in {elapsed:.2f} s"


def test_long_audio_is_cut_into_pieces_at_its_pauses() -> None:
    rng = np.random.default_rng(1)
    audio = (rng.standard_normal(50 * SAMPLE_RATE) * 3000).astype(np.int16)
    for pause_s in (15, 32):  # 0.2 s of silence: where the cuts belong
        audio[pause_s * SAMPLE_RATE:pause_s * SAMPLE_RATE + 3200] = 0
    cuts = pieces(audio, 0, len(audio))
    assert [c[0] for c in cuts[1:]] == [c[1] for c in cuts[:-1]]  # nothing lost between pieces
    assert all(b - a <= MAX_PIECE_S * SAMPLE_RATE for a, b in cuts)
    assert [round(b / SAMPLE_RATE) for _, b in cuts[:-1]] == [15, 32]
    assert pieces(audio, 100, 10 * SAMPLE_RATE) == [(100, 10 * SAMPLE_RATE)]


def test_a_recording_longer_than_one_piece_is_heard_whole(tiny_ort_engine: MoonshineEngine) -> None:
    phrases = ["turn on the kitchen light", "what is the weather like today", "please tell me a story"]
    gap = np.zeros(4 * SAMPLE_RATE, dtype=np.int16)
    audio = np.concatenate([part for text in phrases for part in (piper_speech(text), gap)] * 2)
    assert len(audio) > MAX_PIECE_S * SAMPLE_RATE
    result = tiny_ort_engine.transcribe(audio)
    assert result.text == " ".join(phrases * 2)
    times = [t for w in result.words for t in (w.start, w.end)]
    assert times == sorted(times) and times[-1] <= len(audio) / SAMPLE_RATE


def test_tiny_en_says_which_words_it_weighed_where_it_stopped(tiny_ort_engine: MoonshineEngine) -> None:
    """tiny-en leaves a trailing "uh" out of the text it writes, yet weighs writing it; a
    finished request leaves nothing that would hold the turn (turn_text reads both)."""
    broken = tiny_ort_engine.decode(padded(piper_speech("Can you play, uh,"))).result()
    assert broken.text == "can you play"
    weighed = dict(broken.next_words)
    assert weighed.get("uh", 0.0) >= LEFT_OUT_WEIGHT, broken.next_words
    assert read_text(broken.text, broken.mark, broken.next_words).unfinished == Unfinished.FILLER
    assert read_text(broken.text, broken.mark).unfinished is None  # the written words alone
    finished = tiny_ort_engine.decode(padded(piper_speech("Set a timer for ten minutes."))).result()
    assert finished.text == "set a timer for ten minutes"
    assert not read_text(finished.text, finished.mark, finished.next_words).mid_thought
    assert all(0.0 < p < 1.0 for _, p in broken.next_words + finished.next_words)
