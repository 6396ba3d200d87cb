"""Errors of the agent clients: one class per way a turn can fail, each with a stable code.

Every failure of a turn ends in an :class:`AgentError`; the runtime puts ``code`` in the
``error`` event and speaks the failure phrase. Third-party errors (aiohttp, ssl, json)
are wrapped where they enter.
"""

from __future__ import annotations

from edgevoice.errors import EdgeVoiceError


class AgentError(EdgeVoiceError):
    """A turn with the agent failed; text already streamed before it stays valid."""

    code = "agent_error"


class AgentConfigError(AgentError, ValueError):
    code = "agent_config_invalid"


class AgentTimeoutError(AgentError, TimeoutError):
    """The whole-turn budget ran out (including a reply that trickles)."""

    code = "agent_timeout"


class AgentIdleTimeoutError(AgentError, TimeoutError):
    """The stream went silent past idle_timeout_ms, twice."""

    code = "agent_idle_timeout"


class AgentHttpStatusError(AgentError):
    """The server answered with a non-2xx status."""

    code = "agent_http_status"

    def __init__(self, message: str, *, status: int, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body

    def as_dict(self) -> dict[str, str]:
        data = super().as_dict()
        data["status"] = str(self.status)
        return data


class AgentUnreachableError(AgentError, ConnectionError):
    """No connection could be made (refused, no route)."""

    code = "agent_unreachable"


class AgentDnsError(AgentUnreachableError):
    code = "agent_dns"


class AgentTlsError(AgentUnreachableError):
    code = "agent_tls"


class AgentConnectionLostError(AgentError, ConnectionError):
    """The connection broke while the reply was arriving."""

    code = "agent_connection_lost"


class AgentBadReplyError(AgentError, ValueError):
    """The reply does not follow the contract (malformed JSON, missing fields, bad type)."""

    code = "agent_bad_reply"


class AgentReplyTooLargeError(AgentError):
    """The reply passed ``[llm] max_reply_chars``; what fit was streamed."""

    code = "agent_reply_too_large"


class AgentStreamRefusedError(AgentError):
    """An OpenAI-compatible endpoint would not stream."""

    code = "agent_stream_refused"


class AgentToolError(AgentError):
    """The model kept calling tools past ``[llm] max_tool_rounds``."""

    code = "agent_tool_loop"
