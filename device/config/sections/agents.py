"""The agent providers and the tools they may call."""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.device.config.fields import setting


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
        "ollama, homeassistant (Assist), local (built in, no server), operator (a person "
        "answers from the console's /operator page; see [operator]).",
        choices=("agent", "openai", "ollama", "homeassistant", "local", "operator"),
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
        ("current_time", "set_volume", "end_conversation", "timer"),
        "Built-in tools offered to openai-compatible models.",
        choices=("current_time", "set_volume", "end_conversation", "timer"),
    )
    max_tool_rounds: int = setting(
        4, "Follow-up requests with tool results allowed in one turn.", minimum=0, maximum=20
    )
    speculate: str = setting(
        "auto",
        "Prepare the reply in the silence that ends a turn: once the early final's text is "
        "known ([asr] early_final_ms) the request goes out and the first words are synthesized, "
        "held; they play the moment the turn ends with the same words, and are dropped unheard "
        "(no event, no history, no tool run) if the person goes on or the final differs. "
        "auto: openai and ollama (stateless chat); on: also the agent provider (only if its "
        "server keeps no state per request and acts on nothing); off: never. homeassistant, "
        "local and operator never are.",
        choices=("auto", "on", "off"),
    )
    speculate_margin_ms: int = setting(
        100,
        "How early a prepared reply's first audio is due before the pause can end the turn. Once "
        "a reply has shown the agent's pace, the request waits in the pause until then, so a "
        "hesitation shorter than that sends nothing; with a slow agent or a turn model it goes "
        "at once. Larger: more requests closed unread when people hesitate; smaller: a late "
        "first word when the agent is slower than it was. 10000 (the longest end silence) sends at "
        "once.",
        minimum=0, maximum=10000,
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
