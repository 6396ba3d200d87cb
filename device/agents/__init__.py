"""Agent clients: the device owns the call, the agent owns what to say.

Use :func:`build_agent` with the config (and the runtime's :class:`DeviceActions`),
then per user turn iterate :meth:`AgentClient.reply` and report what was heard with
:meth:`AgentClient.record_reply`. See ``docs/agents.md``.
"""

from __future__ import annotations

from edgevoice.device.agents.actions import DeviceActions, RecordingActions
from edgevoice.device.agents.base import AgentClient, Exchange, UserTurn
from edgevoice.device.agents.errors import (
    AgentBadReplyError,
    AgentConfigError,
    AgentConnectionLostError,
    AgentDnsError,
    AgentError,
    AgentHttpStatusError,
    AgentIdleTimeoutError,
    AgentReplyTooLargeError,
    AgentStreamRefusedError,
    AgentTimeoutError,
    AgentTlsError,
    AgentToolError,
    AgentUnreachableError,
)
from edgevoice.device.agents.factory import PROVIDERS, build_agent

__all__ = [
    "PROVIDERS",
    "AgentBadReplyError",
    "AgentClient",
    "AgentConfigError",
    "AgentConnectionLostError",
    "AgentDnsError",
    "AgentError",
    "AgentHttpStatusError",
    "AgentIdleTimeoutError",
    "AgentReplyTooLargeError",
    "AgentStreamRefusedError",
    "AgentTimeoutError",
    "AgentTlsError",
    "AgentToolError",
    "AgentUnreachableError",
    "DeviceActions",
    "Exchange",
    "RecordingActions",
    "UserTurn",
    "build_agent",
]
