"""A recognizer in a worker process, so its decoding never holds this process's GIL.

API::

    engine = WorkerAsrEngine(functools.partial(PocketsphinxEngine, path, model_name=name))
    session = engine.start()
    session.accept(pcm)      # ships the audio; returns the newest partial that came back
    result = session.finish_soon()   # asks for the final pass and returns at once
    result()                 # waits (without the GIL) for the final result; finish() = both
    engine.close()           # ends the process

pocketsphinx's bindings hold the GIL while they decode: 2-5 ms per 20 ms fed, 30-130 ms
for the final pass, and several times that on a starved CPU. In-process, every Python
thread waits through it: the VAD and the barge-in decision on the front-end thread,
the event loop streaming the agent's reply, the duplex loop's hand-over. Here the
decoder runs in a child process (``spawn``), at a lower CPU priority than the daemon
(:data:`WORKER_NICE`). A reader thread takes everything the child sends: :meth:`accept`
only sends the period down a pipe and picks up the newest partial that came back (so a
partial arrives a period or two later than in-process), and :meth:`finish_soon` sends the
end of the turn and returns at once, so the front end's thread goes on hearing while the
child makes the final pass (under a CPU quota that pass took pocketsphinx seconds, and
the front end's queue overflowed while it waited); the result is waited for, without the
GIL, only by whoever reads it.

The engine is built in the child from a picklable factory (a class and its arguments).
Failures come back as :class:`AsrError` with the child's message; a child that dies
raises ``AsrError`` code ``asr_worker_died`` on the next call.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from edgevoice.audio.blas_threads import use_one_blas_thread
from edgevoice.audio.frames import Pcm
from edgevoice.audio.hearing.asr import AsrEngine, AsrError, AsrResult, AsrSession

_LOGGER = logging.getLogger(__name__)
_START_TIMEOUT_S = 120.0
# How many steps nicer than the daemon the decoder runs: CFS gives a thread at nice +10 about
# a tenth of the CPU of one at the daemon's nice when both want it.
WORKER_NICE = 10

EngineFactory = Callable[[], AsrEngine]


def _serve(conn: Connection, factory: EngineFactory, nice: int = 0) -> None:
    """The child: build the engine, then answer the parent's messages until it closes."""
    if nice > 0:
        # Decoding is background work: under CPU pressure (a slow board, a CPU quota) the
        # front end (VAD, barge-in) and the event loop must win, or the duplex queue
        # overflows and audio is lost while the decoder would only have finished later.
        try:
            os.nice(nice)
        except OSError as err:  # a sandbox that forbids it: decode at the parent's priority
            _LOGGER.debug("recognizer worker could not lower its priority: %s", err)
    use_one_blas_thread()  # no spinning BLAS workers beside piper and the front end
    try:
        engine = factory()
    except Exception as err:
        conn.send(("error", 0, f"{type(err).__name__}: {err}"))
        return
    conn.send(("ok", (engine.name, engine.model_name, engine.language, engine.low_confidence,
                      engine.grammar)))
    session: AsrSession | None = None
    sid = 0
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, ConnectionResetError):  # the parent closed the pipe, or is gone
                break
            kind = message[0]
            try:
                if kind == "accept":
                    if session is not None and message[1] == sid:
                        text = session.accept(np.frombuffer(message[2], np.int16))
                        if text is not None:
                            conn.send(("partial", sid, text))
                elif kind == "start":
                    if session is not None:
                        session.cancel()
                    sid, session = message[1], engine.start()
                elif kind == "finish":
                    result = session.finish() if session is not None and message[1] == sid else None
                    session = None
                    conn.send(("final", message[1], result))
                elif kind == "cancel":
                    if session is not None and message[1] == sid:
                        session.cancel()
                        session = None
                elif kind == "grammar":
                    engine.set_grammar(message[1])
                    conn.send(("ok", engine.grammar))
                elif kind == "warm":
                    engine.warm_up(np.frombuffer(message[1], np.int16))
                    conn.send(("ok", None))
                elif kind == "close":
                    break
            except Exception as err:  # one failed call: report it, keep the engine
                session = None
                conn.send(("error", sid, f"{type(err).__name__}: {err}"))
    except (BrokenPipeError, ConnectionResetError):
        pass  # the parent went away mid-answer: nobody to tell
    finally:
        engine.close()


