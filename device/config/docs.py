"""Generate the configuration reference (``docs/config.md``) from the schema."""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from typing import Any

from edgevoice.device.config.fields import check_of
from edgevoice.device.config.schema import Config

HEADER = """# Configuration reference

Generated from the code by `edgevoice config docs > docs/config.md`; a test keeps it in step.

The configuration is TOML. Files are read in this order, later ones winning key by key:
`/etc/edgevoice/config.toml`, then `~/.config/edgevoice/config.toml`; `--config PATH`
replaces both. `--set section.key=value` (repeatable) overrides single keys; the value is
read as TOML (`--set audio.mic_channels=[0,1]`), or as a plain string when it is not TOML.
Unknown keys, wrong types and out-of-range values are errors naming the file, the key, what
was expected and what was found; `edgevoice config check` lists them all. Keys marked
*secret* are never logged and show as `***` in `edgevoice config show`. Keys marked
*restart* take effect when the daemon restarts; the others apply on reload.
"""


def _default_text(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return "`" + json.dumps(value, ensure_ascii=False) + "`"


def _type_text(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is tuple:
        return f"list of {_type_text(typing.get_args(tp)[0])}"
    if dataclasses.is_dataclass(tp):
        return "table"
    return getattr(tp, "__name__", str(tp))


def _section_rows(name: str, cls: type[Any]) -> list[str]:
    doc = inspect.cleandoc(cls.__doc__ or "")
    lines = [f"## [{name}]", "", doc, "", "| key | type | default | meaning |", "|---|---|---|---|"]
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        check = check_of(field)
        if check is None:
            continue
        notes = [check.doc]
        if check.choices is not None:
            notes.append("One of " + ", ".join(f"`{c}`" for c in check.choices) + ".")
        if check.minimum is not None or check.maximum is not None:
            low = "" if check.minimum is None else f"{check.minimum:g}"
            high = "" if check.maximum is None else f"{check.maximum:g}"
            notes.append(f"Range {low}..{high}.")
        if check.secret:
            notes.append("*secret*.")
        if check.restart:
            notes.append("*restart*.")
        if field.default is not dataclasses.MISSING:
            default = _default_text(field.default)
        elif field.default_factory is not dataclasses.MISSING:
            default = _default_text(field.default_factory())
        else:
            default = ""
        meaning = " ".join(notes).replace("|", "\\|")
        lines.append(f"| `{field.name}` | {_type_text(hints[field.name])} | {default} | {meaning} |")
    lines.append("")
    return lines


def render() -> str:
    """The whole reference as Markdown."""
    lines = [HEADER]
    hints = typing.get_type_hints(Config)
    for field in dataclasses.fields(Config):
        lines.extend(_section_rows(field.name, hints[field.name]))
    return "\n".join(lines).rstrip() + "\n"
