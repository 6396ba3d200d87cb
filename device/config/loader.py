"""Load, merge, validate and redact the configuration.

Layers, lowest first: the defaults declared in :mod:`schema`, then
``/etc/edgevoice/config.toml`` and ``~/.config/edgevoice/config.toml`` (or only
``--config PATH`` when given), then ``--set section.key=value`` overrides. Every
problem in every layer is collected before anything is rejected, so one run of
``edgevoice config check`` lists them all.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import os
import tomllib
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgevoice.device.config.fields import check_of
from edgevoice.device.config.schema import Config
from edgevoice.errors import EdgeVoiceError

SYSTEM_CONFIG = Path("/etc/edgevoice/config.toml")
REDACTED = "***"


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "edgevoice" / "config.toml"


def default_paths() -> list[Path]:
    """Files read when no ``--config`` is given, lowest priority first."""
    return [SYSTEM_CONFIG, user_config_path()]


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One thing wrong with the configuration, said so a person can fix it."""

    source: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.key}: {self.message}" if self.key else (
            f"{self.source}: {self.message}"
        )


class ConfigError(EdgeVoiceError, ValueError):
    """The configuration is invalid; ``problems`` lists every problem found."""

    code = "config_invalid"

    def __init__(self, problems: Sequence[ConfigProblem]) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid configuration ({len(self.problems)} problem(s)):\n{lines}")


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    config: Config
    sources: tuple[str, ...]
    # The merged raw values (without defaults), as read: what `set_config` extends.
    raw: Mapping[str, Any]


# --- type handling ---------------------------------------------------------------------

_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is tuple:
        inner = typing.get_args(tp)[0]
        return f"a list of {_type_name(inner)}"
    if origin in (types.UnionType, typing.Union):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if dataclasses.is_dataclass(tp):
        return "a table"
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}
    return names.get(tp, getattr(tp, "__name__", str(tp)))


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return f"a list {json.dumps(value, default=str)[:60]}"
    kind = {str: "a string", int: "an integer", float: "a number"}.get(type(value), "a value")
    return f"{value!r} ({kind})"


def _coerce(value: Any, tp: Any, source: str, key: str, problems: list[ConfigProblem]) -> Any:
    """Check ``value`` against the annotated type; return the typed value or None."""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        for arg in typing.get_args(tp):
            if arg is type(None) and value is None:
                return None
            trial: list[ConfigProblem] = []
            result = _coerce(value, arg, source, key, trial)
            if not trial:
                return result
        problems.append(
            ConfigProblem(source, key, f"expected {_type_name(tp)}, found {_describe(value)}")
        )
        return None
    if origin is tuple:
        inner = typing.get_args(tp)[0]
        if not isinstance(value, list | tuple):
            problems.append(
                ConfigProblem(source, key, f"expected {_type_name(tp)}, found {_describe(value)}")
            )
            return None
        items = [_coerce(v, inner, source, f"{key}[{i}]", problems) for i, v in enumerate(value)]
        return tuple(items)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            problems.append(ConfigProblem(source, key, f"expected a table, found {_describe(value)}"))
            return None
        return _build(tp, [(source, value)], key, problems)
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif tp is str and isinstance(value, str):
        return value
    problems.append(ConfigProblem(source, key, f"expected {_type_name(tp)}, found {_describe(value)}"))
    return None


def _check_range(value: Any, field: dataclasses.Field[Any], source: str, key: str,
                 problems: list[ConfigProblem]) -> bool:
    check = check_of(field)
    if check is None:
        return True
    values = value if isinstance(value, tuple) else (value,)
    for item in values:
        if check.choices is not None and item not in check.choices:
            choices = ", ".join(json.dumps(c) for c in check.choices)
            problems.append(
                ConfigProblem(source, key, f"expected one of {choices}, found {_describe(item)}")
            )
            return False
        if isinstance(item, int | float) and not isinstance(item, bool):
            if check.minimum is not None and item < check.minimum:
                problems.append(
                    ConfigProblem(source, key, f"expected at least {check.minimum:g}, found {item!r}")
                )
                return False
            if check.maximum is not None and item > check.maximum:
                problems.append(
                    ConfigProblem(source, key, f"expected at most {check.maximum:g}, found {item!r}")
                )
                return False
    return True


