"""${key} and ${section:key} references between config values."""

from __future__ import annotations

import re

from .errors import InterpolationError

__all__ = ["interpolate"]

_REFERENCE = re.compile(r"\$\{(?:(?P<section>[^:}]+):)?(?P<key>[^}]+)\}")


def interpolate(config: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """A copy of *config* with every reference replaced by the value it names.

    "${key}" names a key of the same section (or of DEFAULT), "${section:key}" a key
    of another section. References inside referenced values are resolved too.
    """

    def resolve(section: str, key: str) -> str:
        if key in config.get(section, {}):
            raw = config[section][key]
        elif key in config.get("DEFAULT", {}):
            raw = config["DEFAULT"][key]
        else:
            raise InterpolationError(f"${{{section}:{key}}} is not defined")
        return expand(section, raw)

    def expand(section: str, raw: str) -> str:
        def substitute(match: re.Match[str]) -> str:
            return resolve(match["section"] or section, match["key"].strip().lower())

        return _REFERENCE.sub(substitute, raw)

    return {section: {key: expand(section, raw) for key, raw in values.items()} for section, values in config.items()}
