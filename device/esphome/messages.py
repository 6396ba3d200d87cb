"""aioesphomeapi's protobuf messages: their wire ids, and building them across versions.

The message classes and ids are aioesphomeapi's (``api_pb2`` and its id table); the
client on the other end may be older or newer than ours, so :func:`make` sets only
the fields this version of the definitions has (a newer client ignores what it
does not know, an older one never sees a field it lacks).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from google.protobuf.message import Message

ESPHOME_VERSION = "2025.4.0"  # the firmware release whose API the device speaks (1.10)


@cache
def id_to_class() -> dict[int, type[Message]]:
    from aioesphomeapi.core import MESSAGE_TYPE_TO_PROTO

    return dict(MESSAGE_TYPE_TO_PROTO)


@cache
def class_to_id() -> dict[type[Message], int]:
    return {cls: kind for kind, cls in id_to_class().items()}


def pb(name: str) -> type[Message]:
    """A message class of ``aioesphomeapi.api_pb2`` by name."""
    from aioesphomeapi import api_pb2

    cls: type[Message] = getattr(api_pb2, name)
    return cls


def has_class(name: str) -> bool:
    from aioesphomeapi import api_pb2

    return hasattr(api_pb2, name)


def make(message_name: str, /, **fields: Any) -> Message:
    """``api_pb2.<message_name>(**fields)`` without the fields this version does not define."""
    cls = pb(message_name)
    known = set(cls.DESCRIPTOR.fields_by_name)
    message = cls()
    for key, value in fields.items():
        if key not in known or value is None:
            continue
        field = cls.DESCRIPTOR.fields_by_name[key]
        if field.message_type is not None and not _is_repeated(field):
            getattr(message, key).CopyFrom(value)
        elif _is_repeated(field):
            getattr(message, key).extend(value)
        else:
            setattr(message, key, value)
    return message


def _is_repeated(field: Any) -> bool:
    if hasattr(field, "is_repeated"):  # protobuf 5.28 and later
        return bool(field.is_repeated)
    return bool(field.label == field.LABEL_REPEATED)


def encode(messages: list[Message]) -> list[tuple[int, bytes]]:
    ids = class_to_id()
    return [(ids[type(m)], m.SerializeToString()) for m in messages]


def decode(kind: int, data: bytes) -> Message | None:
    """The message for a wire id, or None for an id these definitions do not know."""
    cls = id_to_class().get(kind)
    if cls is None:
        return None
    message = cls()
    message.ParseFromString(data)
    return message


def name_of(message: Message) -> str:
    return type(message).__name__


__all__ = ["class_to_id", "decode", "encode", "has_class", "id_to_class", "make", "name_of", "pb"]
