"""The local console (kiosk captions, operator desk, events, metrics) and the operator."""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.device.config.fields import setting


@dataclass(frozen=True, slots=True)
class ConsoleConfig:
    """The local web console: /captions, /operator, the /v1/events WebSocket, /metrics."""

    enabled: bool = setting(False, "Serve the console. Off by default.", restart=True)
    listen: str = setting(
        "127.0.0.1:8080",
        "host:port to serve on. Anything but loopback without tls_cert logs a warning.",
        restart=True,
    )
    tls_cert: str = setting("", "PEM certificate for HTTPS. Empty: plain HTTP.", restart=True)
    tls_key: str = setting("", "PEM private key of tls_cert.", restart=True)
    transcripts: bool = setting(
        False,
        "Send what was said and heard (transcript.* events, text fields) to /v1/events and "
        "/captions. Off: they carry states and timings only. The operator desk always sees the "
        "visitor's words when [llm] provider = \"operator\" (the operator is the agent).",
    )
    token_file: str = setting(
        "console-token",
        "File (relative to [device] state_dir, or absolute) holding the full-access token; "
        "generated at the first start. `edgevoice console token` prints it.", restart=True,
    )
    captions_token_file: str = setting(
        "console-captions-token",
        "File holding the read-only token that opens /captions only (for a kiosk screen).",
        restart=True,
    )
    session_hours: float = setting(
        12.0, "A login cookie lasts this long.", minimum=0.1, maximum=8760.0, restart=True,
    )
    command_rate: float = setting(
        2.0, "Commands per second each WebSocket may send on average.", minimum=0.1, maximum=100.0,
    )
    command_burst: int = setting(10, "Commands a WebSocket may send back to back.", minimum=1, maximum=1000)
    allowed_origins: tuple[str, ...] = setting(
        (),
        "Extra WebSocket Origins to accept (e.g. https://kiosk.lan). The console's own origin "
        "is always accepted; a browser on any other is refused.",
    )


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    """[llm] provider = "operator": a person answers each turn from /operator."""

    quick_replies: tuple[str, ...] = setting(
        ("One moment please, someone is coming.", "Please come in.", "Sorry, nobody is available."),
        "Buttons on the operator desk that answer with that text in one click ("
        "\"say nothing\" is always there).",
    )
    fallback: str = setting(
        "Sorry, nobody can answer right now. Please try again later.",
        "When no operator is connected or nobody answers within timeout_s: a provider name "
        "(agent, openai, ollama, homeassistant, local) answers instead, or any other text is "
        "spoken. Empty: say nothing.",
    )
    timeout_s: float = setting(
        20.0, "How long a turn waits for an operator's answer.", minimum=1.0, maximum=600.0,
    )
