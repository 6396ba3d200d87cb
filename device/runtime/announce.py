"""Announcements and questions started from outside (MQTT ``announce`` and ``listen``).

An announcement waits for the turn in progress to end (the person is not cut off
mid-sentence, the reply is not cut off mid-word) unless its priority is ``urgent``,
which interrupts the reply or drops the half-heard turn. It plays the announce
earcon, then the text (spoken by the device's voice, as a ``say``) or the audio at
``url`` (a WAV fetched over HTTP), and with ``then_listen`` opens a turn without the
wake word: what Home Assistant's "ask question" / "start conversation" automations
need. Announcements play one at a time, in the order they came.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgevoice.audio.speaking.earcons import Earcon, earcon_pcm
from edgevoice.device.mqtt.remote import BusyError
from edgevoice.device.runtime.state import State
from edgevoice.device.runtime.tasks import wait_event
from edgevoice.device.runtime.turns import new_id, once
from edgevoice.device.speaking.reply import ReplyStatus
from edgevoice.errors import EdgeVoiceError

if TYPE_CHECKING:
    from edgevoice.device.runtime.daemon import Daemon

_LOGGER = logging.getLogger(__name__)

POLL_S = 0.02
MAX_AUDIO_BYTES = 20 * 1024 * 1024
FETCH_TIMEOUT_S = 15.0


class AnnounceError(EdgeVoiceError):
    code = "announce_failed"


@dataclass(frozen=True, slots=True)
class Announcement:
    text: str = ""
    url: str = ""
    then_listen: bool = False
    urgent: bool = False
    wait_s: float = 120.0


class Announcer:
    """Carries out announcements and remote ``listen`` on a running daemon."""

    def __init__(self, daemon: Daemon) -> None:
        self._daemon = daemon
        self._lock = asyncio.Lock()

    def _parts(self) -> tuple[Any, Any]:
        conversation, speaker = self._daemon.conversation, self._daemon.speaker
        if conversation is None or speaker is None:
            raise BusyError("the device is still starting; try again in a moment")
        return conversation, speaker

    async def announce(self, item: Announcement) -> dict[str, Any]:
        conversation, speaker = self._parts()
        audio = await self._fetch(item.url) if item.url else None  # before waiting: fail early
        started = time.monotonic()  # waited_s counts the queue behind earlier announcements too
        async with self._lock:
            interrupted = waited_for = ""
            if item.urgent:
                if conversation.state in (State.THINKING, State.SPEAKING):
                    interrupted = str(conversation.state)
                    await conversation.interrupt()
                elif conversation.state is State.LISTENING:
                    # Drop the half-heard turn the way a mute does (the state machine's
                    # abandon), and listen again at once.
                    interrupted = "listening"
                    await conversation.set_muted(True)
                    await conversation.set_muted(False)
            else:
                waited_for = _engaged_in(conversation, speaker)
                idle = await self._until(lambda: not _engaged_in(conversation, speaker), item.wait_s)
                if not idle:
                    raise BusyError(f"the device was still {conversation.state} after {item.wait_s:g} s; "
                                    "send the announcement again, or with priority \"urgent\"")
            waited = time.monotonic() - started
            speaker.enqueue(earcon_pcm(Earcon.ANNOUNCE, self._daemon.config.earcons.level),
                            utterance_id="earcon:announce", kind="earcon")
            muted = conversation.state is State.MUTED
            if audio is not None:
                speaker.enqueue(audio, utterance_id="announce-audio", kind="earcon")
                await self._until(lambda: not speaker.is_playing())
                heard_out = muted or conversation.state is State.IDLE
            elif muted:
                # The mute is the microphone's, not the loudspeaker's, but the state machine
                # takes no `say` while muted (it would answer "played" and speak nothing):
                # speak past it. Nobody can barge in, the listener is off.
                outcome = await conversation.replies.speak(once(item.text), new_id("announce"))
                heard_out = outcome.status is ReplyStatus.COMPLETED
            else:
                await conversation.say(item.text)
                await self._until(lambda: conversation.state not in (State.THINKING, State.SPEAKING))
                heard_out = conversation.state is State.IDLE
            listening = False
            if item.then_listen and heard_out:
                listening = await self._open_turn(conversation)
        return {"played": True, "waited_s": round(waited, 3), "waited_for": waited_for or None,
                "interrupted": interrupted or None, "barged_in": not heard_out, "listening": listening}

    async def listen(self) -> dict[str, Any]:
        conversation, _ = self._parts()
        async with self._lock:
            if conversation.state is not State.IDLE:
                raise BusyError(f"the device is {conversation.state}; listen opens a turn only when idle")
            await self._open_turn(conversation)
        return {"listening": True}

    @staticmethod
    async def _open_turn(conversation: Any) -> bool:
        """A turn without the wake word, as a button press while idle opens one: the
        wake earcon, the listener's turn with pre-roll, ended by the VAD."""
        if conversation.state is not State.IDLE:
            return False
        await conversation.listen()
        return _state_of(conversation) is State.LISTENING  # listen() moved it on

    async def _until(self, done: Callable[[], bool], timeout_s: float | None = None) -> bool:
        """Wait until ``done()``; re-checked on every bus event (state changes) and every
        POLL_S (the speaker draining has no event). False when ``timeout_s`` passed."""
        changed = asyncio.Event()
        unsubscribe = self._daemon.bus.subscribe(lambda _event: changed.set())
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            while not done():
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                changed.clear()
                await wait_event(changed, POLL_S)
            return True
        finally:
            unsubscribe()

    @staticmethod
    async def _fetch(url: str) -> Any:
        import aiohttp

        from edgevoice.audio.io.wav import read_wav

        try:
            timeout = aiohttp.ClientTimeout(total=FETCH_TIMEOUT_S)
            async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as response:
                if response.status != 200:
                    raise AnnounceError(f"fetching {url} answered HTTP {response.status}; check the url")
                body = await response.content.read(MAX_AUDIO_BYTES + 1)
        except (aiohttp.ClientError, TimeoutError) as err:
            raise AnnounceError(f"cannot fetch {url}: {err or type(err).__name__}; check the url") from err
        if len(body) > MAX_AUDIO_BYTES:
            raise AnnounceError(f"{url} is larger than {MAX_AUDIO_BYTES // (1024 * 1024)} MB")

        def decode() -> Any:
            with tempfile.TemporaryDirectory(prefix="edgevoice-announce-") as folder:
                path = Path(folder) / "announce.wav"
                path.write_bytes(body)
                pcm, _ = read_wav(path)
                return pcm

        try:
            return await asyncio.to_thread(decode)
        except EdgeVoiceError as err:
            raise AnnounceError(f"{url} is not a PCM WAV file the device can play ({err.message}); "
                                "announce WAV audio or use text") from err


def _engaged_in(conversation: Any, speaker: Any) -> str:
    """What a normal announcement must wait for: the state of the turn in progress
    ("listening" also while idle with the listener's turn open, "speaking" while an
    earcon still plays), or "" when the device is free (idle, or muted: the mic is off,
    nobody can be cut off)."""
    state: State = conversation.state
    if state is State.MUTED:
        return ""
    if state is not State.IDLE:
        return str(state)
    if conversation.front.listener.in_turn:  # a plain read; the front-end thread writes it
        return str(State.LISTENING)
    return str(State.SPEAKING) if speaker.is_playing() else ""


def _state_of(conversation: Any) -> State:
    state: State = conversation.state
    return state
