"""Package names that resolve on first use.

`swecl --help` must not pay for the memory substrate, an MCP server (`python -m
agents.recall_server`) must start fast, and a process that only reads an error class need
not load SQLite: the packages whose names are costly to import list them here instead of
importing them, and the first use of a name imports its module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str], namespace: MutableMapping[str, Any]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: `exports` maps each public name to the
    submodule that defines it (a name equal to its submodule's is the submodule itself).
    A resolved name is kept in the package's `namespace`, so it resolves once."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        imported = importlib.import_module(f"{package}.{module}")
        value = imported if module == name else getattr(imported, name)
        namespace[name] = value
        return value

    return __getattr__
