"""The appliance: identity, GPIO, conversations, MQTT."""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.device.config.fields import setting


@dataclass(frozen=True, slots=True)
class DeviceConfig:
    """Who this device is."""

    id: str = setting(
        "",
        "Device identity (MQTT client id and topic). Empty: the provisioned identity "
        "(/var/lib/edgevoice/identity.json), else derived from /etc/machine-id.", restart=True,
    )
    name: str = setting("", "Human-readable name shown in fleet listings and Home Assistant.", restart=True)
    group: str = setting("", "Fleet group; the device also takes commands sent to this group.", restart=True)
    resource_id: str = setting(
        "",
        "Who is on the device, sent to the agent as resource_id. Empty: the key is omitted.",
    )
    language: str = setting("en", "Language of the conversation (BCP 47 primary tag, e.g. en).", restart=True)
    state_dir: str = setting(
        "/var/lib/edgevoice", "Where identity, history and fetched models live.", restart=True
    )
    room: str = setting(
        "",
        "The room this device is in. Devices of one room that hear the wake word together "
        "elect one to answer over MQTT ([arbitration]). Empty: never arbitrated.",
        restart=True,
    )


@dataclass(frozen=True, slots=True)
class ArbitrationConfig:
    """Wake-word arbitration: of the devices of one [device] room that hear the wake word,
    one answers (the highest wake score × speech level; ties to the lowest id)."""

    enabled: bool = setting(True, "Arbitrate when [device] room is set and MQTT is connected.",
                            restart=True)
    window_ms: int = setting(
        250, "How long a device waits for the other devices' claims after its own detection "
        "(it decides sooner once every device of the room has claimed).",
        minimum=0, maximum=2000,
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
    led_brightness: float = setting(1.0, "Status LED brightness.", minimum=0.0, maximum=1.0, restart=True)
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
    greeting: str = setting("", "Spoken once when the daemon is ready. Empty: nothing.", restart=True)


@dataclass(frozen=True, slots=True)
class MqttConfig:
    """MQTT telemetry and fleet commands. Off when url is empty."""

    url: str = setting("", "mqtt://host:1883 or mqtts://host:8883. Empty: MQTT off.", restart=True)
    username: str = setting("", "Broker user name.", restart=True)
    password: str = setting("", "Broker password.", secret=True, restart=True)
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
        False, "Publish Home Assistant MQTT discovery config (sensors, mute switch, volume, buttons).",
        restart=True,
    )
    discovery_prefix: str = setting("homeassistant", "Home Assistant's discovery topic prefix.", restart=True)
    queue_size: int = setting(
        1000, "Messages kept while the broker is unreachable; beyond it the oldest are dropped "
        "(and counted).", minimum=1, maximum=1000000, restart=True,
    )
    command_rate: float = setting(
        5.0, "Commands per second a device accepts on average (token bucket).",
        minimum=0.01, maximum=10000.0, restart=True,
    )
    command_burst: int = setting(
        20, "Commands accepted back to back before command_rate applies.", minimum=1, maximum=100000,
        restart=True,
    )
