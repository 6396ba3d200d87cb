"""Topic names: one place that knows the layout under ``<prefix>/``.

``<prefix>/<device_id>/status|state|telemetry|event|cmd_result`` carry what a device
publishes; ``<prefix>/<device_id>/cmd/<name>``, ``<prefix>/group/<group>/cmd/<name>`` and
``<prefix>/all/cmd/<name>`` carry commands; ``<prefix>/reply/<client>`` is where the
fleet tool asks MQTT 5 answers to go.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.errors import EdgeVoiceError

# Second-level names that are not device ids.
RESERVED_IDS = frozenset({"group", "all", "reply", "fleet", "room"})


class TopicError(EdgeVoiceError, ValueError):
    code = "mqtt_invalid_topic"


def check_level(value: str, what: str) -> str:
    """A single topic level: non-empty, no ``/``, ``+``, ``#`` or NUL."""
    if not value or any(c in value for c in "/+#\0"):
        raise TopicError(
            f"{what} {value!r} cannot be used in an MQTT topic: it must be non-empty and "
            "contain none of / + # — set a plain name (letters, digits, - and _)"
        )
    return value


@dataclass(frozen=True, slots=True)
class Topics:
    prefix: str
    device_id: str
    group: str = ""

    def __post_init__(self) -> None:
        check_level(self.device_id, "device id")
        if self.device_id in RESERVED_IDS:
            raise TopicError(f"device id {self.device_id!r} is reserved; choose another device.id")
        if self.group:
            check_level(self.group, "device group")
        if not self.prefix or any(c in self.prefix for c in "+#\0"):
            raise TopicError(f"mqtt.topic_prefix {self.prefix!r} must be non-empty, without + or #")

    def _own(self, leaf: str) -> str:
        return f"{self.prefix}/{self.device_id}/{leaf}"

    @property
    def status(self) -> str:
        return self._own("status")

    @property
    def state(self) -> str:
        return self._own("state")

    @property
    def telemetry(self) -> str:
        return self._own("telemetry")

    @property
    def event(self) -> str:
        return self._own("event")

    @property
    def cmd_result(self) -> str:
        return self._own("cmd_result")

    def command(self, name: str) -> str:
        return self._own(f"cmd/{name}")

    def subscriptions(self) -> list[str]:
        """Only this device's, its group's and the ``all`` command topics."""
        subs = [self._own("cmd/+"), f"{self.prefix}/all/cmd/+"]
        if self.group:
            subs.append(f"{self.prefix}/group/{self.group}/cmd/+")
        return subs

    def command_name(self, topic: str) -> str | None:
        """The command name if ``topic`` is one of this device's command topics."""
        for sub in self.subscriptions():
            base = sub[:-1]  # strip the trailing '+'
            if topic.startswith(base):
                name = topic[len(base):]
                if name and "/" not in name:
                    return name
        return None


def device_command_topic(prefix: str, device_id: str, name: str) -> str:
    return f"{prefix}/{check_level(device_id, 'device id')}/cmd/{check_level(name, 'command')}"


def group_command_topic(prefix: str, group: str, name: str) -> str:
    return f"{prefix}/group/{check_level(group, 'group')}/cmd/{check_level(name, 'command')}"


def all_command_topic(prefix: str, name: str) -> str:
    return f"{prefix}/all/cmd/{check_level(name, 'command')}"


def reply_topic(prefix: str, client: str) -> str:
    return f"{prefix}/reply/{check_level(client, 'client')}"


def answer_topic(response_topic: str, device_id: str) -> str:
    """Where a device answers a request with MQTT 5 response topic ``response_topic``:
    one level below it, named by the device. The shipped ACL lets a device write only
    ``<p>/reply/+/<its user name>``, so the topic an answer arrives on says who sent it."""
    return f"{response_topic}/{device_id}"


def answerer_of(base: str, topic: str) -> str | None:
    """The device id an answer on ``topic`` came from, for answers under reply topic
    ``base`` (``<base>/<id>``) or on a 3.1.1 ``<prefix>/<id>/cmd_result`` when
    ``base`` is ``<prefix>/+/cmd_result``; None for anything else."""
    if base.endswith("/+/cmd_result"):
        prefix = base[: -len("/+/cmd_result")]
        where = device_of(prefix, topic)
        return where[0] if where is not None and where[1] == "cmd_result" else None
    head = base + "/"
    if not topic.startswith(head):
        return None
    device_id = topic[len(head):]
    return device_id if device_id and "/" not in device_id else None


def device_of(prefix: str, topic: str) -> tuple[str, str] | None:
    """``<prefix>/<id>/<leaf>`` → (id, leaf), for fleet listings."""
    head = prefix + "/"
    if not topic.startswith(head):
        return None
    rest = topic[len(head):]
    device_id, sep, leaf = rest.partition("/")
    if not sep or device_id in RESERVED_IDS:
        return None
    return device_id, leaf
