"""Upcasters: read old payload schemas as the current ones, never rewriting old rows.

An upcaster takes the raw payload (a dict) of schema N of one event type and returns it
as schema N+1. Reading a row of schema N applies every upcaster from N up to the type's
current `SCHEMA`, then converts the dict into the current Struct.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Payload = dict[str, Any]
Upcaster = Callable[[Payload], Payload]

_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


def upcaster(event_type: str, from_schema: int) -> Callable[[Upcaster], Upcaster]:
    """Register `fn` to lift `event_type` payloads from `from_schema` to `from_schema + 1`."""

    def register(fn: Upcaster) -> Upcaster:
        key = (event_type, from_schema)
        if key in _UPCASTERS:
            raise ValueError(f"an upcaster for {event_type} schema {from_schema} is already registered")
        _UPCASTERS[key] = fn
        return fn

    return register


def unregister(event_type: str, from_schema: int) -> None:
    """Remove an upcaster (tests register temporary ones)."""
    _UPCASTERS.pop((event_type, from_schema), None)


def upcast(event_type: str, payload: Payload, from_schema: int, to_schema: int) -> Payload:
    for schema in range(from_schema, to_schema):
        try:
            fn = _UPCASTERS[(event_type, schema)]
        except KeyError:
            raise LookupError(
                f"no upcaster registered for {event_type} from schema {schema} to {schema + 1}"
            ) from None
        payload = fn(dict(payload))
    payload["type"] = event_type
    return payload
