"""The recognizer in a worker process (audio/hearing/asr_worker.py) with pocketsphinx's bundled model."""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from support.hearing_audio import frames, piper_speech

from edgevoice.audio.hearing.asr import AsrError
from edgevoice.audio.hearing.asr_pocketsphinx import PocketsphinxEngine
from edgevoice.audio.hearing.asr_worker import WORKER_NICE, WorkerAsrEngine
from edgevoice.models import ModelKind, resolve_model

PAD = np.zeros(4000, dtype=np.int16)
SENTENCE = "please turn on the kitchen light"


def _factory() -> functools.partial[PocketsphinxEngine]:
    loc = resolve_model("pocketsphinx-en-us", ModelKind.ASR)
    return functools.partial(PocketsphinxEngine, loc.path, model_name=loc.name, language=loc.language)


@pytest.fixture(scope="module")
def worker() -> Iterator[WorkerAsrEngine]:
    engine = WorkerAsrEngine(_factory())
    yield engine
    engine.close()


def test_the_worker_hears_what_the_engine_hears_in_process(worker: WorkerAsrEngine) -> None:
    audio = np.concatenate([PAD, piper_speech(SENTENCE), PAD])
    inline = _factory()()
    try:
        expected = inline.transcribe(audio, chunk_samples=320)
    finally:
        inline.close()
    session = worker.start()
    partials = []
    for chunk in frames(audio, 320):  # at real time, as the front end feeds it
        if partial := session.accept(chunk):
            partials.append(partial)
        time.sleep(0.02)
    result = session.finish()
    assert result.text == expected.text and result.text
    assert [w.word for w in result.words] == [w.word for w in expected.words]
    assert partials  # partial transcripts come back while the audio streams


def test_decoding_does_not_hold_this_process_gil(worker: WorkerAsrEngine) -> None:
    """While finish() waits for the decode, this process does no decoding (its thread
    sleeps in a pipe read) and a pure-Python thread keeps counting at its usual rate."""
    audio = np.concatenate([PAD, *[piper_speech(SENTENCE)] * 3, PAD])
    counts = [0]
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            counts[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        time.sleep(0.3)
        before_count, before = counts[0], time.perf_counter()
        time.sleep(0.3)
        rate_alone = (counts[0] - before_count) / (time.perf_counter() - before)
        session = worker.start()
        for chunk in frames(audio, 320):  # all at once: the worker has seconds to decode
            session.accept(chunk)
        began, cpu_began, count_began = time.perf_counter(), time.thread_time(), counts[0]
        session.finish()
        wall = time.perf_counter() - began
        cpu = time.thread_time() - cpu_began
        rate_during = (counts[0] - count_began) / wall
    finally:
        stop.set()
        counter.join()
    assert wall > 0.05  # there was decoding to wait for
    assert cpu < 0.2 * wall, f"{cpu * 1000:.0f} ms of CPU in this thread over {wall * 1000:.0f} ms"
    # held GIL: the counter stops (0); here it only shares the CPU with the worker and the load
    assert rate_during > 0.05 * rate_alone


def test_grammar_and_cancel_go_to_the_worker(worker: WorkerAsrEngine) -> None:
    worker.set_grammar(("turn on the light", "turn off the light"))
    try:
        assert worker.grammar == ("turn on the light", "turn off the light")
        session = worker.start()
        session.accept(np.zeros(1600, np.int16))
        session.cancel()
        with pytest.raises(AsrError, match="closed"):
            session.accept(np.zeros(160, np.int16))
        heard = worker.transcribe(np.concatenate([PAD, piper_speech("turn off the light"), PAD]))
        assert heard.text == "turn off the light"
    finally:
        worker.set_grammar(())


def test_a_failing_factory_is_a_clear_error() -> None:
    with pytest.raises(AsrError, match="the recognizer failed: .*no_such_model"):
        WorkerAsrEngine(functools.partial(PocketsphinxEngine, "/nonexistent/no_such_model"))


def _report_blas_threads() -> PocketsphinxEngine:
    """A factory that tells, through the worker's error path, how many threads the child's
    BLAS libraries were left with by the time the engine is built."""
    from threadpoolctl import threadpool_info

    threads = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    raise RuntimeError(f"blas threads {threads}")


def test_the_worker_holds_numpys_blas_to_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")  # what the child's OpenBLAS starts with
    with pytest.raises(AsrError, match=r"blas threads \[1\]"):
        WorkerAsrEngine(_report_blas_threads)


def test_a_worker_that_dies_is_reported() -> None:
    engine = WorkerAsrEngine(_factory())
    try:
        session = engine.start()
        assert engine.pid is not None
        os.kill(engine.pid, signal.SIGKILL)
        engine._process.join(5.0)
        with pytest.raises(AsrError) as info:
            for _ in range(50):  # the first sends may still fit in the pipe
                session.accept(np.zeros(160, np.int16))
            session.finish()
        assert info.value.code == "asr_worker_died"
    finally:
        engine.close()


def test_the_decoder_runs_nicer_than_the_daemon(worker: WorkerAsrEngine) -> None:
    """Under CPU pressure the front end and the event loop must win over the decoder: the
    worker process runs WORKER_NICE steps nicer than its parent."""
    assert worker.pid is not None
    assert os.getpriority(os.PRIO_PROCESS, worker.pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0)
                                                              + WORKER_NICE)


def test_finish_soon_returns_at_once_and_the_result_comes_when_decoded() -> None:
    """The front end asks for the final pass and goes on hearing: only the reader of the
    result waits for the decode, and what it reads is what the engine hears in-process
    (fresh engines on both sides: pocketsphinx adapts to what it heard before)."""
    audio = np.concatenate([PAD, *[piper_speech(SENTENCE)] * 3, PAD])
    inline = _factory()()
    try:
        expected = inline.transcribe(audio, chunk_samples=320)
    finally:
        inline.close()
    worker = WorkerAsrEngine(_factory())
    try:
        _finish_soon_on(worker, audio, expected.text)
    finally:
        worker.close()


def _finish_soon_on(worker: WorkerAsrEngine, audio: np.ndarray, expected: str) -> None:
    session = worker.start()
    for chunk in frames(audio, 320):  # all at once: the decoding is still to do
        session.accept(chunk)
    began = time.perf_counter()
    result = session.finish_soon()
    returned = time.perf_counter() - began
    heard = result()
    decoded = time.perf_counter() - began
    assert decoded > 0.05  # there was decoding to wait for
    assert returned < 0.2 * decoded, f"finish_soon took {returned * 1000:.0f} of {decoded * 1000:.0f} ms"
    assert heard.text == expected and heard.text
    with pytest.raises(AsrError, match="closed"):
        session.accept(np.zeros(160, np.int16))
