"""One control facade: everything a surface may ask of the device.

Agent tools (and the local agent's "stop" / "start over"), MQTT fleet commands and the
surfaces still to come (the console, a satellite API) all go through one
:class:`DeviceControl`; none reaches into the runtime on its own. The daemon's
implementation is :class:`edgevoice.device.runtime.control.DaemonControl`.

It extends :class:`~edgevoice.device.agents.actions.DeviceActions`, the narrow part the
agents see (they live below the runtime and know only that). Two methods that looked
alike are kept apart on purpose, because they differ in *when*:

- :meth:`reset_session` starts a new session now and returns when it has (MQTT
  ``reset_session``, the console);
- :meth:`start_over` asks for the same from inside a reply (an agent tool, "start over"),
  so it is scheduled and returns at once: the reply asking for it must not wait on the
  reset that cancels it.

:meth:`set_volume` returns the level in force (the agent's tool tells the person);
MQTT's ``set_volume`` answers ``{}`` as it always did.
"""

from __future__ import annotations

import abc
from typing import Any

from edgevoice.device.agents.actions import DeviceActions


class DeviceControl(DeviceActions):
    """What a surface may do to the device. Every method runs on the event loop."""

    @abc.abstractmethod
    async def say(self, text: str) -> None:
        """Speak ``text`` (as a reply of the device, not sent to the agent)."""

    @abc.abstractmethod
    async def interrupt(self) -> None:
        """Stop the current reply, as a barge-in would."""

    @abc.abstractmethod
    async def reset_session(self) -> None:
        """Start a new conversation session now (see the module docstring)."""

    @abc.abstractmethod
    async def mute(self, mic: bool) -> None:
        """Mute (True) or unmute (False) the microphone."""

    @abc.abstractmethod
    async def get_config(self) -> dict[str, Any]:
        """The effective configuration with secrets redacted."""

    @abc.abstractmethod
    async def set_config(self, patch: dict[str, Any]) -> dict[str, Any]:
        """Validate, apply live where possible and persist atomically (see
        :func:`edgevoice.device.config.persist.persist_patch`); return at least
        ``{"changed": [...], "restart_required": bool}``. Raise ``ConfigError`` when
        the patch does not validate (nothing changed)."""

    @abc.abstractmethod
    async def reload(self) -> None:
        """Re-read the configuration file (as SIGHUP does)."""

    @abc.abstractmethod
    async def restart(self) -> None:
        """Restart the daemon (after the answer has been sent)."""

    @abc.abstractmethod
    async def fetch_model(self, name: str) -> dict[str, Any]:
        """Fetch a model through the model registry."""

    @abc.abstractmethod
    async def state(self) -> dict[str, Any]:
        """``{"state", "volume", "mic_muted", "provider", "config_revision", ...}``."""

    async def knowledge_sync(self, url: str, sha256: str) -> dict[str, Any]:
        """Fetch the knowledge bundle at ``url``, check it against ``sha256``, index it and
        swap the index atomically; return ``{"bundle", "build", "stats"}``. A bad bundle
        raises a ``knowledge_bundle_*`` error and changes nothing (docs/knowledge.md).
        A device without the knowledge service says so."""
        from edgevoice.device.knowledge import KnowledgeDisabledError

        raise KnowledgeDisabledError("this device has no knowledge service")
