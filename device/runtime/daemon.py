"""The daemon: everything the config enables, started, supervised and stopped.

``edgevoice run`` and ``edgevoice demo`` both run a :class:`Daemon`. It opens the
audio devices, tells systemd it is ready (``READY=1``) once they are open, pings
the watchdog from the event loop, shuts down cleanly on SIGTERM/SIGINT (reply
cancelled, devices closed, ``STOPPING=1``) and re-reads its config on SIGHUP,
applying what it can without a restart. What surfaces may ask of it (agent tools, MQTT
fleet commands) goes through :attr:`Daemon.control`, the one
:class:`~edgevoice.device.control.DeviceControl` (:mod:`.control`).
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
from edgevoice.audio.blas_threads import use_one_blas_thread
from edgevoice.audio.hearing.modes import ListenMode
from edgevoice.audio.io.backend import AudioBackend
from edgevoice.audio.io.duplex import DuplexLoop
from edgevoice.audio.speaking.earcons import Earcons
from edgevoice.audio.speaking.playback import Speaker
from edgevoice.device.agents import AgentClient, build_agent
from edgevoice.device.assembly.audio_io import open_backend
from edgevoice.device.assembly.conversation import button_settings, conversation_settings
from edgevoice.device.assembly.echo import build_barge_in
from edgevoice.device.assembly.speaking import build_synthesizer, enabled_earcons, reply_speaker
from edgevoice.device.config import Config, LoadedConfig
from edgevoice.device.config.loader import default_paths, secret_values
from edgevoice.device.events import Event, EventBus, EventType
from edgevoice.device.hardware.gpio import ButtonEvent, StatusLed, open_gpio
from edgevoice.device.hardware.gpio_outputs import close_outputs
from edgevoice.device.identity import load_identity
from edgevoice.device.runtime.announce import Announcer
from edgevoice.device.runtime.control import DaemonControl
from edgevoice.device.runtime.conversation import Conversation
from edgevoice.device.runtime.frontend import FrontEnd
from edgevoice.device.runtime.leds import LED_FOR_STATE
from edgevoice.device.runtime.state import State
from edgevoice.device.runtime.tasks import AudioClock, cancel_task
from edgevoice.device.system.logs import scrub_secrets
from edgevoice.device.system.sdnotify import Notifier

_LOGGER = logging.getLogger(__name__)

RESTART_EXIT_CODE = 75  # EX_TEMPFAIL: systemd's Restart=on-failure starts us again
VOLUME_SAVE_DELAY_S = 1.0  # a volume set from outside is saved once the slider rests


class Daemon:
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
        self.knowledge: Any = None  # a KnowledgeBase when [knowledge] enabled
        self.tap: Any = None
        self.timers: Any = None  # edgevoice.device.timers.service.TimerService once started
        self.announcer = Announcer(self)
        self.esphome: Any = None
        self.console: Any = None
        self.operator_desk: Any = None
        self._agent_swap: asyncio.Future[None] | None = None
        self._volume_save: asyncio.TimerHandle | None = None
        self._volume_to_save: float | None = None
        self.ready = asyncio.Event()
        self.control = DaemonControl(self)

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
        backend = self._backend_override or open_backend(config.audio, config.room, config.wav, config.array)
        self.backend = backend
        self.speaker = Speaker(backend.period_samples, config.audio.volume)
        # numpy's products here are small; OpenBLAS's spinning workers would take the cores
        # piper and the turn model share at the end of a turn (audio/blas_threads.py).
        for limited in use_one_blas_thread():
            _LOGGER.info("numpy's BLAS held to one thread (%s)", limited)
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
        # (malloc_trim, ~-25 MB; see device/system/memory.py and docs/runtime.md "Memory").
        from edgevoice.device.system.memory import release_memory

        await asyncio.to_thread(release_memory)
        replies = reply_speaker(self.speaker, synthesizer, self.bus, config.tts)
        earcons = Earcons(self.speaker, enabled_earcons(config.earcons), config.earcons.level)
        if config.console.enabled:
            from edgevoice.device.console.desk import OperatorDesk

            self.operator_desk = OperatorDesk(config.operator.quick_replies)
        self.agent = build_agent(config, self.control, operator_desk=self.operator_desk)
        await self._open_knowledge()
        self.conversation = Conversation(
            bus=self.bus,
            front=front,
            speaker=self.speaker,
            replies=replies,
            agent=self.agent,
            earcons=earcons,
            barge_in=build_barge_in(config.barge_in, front.echo_canceller, self._on_barge_in_mode,
                                    front.listener.vad.engine),
            settings=conversation_settings(config),
            clock=AudioClock(self._audio_time),
            on_state=self._on_state,
            knowledge=self.knowledge,
        )
        self.duplex = DuplexLoop(
            backend,
            self.speaker,
            queue_periods=config.audio.queue_periods,
            reconnect_max_s=config.audio.reconnect_max_s,
            on_event=self._on_audio_event,
        )
        self._open_gpio(loop)
        from edgevoice.device.runtime.timer_hooks import attach_timers

        self.timers = attach_timers(self)
        self.duplex.start(loop)  # opens the devices; a wrong name raises here
        self._install_signals(loop)
        if config.esphome.enabled:  # serving before READY=1: HA may connect at once
            await self._start_esphome()
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
        from edgevoice.device.runtime.diagnostics import FrameTap

        self.tap = FrameTap(self.duplex)  # the live AEC self-test records through it
        conversation = asyncio.create_task(self.conversation.run(self.tap), name="conversation")
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
        if self.timers is not None:
            await self.timers.stop()
        if self._volume_save is not None:  # a volume set just before the stop is kept
            self._volume_save.cancel()
            with contextlib.suppress(Exception):
                await self._save_volume()
        for task in list(self._in_flight):
            await cancel_task(task)
        if self.mqtt is not None:
            with contextlib.suppress(Exception):
                await self.mqtt.stop()
        if self.esphome is not None:
            with contextlib.suppress(Exception):
                await self.esphome.stop()
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

    async def _open_knowledge(self) -> None:
        """Bring the knowledge index up to date. A failure is logged and the device runs
        without knowledge: it must still answer."""
        if not self.config.knowledge.enabled:
            return
        from edgevoice.device.identity import state_dir
        from edgevoice.device.knowledge import KnowledgeBase, KnowledgeError

        knowledge = KnowledgeBase(self.config.knowledge, state_dir=state_dir(self.config.device, self.root))
        try:
            report, reader = await asyncio.to_thread(knowledge.build)
        except KnowledgeError as err:
            _LOGGER.error("knowledge disabled: %s", err)
            self.bus.emit(EventType.ERROR, source="knowledge", code=err.code, message=err.message)
            return
        knowledge.swap_reader(reader, report)
        self.knowledge = knowledge
        self._closers.append(knowledge.close)

    async def knowledge_sync(self, url: str, sha256: str) -> dict[str, Any]:
        """Fetch, check and index a knowledge bundle, then answer from it (MQTT)."""
        from edgevoice.device.knowledge import KnowledgeDisabledError

        knowledge = self.knowledge
        if knowledge is None:
            raise KnowledgeDisabledError(
                "knowledge is off on this device; set [knowledge] enabled = true and restart"
            )
        report, reader, info = await asyncio.to_thread(knowledge.sync_bundle, url, sha256)
        knowledge.swap_reader(reader, report)
        return {"bundle": info.as_dict(), "build": report.as_dict(), "stats": knowledge.stats()}

    def _install_signals(self, loop: asyncio.AbstractEventLoop) -> None:
        if sys.platform == "win32":
            return
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, self.stop)
            loop.add_signal_handler(signal.SIGINT, self.stop)
            loop.add_signal_handler(signal.SIGHUP, self._reload_soon)
            self._closers.append(lambda: _remove_signals(loop))

    def _reload_soon(self) -> None:
        self._spawn(self.control.reload())

    # --- GPIO -------------------------------------------------------------------------

    def _open_gpio(self, loop: asyncio.AbstractEventLoop) -> None:
        gpio = self.config.gpio
        if not gpio.enabled:
            return
        button = None
        if gpio.button_pin >= 0:
            button = button_settings(gpio)
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
        from edgevoice.device.hardware.ledring import LedRing

        gpio = self.config.gpio
        try:
            self._ring = LedRing(gpio.led_ring_count, gpio.led_brightness, factory,
                                 first_led_deg=self.config.array.led_offset_deg)
        except Exception as err:
            _LOGGER.warning("LED ring disabled: SPI is not available (%s: %s)", type(err).__name__, err)
            return
        self._closers.append(self._ring.close)
        if self.config.array.enabled:
            self.bus.subscribe(self._point_ring)

    def _point_ring(self, event: Event) -> None:
        # The array found where the turn's talker is: the listening ring looks at them.
        if self._ring is not None and event.type == EventType.SPEECH_STARTED:
            direction = event.data.get("direction_deg")
            if isinstance(direction, (int, float)):
                self._ring.show_direction(float(direction))

    def _on_button(self, event: ButtonEvent, data: dict[str, Any]) -> None:
        ringing = self.esphome is not None and self.esphome.bridge.timers.is_ringing
        self.bus.emit(str(event), **data)  # a press stops a ringing timer (the ESPHome bridge)
        conversation = self.conversation
        if conversation is None or (ringing and event is ButtonEvent.PRESSED):
            return
        if event is ButtonEvent.PRESSED and self.timers is not None and self.timers.stop_ringing():
            return  # the press silenced a ringing timer, and does nothing else
        if event is ButtonEvent.PRESSED:
            self._spawn(conversation.button_pressed())
        elif event is ButtonEvent.RELEASED:
            self._spawn(conversation.button_released())
        elif event is ButtonEvent.HELD and conversation.settings.mode is not ListenMode.BUTTON:
            # The running mode: listen.mode changes only with a restart.
            self._spawn(conversation.reset())
        elif event is ButtonEvent.DOUBLE_PRESSED and self.config.gpio.double_press_mutes:
            self._spawn(self.control.mute(not conversation.muted))

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
                               self.control, self.telemetry, arbitration=self.config.arbitration)
        await self.mqtt.start()
        if self.mqtt.arbiter is not None:
            from edgevoice.device.runtime.arbitration_hook import attach_arbiter

            attach_arbiter(self, self.mqtt.arbiter)

    # --- ESPHome native API (Home Assistant's Assist satellite) --------------------------

    async def _start_esphome(self) -> None:
        from edgevoice.device.esphome.host import DaemonSatellite
        from edgevoice.device.esphome.server import EsphomeSurface
        from edgevoice.device.esphome.voice import BridgeSettings, VoiceBridge

        assert self.conversation is not None
        section = self.config.esphome
        host = DaemonSatellite(self)
        bridge = VoiceBridge(self.bus, host, BridgeSettings(section.timer_ring_s, section.stop_phrases,
                                                            section.continue_delay_s))
        # While HA is subscribed its pipeline answers the turns; otherwise the [llm] agent.
        self.conversation.remote = bridge
        self.conversation.front.taps.append(bridge.tap)
        self.esphome = EsphomeSurface(section, device_id=self.device_id, device_name=self.config.device.name,
                                      version=__version__, control=host, bus=self.bus, bridge=bridge)
        await self.esphome.start()

    # --- the console ----------------------------------------------------------------------

    async def _start_console(self) -> None:
        from edgevoice.device.console.errors import ConsoleError
        from edgevoice.device.console.server import ConsoleServer
        from edgevoice.device.identity import state_dir

        try:
            self.console = ConsoleServer(
                self.config.console, self.config.operator, bus=self.bus, target=self.control,
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

    # --- the volume survives a restart ------------------------------------------------

    def _save_volume_soon(self, level: float) -> None:
        """A volume set from outside (HA, MQTT, a tool) survives a restart: it is written to
        the config file as ``audio.volume`` once it has rested for VOLUME_SAVE_DELAY_S."""
        if self._volume_save is not None:
            self._volume_save.cancel()
        self._volume_to_save = round(level, 3)
        loop = asyncio.get_running_loop()
        self._volume_save = loop.call_later(VOLUME_SAVE_DELAY_S, lambda: self._spawn(self._save_volume()))

    async def _save_volume(self) -> None:
        from dataclasses import replace

        self._volume_save = None
        level = self._volume_to_save
        if level is None or abs(self.config.audio.volume - level) < 1e-9:
            return
        # The running config takes the level first, so saving it changes nothing live (the
        # speaker may be muted meanwhile: that stays).
        self.config = replace(self.config, audio=replace(self.config.audio, volume=level))
        try:
            await self.control.set_config({"audio": {"volume": level}})
        except Exception as err:
            _LOGGER.warning("the volume could not be saved (%s); it lasts until a restart", err)

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


def build_front_end(config: Config) -> FrontEnd:
    """The echo canceller and the hearing pipeline from config (loads the models)."""
    from edgevoice.audio.array.hearing import HOP as ARRAY_HOP
    from edgevoice.audio.frames import SAMPLE_RATE
    from edgevoice.device.assembly.array import build_array_hearing
    from edgevoice.device.assembly.echo import build_canceller
    from edgevoice.device.assembly.hearing import build_listener

    hop_s = ARRAY_HOP / SAMPLE_RATE

    array = build_array_hearing(config)
    if array is not None:
        # The beam adds its STFT's latency to the canceller's: the listener's clock starts
        # that much earlier, so its timestamps stay the microphones'.
        first = array.cancellers[0]
        lag_s = first.latency_ms / 1000.0 + array.latency_periods * hop_s
        return FrontEnd(build_listener(config, origin_s=-lag_s), None, array=array)
    canceller = build_canceller(config.aec)
    # The canceller's output lags the microphone (edgevoice's suppressor: one period);
    # start the listener's clock that much earlier so its timestamps are the mic's.
    return FrontEnd(build_listener(config, origin_s=-canceller.latency_ms / 1000.0), canceller)


def _warm_up(synthesizer: Any, front: FrontEnd) -> None:
    audio = synthesizer.engine.synthesize("Hello, what time is it today?")
    asr = front.listener.asr
    if asr is not None:
        asr.warm_up(audio.pcm)


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
