"""iniconf: INI-style configuration into plain dicts, with typed getters."""

from .errors import ConfigError, InterpolationError, ParseError
from .interpolate import interpolate
from .parser import load, loads
from .values import to_bool, to_int, to_list

__all__ = [
    "ConfigError",
    "InterpolationError",
    "ParseError",
    "interpolate",
    "load",
    "loads",
    "to_bool",
    "to_int",
    "to_list",
]
__version__ = "0.4.0"