class WorkerAsrEngine(AsrEngine):
    """An :class:`AsrEngine` whose decoding runs in a child process (module docstring)."""

    def __init__(self, factory: EngineFactory, *, nice: int = WORKER_NICE) -> None:
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self._conn = parent
        self._process = context.Process(target=_serve, args=(child, factory, nice), daemon=True,
                                        name="edgevoice-asr")
        self._process.start()
        child.close()
        self._sid = 0
        self._session: _WorkerSession | None = None
        self._send_lock = threading.Lock()  # the front end, the event loop and start-up all send
        self._lock = threading.Lock()  # guards the tables the reader thread fills
        self._replies: queue.Queue[tuple[Any, ...] | None] = queue.Queue()  # answers to calls
        self._finals: dict[int, Future[AsrResult | None]] = {}
        self._partials: dict[int, str] = {}  # the newest partial per session, until taken
        self._errors: dict[int, str] = {}  # a session's failure, until its next call
        self._dead = False
        if not parent.poll(_START_TIMEOUT_S):
            self._process.kill()
            raise AsrError(f"the recognizer process did not start within {_START_TIMEOUT_S:.0f} s",
                           code="asr_worker_died")
        first = self._receive()
        if first[0] != "ok":
            self._process.join(5.0)
            raise AsrError(f"the recognizer failed: {first[2]}", code="asr_failed")
        name, model_name, language, low_confidence, grammar = first[1]
        self._reader = threading.Thread(target=self._read_replies, name="edgevoice-asr-reader",
                                        daemon=True)
        self._reader.start()
        super().__init__(model_name=model_name, language=language, low_confidence=low_confidence)
        self.name = name
        self._grammar: tuple[str, ...] = tuple(grammar)
        _LOGGER.info("recognizer %s (%s) runs in worker process %d", name, model_name, self._process.pid)

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def grammar(self) -> tuple[str, ...]:
        return self._grammar

    def set_grammar(self, phrases: Sequence[str]) -> None:
        self._send(("grammar", tuple(phrases)))
        self._grammar = tuple(self._reply())

    def start(self) -> AsrSession:
        self._sid += 1
        self._send(("start", self._sid))
        self._session = _WorkerSession(self, self._sid)
        return self._session

    def warm_up(self, pcm: Pcm) -> None:
        self._send(("warm", pcm.astype(np.int16, copy=False).tobytes()))
        self._reply()

    def close(self) -> None:
        if self._process.is_alive():
            try:
                with self._send_lock:
                    self._conn.send(("close",))
            except OSError:
                pass
            self._process.join(5.0)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(1.0)
        self._reader.join(2.0)  # it ends on the closed pipe
        self._conn.close()

    # --- the pipe ---------------------------------------------------------------------------

    def _send(self, message: tuple[Any, ...]) -> None:
        if self._dead:
            raise self._died()
        try:
            with self._send_lock:
                self._conn.send(message)
        except OSError as err:
            raise self._died() from err

    def _receive(self) -> tuple[Any, ...]:
        """The next message (waits in a pipe read, without the GIL)."""
        try:
            message: tuple[Any, ...] = self._conn.recv()
        except (EOFError, OSError) as err:
            raise self._died() from err
        return message

    def _read_replies(self) -> None:
        """The reader thread: route every message the child sends to whoever waits for it."""
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                break
            kind, key = message[0], message[1]
            with self._lock:
                if kind == "partial":
                    self._partials[key] = message[2]
                elif kind == "final":
                    future = self._finals.pop(key, None)
                    if future is not None:
                        future.set_result(message[2])
                elif kind == "error" and key != 0:  # a session's call failed
                    future = self._finals.pop(key, None)
                    failure = AsrError(f"the recognizer failed: {message[2]}", code="asr_failed")
                    if future is not None:
                        future.set_exception(failure)
                    else:
                        self._errors[key] = message[2]
                else:  # "ok", or an engine-wide "error": the answer to set_grammar / warm_up
                    self._replies.put(message)
        with self._lock:  # the child is gone: nobody will answer
            self._dead = True
            for future in self._finals.values():
                future.set_exception(self._died())
            self._finals.clear()
        self._replies.put(None)

    def _reply(self) -> Any:
        """The answer to a call (waits without the GIL)."""
        message = self._replies.get()
        if message is None:
            self._replies.put(None)  # the next caller learns it too
            raise self._died()
        if message[0] == "error":
            raise AsrError(f"the recognizer failed: {message[2]}", code="asr_failed")
        return message[1]

    def _expect_final(self, sid: int) -> Future[AsrResult | None]:
        """Register the wait for a session's final before asking for it (the reader may
        take the answer the moment the request is out)."""
        future: Future[AsrResult | None] = Future()
        with self._lock:
            if self._dead:
                future.set_exception(self._died())
            else:
                self._finals[sid] = future
        return future

    def _take_partial(self, sid: int) -> str | None:
        with self._lock:
            failed = self._errors.pop(sid, None)
            if failed is not None:
                raise AsrError(f"the recognizer failed: {failed}", code="asr_failed")
            return self._partials.pop(sid, None)

    def _forget(self, sid: int) -> None:
        with self._lock:
            self._partials.pop(sid, None)
            self._errors.pop(sid, None)

    def _died(self) -> AsrError:
        self._process.join(0.5)
        return AsrError(f"the recognizer process ended (exit code {self._process.exitcode}); "
                        "restart the daemon", code="asr_worker_died")


class _WorkerSession(AsrSession):
    def __init__(self, engine: WorkerAsrEngine, sid: int) -> None:
        self._engine = engine
        self._sid = sid
        self._open = True

    def accept(self, pcm: Pcm) -> str | None:
        if not self._open:
            raise AsrError("this recognition session is closed", code="asr_failed")
        engine = self._engine
        try:
            latest = engine._take_partial(self._sid)
        except AsrError:
            self._open = False
            raise
        engine._send(("accept", self._sid, pcm.astype(np.int16, copy=False).tobytes()))
        return latest

    def finish_soon(self) -> Callable[[], AsrResult]:
        if not self._open:
            raise AsrError("this recognition session is closed", code="asr_failed")
        self._open = False
        engine = self._engine
        try:
            engine._take_partial(self._sid)  # a failure reported before the end of the turn
        finally:
            engine._forget(self._sid)
        future = engine._expect_final(self._sid)
        engine._send(("finish", self._sid))

        def result() -> AsrResult:
            final = future.result()
            if final is None:
                raise AsrError("the recognizer had no session to finish", code="asr_failed")
            return final

        return result

    def finish(self) -> AsrResult:
        return self.finish_soon()()

    def cancel(self) -> None:
        if self._open:
            self._open = False
            self._engine._forget(self._sid)
            self._engine._send(("cancel", self._sid))
