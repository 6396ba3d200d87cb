"""One typed, frozen configuration, loaded from TOML and validated with clear errors."""

from edgevoice.device.config.loader import (
    ConfigError,
    ConfigProblem,
    LoadedConfig,
    build_config,
    load_config,
    merge,
    parse_override,
    revision,
    to_dict,
    to_toml,
)
from edgevoice.device.config.schema import Config

__all__ = [
    "Config",
    "ConfigError",
    "ConfigProblem",
    "LoadedConfig",
    "build_config",
    "load_config",
    "merge",
    "parse_override",
    "revision",
    "to_dict",
    "to_toml",
]
