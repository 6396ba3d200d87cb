"""The daemon: everything the config enables, started, supervised and stopped.

``edgevoice run`` and ``edgevoice demo`` both run a :class:`Daemon`. It opens the
audio devices, tells systemd it is ready (``READY=1``) once they are open, pings
the watchdog from the event loop, shuts down cleanly on SIGTERM/SIGINT (reply
cancelled, devices closed, ``STOPPING=1``) and re-reads its config on SIGHUP,
applying what it can without a restart. It implements the device side of agent
tools (:class:`DeviceActions`) and of MQTT fleet commands (``CommandTarget``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from pathlib import Path
from typing import Any

from edgevoice import __version__
from edgevoice.audio.backend import AudioBackend
from edgevoice.audio.duplex import DuplexLoop
from edgevoice.audio.earcons import Earcons
from edgevoice.audio.speaker import Speaker
from edgevoice.device.agents import AgentClient, DeviceActions, build_agent
from edgevoice.device.audio_io import open_backend
from edgevoice.device.config import Config, LoadedConfig, load_config, revision, to_dict
from edgevoice.device.config.loader import default_paths, secret_values
from edgevoice.device.config.schema import GpioOutputConfig
from edgevoice.device.events import Event, EventBus, EventType
from edgevoice.device.gpio import ButtonEvent, ButtonSettings, LedPattern, StatusLed, open_gpio
from edgevoice.device.gpio_outputs import close_outputs
from edgevoice.device.identity import load_identity
from edgevoice.device.logs import scrub_secrets
from edgevoice.device.runtime.bargein import build_barge_in
from edgevoice.device.runtime.conversation import Conversation, ConversationSettings
from edgevoice.device.runtime.frontend import FrontEnd
from edgevoice.device.runtime.state import ListenMode, State
from edgevoice.device.runtime.tasks import AudioClock, cancel_task
from edgevoice.device.sdnotify import Notifier
from edgevoice.device.speaking import build_synthesizer, reply_speaker

_LOGGER = logging.getLogger(__name__)

LED_FOR_STATE = {
    State.IDLE: LedPattern.OFF,
    State.LISTENING: LedPattern.LISTENING,
    State.THINKING: LedPattern.THINKING,
    State.SPEAKING: LedPattern.SPEAKING,
    State.MUTED: LedPattern.MUTED,
}
RESTART_EXIT_CODE = 75  # EX_TEMPFAIL: systemd's Restart=on-failure starts us again


def conversation_settings(config: Config) -> ConversationSettings:
    return ConversationSettings(
        mode=ListenMode(config.listen.mode),
        push_to_talk=config.listen.button_mode == "hold",
        follow_up_s=config.listen.follow_up_s,
        session_idle_reset_s=config.conversation.session_idle_reset_s,
        failure_phrase=config.conversation.failure_phrase,
        log_transcripts=config.conversation.log_transcripts,
    )


class Daemon(DeviceActions):
    """One device: audio, hearing, agent, speaking, GPIO, MQTT, systemd."""

    def __init__(
        self,
        loaded: LoadedConfig,
        *,
        config_path: Path | None = None,
        overrides: tuple[str, ...] = (),
        backend: AudioBackend | None = None,
        pin_factory: Any = None,
        on_event: Callable[[Event], None] | None = None,
        root: Path = Path("/"),
        notifier: Notifier | None = None,
    ) -> None:
        self.loaded = loaded
        self.config = loaded.config
        self.config_path = config_path
        self.overrides = overrides
        self.root = root
        self.bus = EventBus()
        self.notifier = notifier or Notifier()
        self._backend_override = backend
        self._pin_factory = pin_factory
        self._on_event = on_event
        self._stop = asyncio.Event()
        self._restart_requested = False
        self._outputs: dict[str, Any] = {}
        self._led: StatusLed | None = None
        self._ring: Any = None
        self._closers: list[Callable[[], Any]] = []
        self._in_flight: set[asyncio.Task[Any]] = set()
        self.device_id = ""
        self.backend: AudioBackend | None = None
        self.speaker: Speaker | None = None
        self.duplex: DuplexLoop | None = None
        self.conversation: Conversation | None = None
        self.agent: AgentClient | None = None
        self.mqtt: Any = None
        self.console: Any = None
        self.operator_desk: Any = None
        self._agent_swap: asyncio.Future[None] | None = None
        self.ready = asyncio.Event()

    # --- life cycle -------------------------------------------------------------------

    async def run(self) -> int:
        """Run until stopped (signal, ``stop()``, or a finite audio source ending)."""
        loop = asyncio.get_running_loop()
        self.bus.bind(loop)
        if self._on_event is not None:
            self.bus.subscribe(self._on_event)
        self.bus.subscribe(self._log_event)
        try:
            await self._start(loop)
            await self._supervise()
        finally:
            await self._shutdown()
        return RESTART_EXIT_CODE if self._restart_requested else 0

    def stop(self) -> None:
        self._stop.set()

    async def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        config = self.config
        identity = load_identity(config.device, self.root)
        self.device_id = identity.device_id
        backend = self._backend_override or open_backend(config.audio, config.room, config.wav)
        self.backend = backend
        self.speaker = Speaker(backend.period_samples, config.audio.volume)
        # Engines load before the devices open, so READY=1 means ready to talk.
        front = await asyncio.to_thread(build_front_end, config)
        self._closers.append(front.close)
        synthesizer = await asyncio.to_thread(build_synthesizer, config.tts, config.models.dir or None)
        self._closers.append(synthesizer.close)
        # The first synthesis pays for onnxruntime's lazy set-up, and vosk expands its graph
        # as speech visits it: warm both (the ASR with the device's own voice), so neither
        # cost lands on the first turn.
        await asyncio.to_thread(_warm_up, synthesizer, front)
        # Memory: give the heap freed while loading and warming the engines back to the OS
        # (malloc_trim, ~-25 MB; see device/memory.py and docs/runtime.md "Memory").
        from edgevoice.device.memory import release_memory

        await asyncio.to_thread(release_memory)
        replies = reply_speaker(self.speaker, synthesizer, self.bus, config.tts)
        earcons = Earcons(self.speaker, enabled_earcons(config), config.earcons.level)
        if config.console.enabled:
            from edgevoice.device.console.desk import OperatorDesk

            self.operator_desk = OperatorDesk(config.operator.quick_replies)
        self.agent = build_agent(config, self, operator_desk=self.operator_desk)
        self.conversation = Conversation(
            bus=self.bus,
            front=front,
            speaker=self.speaker,
            replies=replies,
            agent=self.agent,
            earcons=earcons,
            barge_in=build_barge_in(config.barge_in, front.canceller, self._on_barge_in_mode,
                                    front.listener.vad.engine),
            settings=conversation_settings(config),
            clock=AudioClock(self._audio_time),
            on_state=self._on_state,
        )
        self.duplex = DuplexLoop(
            backend,
            self.speaker,
            queue_periods=config.audio.queue_periods,
            reconnect_max_s=config.audio.reconnect_max_s,
            on_event=self._on_audio_event,
        )
        self._open_gpio(loop)
        self.duplex.start(loop)  # opens the devices; a wrong name raises here
        self._install_signals(loop)
        if config.console.enabled:  # before READY=1: a kiosk screen may be waiting for it
            await self._start_console()
        self.ready.set()
        self.notifier.ready(f"listening ({config.listen.mode})")
        self.bus.emit(
            EventType.SESSION_READY,
            device_id=self.device_id,
            session_id=self.agent.session_id,
            provider=self.agent.provider,
            listen_mode=config.listen.mode,
            audio=backend.name,
            version=__version__,
        )
        if config.mqtt.url:
            await self._start_mqtt()
        if config.conversation.greeting:
            await self.conversation.say(config.conversation.greeting)

    async def _supervise(self) -> None:
        assert self.conversation is not None and self.duplex is not None
        conversation = asyncio.create_task(self.conversation.run(self.duplex), name="conversation")
        watchdog = asyncio.create_task(self.notifier.run_watchdog(), name="watchdog")
        stop = asyncio.create_task(self._stop.wait(), name="stop")
        try:
            done, _ = await asyncio.wait({conversation, stop}, return_when=asyncio.FIRST_COMPLETED)
            if conversation in done and conversation.exception() is not None:
                raise conversation.exception()  # type: ignore[misc]
            # Otherwise: stopped, or a finite source (a WAV file, a room with a duration)
            # ended; with no audio thread nothing more can be heard or played.
        finally:
            for task in (conversation, watchdog, stop):
                await cancel_task(task)

    async def _shutdown(self) -> None:
        self.notifier.stopping()
        for task in list(self._in_flight):
            await cancel_task(task)
        if self.mqtt is not None:
            with contextlib.suppress(Exception):
                await self.mqtt.stop()
        if self.console is not None:
            with contextlib.suppress(Exception):
                await self.console.stop()
        if self.conversation is not None:
            await self.conversation.close()
        if self.duplex is not None:
            await asyncio.to_thread(self.duplex.stop)
        if self.agent is not None:
            await self.agent.aclose()
        close_outputs(self._outputs)
        for close in reversed(self._closers):
            with contextlib.suppress(Exception):
                close()
        self.notifier.close()

    def _install_signals(self, loop: asyncio.AbstractEventLoop) -> None:
        if sys.platform == "win32":
            return
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, self.stop)
            loop.add_signal_handler(signal.SIGINT, self.stop)
            loop.add_signal_handler(signal.SIGHUP, self._reload_soon)
            self._closers.append(lambda: _remove_signals(loop))

    def _reload_soon(self) -> None:
        self._spawn(self.reload())

    # --- GPIO -------------------------------------------------------------------------

    def _open_gpio(self, loop: asyncio.AbstractEventLoop) -> None:
        gpio = self.config.gpio
        if not gpio.enabled:
            return
        button = None
        if gpio.button_pin >= 0:
            button = ButtonSettings(gpio.button_pin, gpio.button_pull_up, gpio.bounce_ms,
                                    gpio.reset_hold_s, gpio.double_press_ms)
        factory = self._pin_factory or _named_pin_factory(gpio.pin_factory)
        opened = open_gpio(button, gpio.led_pin if gpio.led_pin >= 0 else None, self._on_button, loop,
                           led_brightness=gpio.led_brightness, pin_factory=factory)
        if opened is None:
            if gpio.led_ring == "apa102":
                self._open_ring(factory)
            return
        push, led = opened
        self._led = led
        for device in (push, led):
            if device is not None:
                self._closers.append(device.close)
        if gpio.led_ring == "apa102":
            self._open_ring(factory)

    def _open_ring(self, factory: Any) -> None:
        from edgevoice.device.ledring import LedRing

        gpio = self.config.gpio
        try:
            self._ring = LedRing(gpio.led_ring_count, gpio.led_brightness, factory)
        except Exception as err:
            _LOGGER.warning("LED ring disabled: SPI is not available (%s: %s)", type(err).__name__, err)
            return
        self._closers.append(self._ring.close)

    def _on_button(self, event: ButtonEvent, data: dict[str, Any]) -> None:
        self.bus.emit(str(event), **data)
        conversation = self.conversation
        if conversation is None:
            return
        if event is ButtonEvent.PRESSED:
            self._spawn(conversation.button_pressed())
        elif event is ButtonEvent.RELEASED:
            self._spawn(conversation.button_released())
        elif event is ButtonEvent.HELD and conversation.settings.mode is not ListenMode.BUTTON:
            # The running mode: listen.mode changes only with a restart.
            self._spawn(conversation.reset())
        elif event is ButtonEvent.DOUBLE_PRESSED and self.config.gpio.double_press_mutes:
            self._spawn(self.mute(not conversation.muted))

    def _audio_time(self) -> float:
        return self.duplex.audio_time_s if self.duplex is not None else 0.0

    def _on_audio_event(self, type_: str, data: dict[str, Any]) -> None:
        self.bus.emit(type_, **data)

    def _on_barge_in_mode(self, mode: Any) -> None:
        # Without a working echo reference the device must not interrupt itself: say so.
        self.bus.emit(EventType.BARGE_IN_MODE, mode=str(mode))

    def _on_state(self, state: State) -> None:
        for led in (self._led, self._ring):
            if led is not None:
                led.show(LED_FOR_STATE[state])

    def _spawn(self, coro: Any) -> None:
        """Run ``coro`` as a task the daemon keeps a reference to (and cancels at shutdown)."""
        task = asyncio.ensure_future(coro)
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    # --- MQTT -------------------------------------------------------------------------

    async def _start_mqtt(self) -> None:
        from edgevoice.device.mqtt.bridge import MqttBridge

        self.mqtt = MqttBridge(self.config.mqtt, self.config.device, self.device_id, self.bus,
                               FleetCommands(self), self.telemetry)
        await self.mqtt.start()

    # --- the console ----------------------------------------------------------------------

    async def _start_console(self) -> None:
        from edgevoice.device.console.errors import ConsoleError
        from edgevoice.device.console.server import ConsoleServer
        from edgevoice.device.identity import state_dir

        try:
            self.console = ConsoleServer(
                self.config.console, self.config.operator, bus=self.bus, target=FleetCommands(self),
                desk=self.operator_desk, device_id=self.device_id,
                state_dir=state_dir(self.config.device, self.root), telemetry=self.telemetry,
                operator_words=lambda: self.config.llm.provider == "operator",
            )
            await self.console.start()
        except ConsoleError as err:
            # The device still talks; only its screen and operator desk are missing.
            _LOGGER.error("console not started: %s", err.message)
            self.bus.emit(EventType.ERROR, source="console", code=err.code, message=err.message)
            self.console = None

    def telemetry(self) -> Mapping[str, Any]:
        data: dict[str, Any] = {}
        if self.conversation is not None:
            data.update(self.conversation.telemetry())
        if self.duplex is not None:
            stats = self.duplex.stats.as_dict()
            data["xruns"] = stats.get("overruns", 0) + stats.get("underruns", 0)
            data["audio"] = stats
        return data

    # --- DeviceActions (agent tools) and CommandTarget (fleet commands) ----------------

    async def set_volume(self, level: float) -> float:
        assert self.speaker is not None
        self.speaker.volume = level
        self.bus.emit(EventType.VOLUME_CHANGED, level=self.speaker.volume)
        return self.speaker.volume

    async def end_conversation(self) -> None:
        if self.conversation is not None:
            self.conversation.end_after_reply()

    async def start_over(self) -> None:
        if self.conversation is not None:
            self._spawn(self.conversation.reset())

    async def gpio_output(self, output: GpioOutputConfig, on: bool | None) -> bool:
        from edgevoice.device.gpio_outputs import drive_output

        return await drive_output(self._outputs, output, on, self._pin_factory)

    async def say(self, text: str) -> None:
        if self.conversation is not None:
            await self.conversation.say(text)

    async def interrupt(self) -> None:
        if self.conversation is not None:
            await self.conversation.interrupt()

    async def reset_session(self) -> None:
        if self.conversation is not None:
            await self.conversation.reset()

    async def mute(self, mic: bool) -> None:
        if self.conversation is not None:
            await self.conversation.set_muted(mic)
        self.bus.emit(EventType.MIC_MUTED, muted=mic)

    async def get_config(self) -> dict[str, Any]:
        return to_dict(self.config, redact=True)

    async def set_config(self, patch: dict[str, Any]) -> dict[str, Any]:
        from edgevoice.device.config.loader import parse_override, read_toml
        from edgevoice.device.config.persist import persist_patch

        target = self._writable_config_path()
        below = [(str(p), read_toml(p)) for p in self._lower_layers(target)]
        above = [("--set", parse_override(text)) for text in self.overrides]
        result = await asyncio.to_thread(persist_patch, target, patch, below=below, above=above)
        self._apply_live(result.config)
        return {
            "changed": list(result.changed),
            "restart_required": result.restart_required,
            "restart_keys": list(result.restart_keys),
            "revision": result.revision,
            "path": str(target),
        }

    async def reload(self) -> None:
        self.notifier.reloading()
        try:
            loaded = await asyncio.to_thread(load_config, self.config_path, self.overrides)
        except Exception as err:
            _LOGGER.error("reload failed, keeping the running config: %s", err)
            self.bus.emit(EventType.ERROR, source="config", code="config_invalid", message=str(err))
            return
        finally:
            self.notifier.ready()
        restart = self._apply_live(loaded.config)
        self.loaded = loaded
        self.bus.emit(EventType.CONFIG_RELOADED, revision=revision(loaded.config), restart_keys=restart)

    async def restart(self) -> None:
        self._restart_requested = True
        loop = asyncio.get_running_loop()
        loop.call_later(0.5, self.stop)  # let the command's answer go out first

    async def fetch_model(self, name: str) -> dict[str, Any]:
        from edgevoice.models import fetch_model

        location = await asyncio.to_thread(fetch_model, name, self.config.models.dir or None)
        return location.as_dict()

    async def state(self) -> dict[str, Any]:
        conversation = self.conversation
        return {
            "state": str(conversation.state) if conversation else "starting",
            "volume": self.speaker.volume if self.speaker else self.config.audio.volume,
            "mic_muted": bool(conversation and conversation.muted),
            "provider": self.config.llm.provider,
            "session_id": self.agent.session_id if self.agent else None,
            "config_revision": revision(self.config),
        }

    # --- config -------------------------------------------------------------------------

    def _apply_live(self, new: Config) -> list[str]:
        """Apply what can change without a restart (the table in ``live_config``); return
        the changed keys that need one."""
        from edgevoice.device.runtime.live_config import apply_live

        old = self.config
        self.config = new
        scrub_secrets(secret_values(new))
        restart = apply_live(self, old, new)
        if restart:
            _LOGGER.warning("config changes that need a restart: %s", ", ".join(restart))
        return restart

    def swap_agent_soon(self, agent: AgentClient) -> None:
        """Put ``agent`` (rebuilt for new settings) in place once no reply is in flight;
        it takes over the session. A newer swap replaces one still waiting."""
        from edgevoice.device.runtime.live_config import swap_agent_when_idle

        if self._agent_swap is not None and not self._agent_swap.done():
            self._agent_swap.cancel()
        self._agent_swap = asyncio.ensure_future(swap_agent_when_idle(self, agent))
        self._in_flight.add(self._agent_swap)
        self._agent_swap.add_done_callback(self._in_flight.discard)

    def _writable_config_path(self) -> Path:
        if self.config_path is not None:
            return self.config_path
        system, user = default_paths()
        return system if os.geteuid() == 0 else user

    def _lower_layers(self, target: Path) -> list[Path]:
        if self.config_path is not None:
            return []
        paths = default_paths()
        return [p for p in paths[: paths.index(target)] if p.exists()] if target in paths else []

    # --- events to the log --------------------------------------------------------------

    def _log_event(self, event: Event) -> None:
        if event.type in (EventType.ERROR, EventType.AUDIO_DEVICE_LOST):
            visible = event if self.config.conversation.log_transcripts else event.without_personal_data()
            if visible is not None:
                _LOGGER.warning("%s %s", event.type, visible.data)
        elif event.type == EventType.AUDIO_DEVICE_RESTORED:
            _LOGGER.info("%s %s", event.type, event.data)


class FleetCommands:
    """The daemon as MQTT fleet commands see it (``CommandTarget``)."""

    def __init__(self, daemon: Daemon) -> None:
        self._daemon = daemon

    async def say(self, text: str) -> None:
        await self._daemon.say(text)

    async def interrupt(self) -> None:
        await self._daemon.interrupt()

    async def reset_session(self) -> None:
        await self._daemon.reset_session()

    async def set_volume(self, level: float) -> None:
        await self._daemon.set_volume(level)

    async def mute(self, mic: bool) -> None:
        await self._daemon.mute(mic)

    async def get_config(self) -> dict[str, Any]:
        return await self._daemon.get_config()

    async def set_config(self, patch: dict[str, Any]) -> dict[str, Any]:
        return await self._daemon.set_config(patch)

    async def reload(self) -> None:
        await self._daemon.reload()

    async def restart(self) -> None:
        await self._daemon.restart()

    async def fetch_model(self, name: str) -> dict[str, Any]:
        return await self._daemon.fetch_model(name)

    async def state(self) -> dict[str, Any]:
        return await self._daemon.state()


def build_front_end(config: Config) -> FrontEnd:
    """The echo canceller and the hearing pipeline from config (loads the models)."""
    from edgevoice.device.aec_setup import build_canceller
    from edgevoice.device.hearing import build_listener

    canceller = build_canceller(config.aec)
    # The canceller's output lags the microphone (edgevoice's suppressor: one period);
    # start the listener's clock that much earlier so its timestamps are the mic's.
    return FrontEnd(build_listener(config, origin_s=-canceller.latency_ms / 1000.0), canceller)


def _warm_up(synthesizer: Any, front: FrontEnd) -> None:
    audio = synthesizer.engine.synthesize("Hello, what time is it today?")
    asr = front.listener.asr
    if asr is not None:
        asr.warm_up(audio.pcm)


def enabled_earcons(config: Config) -> list[str]:
    earcons = config.earcons
    return [name for name in ("wake", "listening", "thinking", "error", "reset") if getattr(earcons, name)]


def _named_pin_factory(name: str) -> Any:
    if not name:
        return None
    try:
        module, cls = {
            "lgpio": ("gpiozero.pins.lgpio", "LGPIOFactory"),
            "rpigpio": ("gpiozero.pins.rpigpio", "RPiGPIOFactory"),
            "pigpio": ("gpiozero.pins.pigpio", "PiGPIOFactory"),
            "native": ("gpiozero.pins.native", "NativeFactory"),
        }[name]
        return getattr(import_module(module), cls)()
    except Exception as err:
        _LOGGER.warning("GPIO pin factory %r unavailable (%s); letting gpiozero choose", name, err)
        return None


def _remove_signals(loop: asyncio.AbstractEventLoop) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with contextlib.suppress(Exception):
            loop.remove_signal_handler(sig)