def _build(cls: type[Any], layers: Sequence[tuple[str, Mapping[str, Any]]], prefix: str,
           problems: list[ConfigProblem]) -> Any:
    """Build one dataclass from layered raw tables; later layers win per key."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for source, table in layers:
        for name in table:
            if name not in fields:
                key = f"{prefix}.{name}" if prefix else name
                close = difflib.get_close_matches(name, list(fields), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                what = "section" if not prefix else "key"
                known = ", ".join(sorted(fields))
                problems.append(
                    ConfigProblem(source, key, f"unknown {what}{hint} (known: {known})")
                )
    for name, field in fields.items():
        key = f"{prefix}.{name}" if prefix else name
        tp = hints[name]
        if field.metadata.get("section"):
            sublayers = []
            for source, table in layers:
                if name in table:
                    if isinstance(table[name], dict):
                        sublayers.append((source, table[name]))
                    else:
                        problems.append(
                            ConfigProblem(
                                source, key, f"expected a table [{key}], found {_describe(table[name])}"
                            )
                        )
            kwargs[name] = _build(tp, sublayers, key, problems)
            continue
        for source, table in layers:
            if name not in table:
                continue
            before = len(problems)
            value = _coerce(table[name], tp, source, key, problems)
            if len(problems) == before and _check_range(value, field, source, key, problems):
                kwargs[name] = value
    built = cls(**kwargs)
    # A section may check what types and ranges cannot (a key's format, keys together).
    for name, message in getattr(built, "problems", lambda: [])():
        source = next((s for s, table in reversed(layers) if _holds(table, name)), "defaults")
        problems.append(ConfigProblem(source, f"{prefix}.{name}" if prefix else name, message))
    return built


def _holds(table: Mapping[str, Any], dotted: str) -> bool:
    """Whether a raw layer sets ``dotted`` (``key``, or ``section.key`` for a check
    across sections)."""
    for part in dotted.split("."):
        if not isinstance(table, Mapping) or part not in table:
            return False
        table = table[part]
    return True


def build_config(layers: Sequence[tuple[str, Mapping[str, Any]]]) -> Config:
    """Validate raw layers into a :class:`Config`, or raise :class:`ConfigError` with all problems."""
    problems: list[ConfigProblem] = []
    config = _build(Config, layers, "", problems)
    if problems:
        raise ConfigError(problems)
    assert isinstance(config, Config)
    return config


# --- reading -----------------------------------------------------------------------------


def read_toml(path: Path) -> dict[str, Any]:
    """Read one TOML file; a syntax error or unreadable file is a :class:`ConfigError`."""
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError([ConfigProblem(str(path), "", f"not valid TOML: {err}")]) from err
    except OSError as err:
        raise ConfigError(
            [ConfigProblem(str(path), "", f"cannot read: {err.strerror or err}")]
        ) from err


def parse_override(text: str) -> dict[str, Any]:
    """``audio.backend=wav`` → ``{"audio": {"backend": "wav"}}``.

    The value is read as a TOML value (``3``, ``true``, ``[0, 1]``, ``"x"``); anything
    that is not valid TOML is taken as a plain string, so ``--set agent.url=http://x`` works.
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key or "." not in key:
        raise ConfigError(
            [ConfigProblem("--set", text, "expected section.key=value, e.g. audio.backend=wav")]
        )
    try:
        parsed: Any = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    table: dict[str, Any] = {}
    node = table
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = parsed
    return table


def merge(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge ``patch`` over ``base`` (tables merged key by key, other values replaced)."""
    out = dict(base)
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(
    path: Path | str | None = None,
    overrides: Iterable[str] = (),
    *,
    search_paths: Sequence[Path] | None = None,
) -> LoadedConfig:
    """Load the configuration the way the CLI does (see the module docstring)."""
    layers: list[tuple[str, Mapping[str, Any]]] = []
    problems: list[ConfigProblem] = []
    if path is not None:
        candidates = [Path(path)]
        if not candidates[0].exists():
            raise ConfigError(
                [ConfigProblem(str(path), "", "no such file; check the --config path")]
            )
    else:
        candidates = [p for p in (search_paths if search_paths is not None else default_paths())
                      if p.exists()]
    for candidate in candidates:
        try:
            layers.append((str(candidate), read_toml(candidate)))
        except ConfigError as err:
            problems.extend(err.problems)
    for text in overrides:
        try:
            layers.append(("--set", parse_override(text)))
        except ConfigError as err:
            problems.extend(err.problems)
    try:
        config = build_config(layers)
    except ConfigError as err:
        problems.extend(err.problems)
    if problems:
        raise ConfigError(problems)
    raw: dict[str, Any] = {}
    for _, table in layers:
        raw = merge(raw, table)
    return LoadedConfig(config, tuple(name for name, _ in layers), raw)


# --- writing and showing ----------------------------------------------------------------


def to_dict(obj: Any, *, redact: bool = True) -> dict[str, Any]:
    """The config as plain data; secrets replaced by ``***`` (empty ones stay empty)."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        check = check_of(field)
        if dataclasses.is_dataclass(value):
            out[field.name] = to_dict(value, redact=redact)
        elif isinstance(value, tuple):
            out[field.name] = [
                to_dict(v, redact=redact) if dataclasses.is_dataclass(v) else v for v in value
            ]
        elif redact and check is not None and check.secret and value:
            out[field.name] = REDACTED
        else:
            out[field.name] = value
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def to_toml(data: Mapping[str, Any]) -> str:
    """Write a two-level table tree (sections of keys) as TOML."""
    lines: list[str] = []
    for name, table in data.items():
        if not isinstance(table, Mapping):
            lines.append(f"{name} = {_toml_value(table)}")
            continue
        lines.append(f"[{name}]")
        for key, value in table.items():
            lines.append(f"{key} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def secret_values(config: Config) -> list[str]:
    """Every non-empty secret in the config: for scrubbing logs."""
    found: list[str] = []

    def walk(obj: Any) -> None:
        for field in dataclasses.fields(obj):
            value = getattr(obj, field.name)
            check = check_of(field)
            if dataclasses.is_dataclass(value):
                walk(value)
            elif check is not None and check.secret and isinstance(value, str) and value:
                found.append(value)

    walk(config)
    return found


def revision(config: Config) -> str:
    """A short, stable fingerprint of the effective config (secrets included, not shown)."""
    blob = json.dumps(to_dict(config, redact=False), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:12]
