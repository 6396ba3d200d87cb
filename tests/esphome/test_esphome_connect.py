"""The ESPHome API surface against aioesphomeapi's APIClient (the library HA uses), on
loopback: plaintext and Noise, a wrong key refused, a client too many refused, device
info, entities, the voice assistant's configuration, and the zeroconf record."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
from collections.abc import AsyncIterable, AsyncIterator

import pytest
from aioesphomeapi import APIClient, InvalidEncryptionKeyAPIError, VoiceAssistantFeature
from aioesphomeapi.core import APIConnectionError, RequiresEncryptionAPIError
from support.ports import free_port

from edgevoice.audio.speaking.tts import TtsAudio
from edgevoice.device.config import load_config
from edgevoice.device.config.loader import ConfigError
from edgevoice.device.config.sections.esphome import EsphomeConfig
from edgevoice.device.esphome.entities import DeviceView
from edgevoice.device.esphome.server import EsphomeControl, EsphomeSurface, mac_for
from edgevoice.device.esphome.voice import BridgeSettings, SatelliteHost, VoiceBridge
from edgevoice.device.events import EventBus

KEY = base64.b64encode(bytes(range(32))).decode()


class RecordingControl(EsphomeControl):
    def __init__(self) -> None:
        self.volume = 0.5
        self.mic_muted = False

    async def set_volume(self, level: float) -> None:
        self.volume = level

    async def mute(self, mic: bool) -> None:
        self.mic_muted = mic

    async def set_speaker_muted(self, muted: bool) -> None:
        return None

    async def stop_playback(self) -> None:
        return None

    def view(self) -> DeviceView:
        return DeviceView(self.volume, False, self.mic_muted, False, 42.5, None)


class QuietHost(SatelliteHost):
    """A device with two wake words that records which one HA chose."""

    def __init__(self) -> None:
        self.active = "okay_nabu"

    async def listen(self) -> None:
        return None

    async def announce(self, audio: AsyncIterable[TtsAudio], text: str, utterance_id: str) -> None:
        return None

    def end_turn(self) -> None:
        return None

    def waive_wake_word(self, waived: bool) -> None:
        return None

    def play_ring(self) -> None:
        return None

    def stop_ring(self) -> None:
        return None

    def wake_words(self) -> tuple[list[tuple[str, str]], list[str]]:
        return [("okay_nabu", "Okay Nabu"), ("hey_jarvis", "Hey Jarvis")], [self.active]

    def set_wake_word(self, model: str) -> bool:
        self.active = model
        return True

    def show_timer(self, fraction_left: float | None) -> None:
        return None


@contextlib.asynccontextmanager
async def surface(key: str = "", max_clients: int = 2) -> AsyncIterator[tuple[EsphomeSurface, QuietHost]]:
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    config = EsphomeConfig(enabled=True, host="127.0.0.1", port=free_port(), encryption_key=key,
                           zeroconf=False, max_clients=max_clients, name="kitchen-satellite")
    host = QuietHost()
    server = EsphomeSurface(config, device_id="test-device", device_name="Kitchen", version="0.1.0",
                            control=RecordingControl(), bus=bus,
                            bridge=VoiceBridge(bus, host, BridgeSettings()))
    await server.start()
    try:
        yield server, host
    finally:
        await server.stop()


@pytest.mark.parametrize(("key", "login"), [("", True), ("", False), (KEY, True), (KEY, False)],
                         ids=["plaintext", "plaintext-no-login", "noise", "noise-no-login"])
async def test_connect_device_info_and_entities(key: str, login: bool) -> None:
    # login=False: the newer flow, a hello and nothing else (no password request).
    async with surface(key) as (server, _):
        client = APIClient("127.0.0.1", server.port, None, noise_psk=key or None)
        await client.connect(login=login)
        try:
            info = await client.device_info()
            assert info.name == "kitchen-satellite" and info.friendly_name == "Kitchen"
            assert info.mac_address == mac_for("test-device")
            flags = info.voice_assistant_feature_flags_compat(client.api_version)
            for feature in (VoiceAssistantFeature.VOICE_ASSISTANT, VoiceAssistantFeature.API_AUDIO,
                            VoiceAssistantFeature.SPEAKER, VoiceAssistantFeature.ANNOUNCE,
                            VoiceAssistantFeature.START_CONVERSATION, VoiceAssistantFeature.TIMERS):
                assert flags & feature, feature
            entities, _ = await client.list_entities_services()
            assert sorted(e.object_id for e in entities) == [
                "echo_reduction", "mute", "speaker", "voice_to_voice_latency"]
            states: asyncio.Queue[object] = asyncio.Queue()
            client.subscribe_states(states.put_nowait)
            seen = {}
            for _ in range(4):
                state = await asyncio.wait_for(states.get(), 5)
                seen[type(state).__name__] = state
            assert seen["SensorState"] is not None
            assert abs(seen["MediaPlayerEntityState"].volume - 0.5) < 1e-6  # type: ignore[attr-defined]
        finally:
            await client.disconnect()


async def test_a_wrong_key_is_refused() -> None:
    async with surface(KEY) as (server, _):
        wrong = base64.b64encode(os.urandom(32)).decode()
        client = APIClient("127.0.0.1", server.port, None, noise_psk=wrong)
        with pytest.raises(InvalidEncryptionKeyAPIError):
            await client.connect(login=True)
        plain = APIClient("127.0.0.1", server.port, None)
        with pytest.raises(RequiresEncryptionAPIError):
            await plain.connect(login=True)
        good = APIClient("127.0.0.1", server.port, None, noise_psk=KEY)
        await good.connect(login=True)  # the device still serves the right key
        await good.disconnect()


async def test_a_client_beyond_max_clients_is_refused() -> None:
    async with surface(max_clients=1) as (server, _):
        first = APIClient("127.0.0.1", server.port, None)
        await first.connect(login=True)
        second = APIClient("127.0.0.1", server.port, None)
        with pytest.raises(APIConnectionError):
            await second.connect(login=True)
        assert (await first.device_info()).name == "kitchen-satellite"  # the first one is served
        await first.disconnect()
        await asyncio.sleep(0.1)
        third = APIClient("127.0.0.1", server.port, None)
        await third.connect(login=True)  # its place is free again
        await third.disconnect()


async def test_home_assistant_reads_and_sets_the_wake_word() -> None:
    async with surface() as (server, host):
        client = APIClient("127.0.0.1", server.port, None)
        await client.connect(login=True)
        try:
            config = await client.get_voice_assistant_configuration(5)
            assert [w.id for w in config.available_wake_words] == ["okay_nabu", "hey_jarvis"]
            assert config.active_wake_words == ["okay_nabu"] and config.max_active_wake_words == 1
            await client.set_voice_assistant_configuration(["hey_jarvis"])
            config = await client.get_voice_assistant_configuration(5)
            assert config.active_wake_words == ["hey_jarvis"] and host.active == "hey_jarvis"
        finally:
            await client.disconnect()


async def test_the_zeroconf_record_is_what_home_assistant_discovers() -> None:
    async with surface(KEY) as (server, _):
        info = server.service_info()
        assert info.type == "_esphomelib._tcp.local."
        assert info.name == "kitchen-satellite._esphomelib._tcp.local."
        assert info.port == server.port
        props = {k.decode(): (v or b"").decode() for k, v in info.properties.items()}
        assert props["mac"] == mac_for("test-device").replace(":", "").lower()
        assert props["api_encryption"] == "Noise_NNpsk0_25519_ChaChaPoly_SHA256"
        assert info.parsed_addresses() == ["127.0.0.1"]


def test_a_bad_key_or_name_is_a_config_error(tmp_path: object) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(None, ("esphome.encryption_key=c2hvcnQ=", "esphome.name=Kitchen Satellite"))
    text = str(caught.value)
    assert "esphome.encryption_key" in text and "32 bytes" in text
    assert "esphome.name" in text
    assert load_config(None, (f"esphome.encryption_key={KEY}",)).config.esphome.encryption_key == KEY
