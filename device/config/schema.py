"""The configuration tree: one frozen dataclass per TOML section, declared by area in
:mod:`edgevoice.device.config.sections` and assembled here.

Section and key names follow the agent contracts' own (``[llm] provider``,
``[agent] url``, ``[ollama] base_url``). Each component receives only its own
section. ``docs/config.md`` is generated from these declarations
(``edgevoice config docs``) and a test keeps it in step.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.audio.array.geometry import parse_geometry
from edgevoice.device.config.fields import section
from edgevoice.device.config.sections.agents import (
    AgentConfig,
    GpioOutputConfig,
    HomeassistantConfig,
    LlmConfig,
    LocalConfig,
    OllamaConfig,
    OpenaiConfig,
)
from edgevoice.device.config.sections.appliance import (
    ArbitrationConfig,
    ConversationConfig,
    DeviceConfig,
    GpioConfig,
    MqttConfig,
)
from edgevoice.device.config.sections.array import ArrayConfig
from edgevoice.device.config.sections.audio import (
    AudioConfig,
    RoomConfig,
    WavConfig,
)
from edgevoice.device.config.sections.console import (
    ConsoleConfig,
    OperatorConfig,
)
from edgevoice.device.config.sections.echo import (
    AecConfig,
    BargeInConfig,
)
from edgevoice.device.config.sections.esphome import EsphomeConfig
from edgevoice.device.config.sections.hearing import (
    AsrConfig,
    EndpointConfig,
    ListenConfig,
    ModelsConfig,
    VadConfig,
)
from edgevoice.device.config.sections.knowledge import KnowledgeConfig
from edgevoice.device.config.sections.speaking import (
    EarconsConfig,
    TtsConfig,
)

__all__ = [
    "AecConfig",
    "AgentConfig",
    "ArrayConfig",
    "AsrConfig",
    "AudioConfig",
    "BargeInConfig",
    "ConsoleConfig",
    "ConversationConfig",
    "DeviceConfig",
    "EarconsConfig",
    "ArbitrationConfig",
    "EndpointConfig",
    "GpioConfig",
    "GpioOutputConfig",
    "HomeassistantConfig",
    "KnowledgeConfig",
    "ListenConfig",
    "LlmConfig",
    "LocalConfig",
    "ModelsConfig",
    "EsphomeConfig",
    "MqttConfig",
    "OllamaConfig",
    "OpenaiConfig",
    "OperatorConfig",
    "RoomConfig",
    "TtsConfig",
    "VadConfig",
    "WavConfig",
    "Config",
]


@dataclass(frozen=True, slots=True)
class Config:
    """The whole configuration."""

    device: DeviceConfig = section(DeviceConfig)
    audio: AudioConfig = section(AudioConfig)
    array: ArrayConfig = section(ArrayConfig)
    room: RoomConfig = section(RoomConfig)
    wav: WavConfig = section(WavConfig)
    llm: LlmConfig = section(LlmConfig)
    agent: AgentConfig = section(AgentConfig)
    openai: OpenaiConfig = section(OpenaiConfig)
    ollama: OllamaConfig = section(OllamaConfig)
    homeassistant: HomeassistantConfig = section(HomeassistantConfig)
    local: LocalConfig = section(LocalConfig)
    knowledge: KnowledgeConfig = section(KnowledgeConfig)
    mqtt: MqttConfig = section(MqttConfig)
    arbitration: ArbitrationConfig = section(ArbitrationConfig)
    esphome: EsphomeConfig = section(EsphomeConfig)
    gpio: GpioConfig = section(GpioConfig)
    console: ConsoleConfig = section(ConsoleConfig)
    operator: OperatorConfig = section(OperatorConfig)
    conversation: ConversationConfig = section(ConversationConfig)
    models: ModelsConfig = section(ModelsConfig)
    tts: TtsConfig = section(TtsConfig)
    earcons: EarconsConfig = section(EarconsConfig)
    aec: AecConfig = section(AecConfig)
    barge_in: BargeInConfig = section(BargeInConfig)
    vad: VadConfig = section(VadConfig)
    endpoint: EndpointConfig = section(EndpointConfig)
    listen: ListenConfig = section(ListenConfig)
    asr: AsrConfig = section(AsrConfig)

    def problems(self) -> list[tuple[str, str]]:
        """Checks across sections: (dotted key, what is wrong and what to do)."""
        found: list[tuple[str, str]] = []
        audio = self.audio
        mics = audio.mic_channels
        if not mics:
            found.append(("audio.mic_channels", "names no channel; list the capture channel(s) that "
                          "carry microphones, e.g. [0]"))
        if len(set(mics)) != len(mics):
            twice = sorted({c for c in mics if mics.count(c) > 1})
            found.append(("audio.mic_channels", f"names channel {', '.join(map(str, twice))} more than "
                          "once; each microphone is one channel: list each once"))
        outside = [c for c in mics if not 0 <= c < audio.capture_channels]
        if outside:
            found.append(("audio.mic_channels", f"channel {', '.join(map(str, outside))} is not one of the "
                          f"{audio.capture_channels} capture channels (0..{audio.capture_channels - 1}); "
                          "raise [audio] capture_channels or pick channels that exist"))
        if audio.reference_channel in mics:
            found.append(("audio.reference_channel", f"channel {audio.reference_channel} is also a "
                          "microphone in [audio] mic_channels; the loopback reference needs a channel "
                          "of its own"))
        elif audio.reference_channel >= audio.capture_channels:
            found.append(("audio.reference_channel", f"channel {audio.reference_channel} is not one of the "
                          f"{audio.capture_channels} capture channels; raise [audio] capture_channels "
                          "or use -1 (no loopback)"))
        if self.array.enabled and not self.array.problems():
            geometry = parse_geometry(self.array.geometry)
            if geometry.mic_count != len(self.audio.mic_channels):
                found.append(("array.geometry", f"{self.array.geometry!r} has {geometry.mic_count} "
                              f"microphones but [audio] mic_channels names {len(self.audio.mic_channels)}; "
                              f"list {geometry.mic_count} capture channels there, in the geometry's order"))
        return found
