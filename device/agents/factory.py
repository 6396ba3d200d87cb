"""``build_agent(config, actions)``: the client the ``[llm] provider`` names."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from edgevoice.device.agents.actions import DeviceActions
from edgevoice.device.agents.base import AgentClient
from edgevoice.device.agents.errors import AgentConfigError
from edgevoice.device.config.schema import Config

if TYPE_CHECKING:
    from edgevoice.device.console.desk import OperatorDesk

PROVIDERS = ("agent", "openai", "ollama", "homeassistant", "local", "operator")


def build_agent(
    config: Config,
    actions: DeviceActions | None = None,
    *,
    resource_id: str | None = None,
    now: Callable[[], datetime] | None = None,
    operator_desk: OperatorDesk | None = None,
) -> AgentClient:
    """The agent client for ``config.llm.provider``.

    ``actions`` lets tools and the local agent act on the device (volume, end, start over,
    GPIO outputs); without it only the current-time tool is offered. ``resource_id``
    overrides ``[device] resource_id`` (e.g. set by provisioning). ``now`` is the clock
    for the time tool and the local agent (tests). ``operator_desk`` is where the
    ``operator`` provider finds the people answering (the console's desk).
    """
    llm = config.llm
    provider = llm.provider
    if provider == "agent":
        from edgevoice.device.agents.agent_http import HttpAgentClient

        rid = config.device.resource_id if resource_id is None else resource_id
        return HttpAgentClient(config.agent, llm, resource_id=rid)
    if provider == "openai":
        from edgevoice.device.agents.openai import OpenAiClient
        from edgevoice.device.agents.tools import DeviceTools

        tools = DeviceTools(llm.tools, llm.gpio_outputs, actions, now=now)
        return OpenAiClient(config.openai, llm, tools)
    if provider == "ollama":
        from edgevoice.device.agents.ollama import OllamaClient
        from edgevoice.device.agents.tools import DeviceTools

        return OllamaClient(config.ollama, llm, DeviceTools(llm.tools, llm.gpio_outputs, actions, now=now))
    if provider == "homeassistant":
        from edgevoice.device.agents.homeassistant import HomeAssistantClient

        return HomeAssistantClient(config.homeassistant, llm, language=config.device.language)
    if provider == "local":
        from edgevoice.device.agents.local import LocalAgentClient

        return LocalAgentClient(config.local, llm, actions, now=now,
                                answer_score=config.knowledge.answer_score)
    if provider == "operator":
        from edgevoice.device.agents.operator import OperatorAgentClient

        def fallback(name: str) -> AgentClient:
            other = dataclasses.replace(config, llm=dataclasses.replace(llm, provider=name))
            return build_agent(other, actions, resource_id=resource_id, now=now)

        return OperatorAgentClient(config.operator, llm, operator_desk, fallback)
    raise AgentConfigError(f"unknown [llm] provider {provider!r}; use one of {', '.join(PROVIDERS)}")
