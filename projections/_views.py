"""Narrow decoding: an event decoded into a view holding only the fields a fold reads.

A `grade.finished` carries per-test maps of hundreds of entries; the a(i,j) fold reads its
task key and verdict. Decoding the payload into a Struct of just those fields (same
names, types, defaults and wire names as the event's) skips building everything else,
which is most of the cost of reading a ledger. A projection opts in by declaring
`reads` (event type -> field names its `apply` reads; `"results.item_id"` narrows a list
of Structs too); types it does not list are decoded in full, and a row of another payload
schema than the current one always takes the full decode with its upcasters.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from typing import Any

import msgspec

from ledger import PAYLOAD_ERRORS, Ledger, decode_payload
from ledger.events import BY_TYPE

__all__ = ["Reads", "decode_row", "decoders_for", "merge_reads", "read_views", "view_type"]

Reads = Mapping[str, tuple[str, ...]]


def view_type(cls: type[msgspec.Struct], names: tuple[str, ...]) -> type[msgspec.Struct]:
    """A Struct with `cls`'s fields `names` ("field.sub" narrows a Struct or list-of-Struct field)."""
    return _view(cls, tuple(sorted(set(names))))


@cache
def _view(cls: type[msgspec.Struct], names: tuple[str, ...]) -> type[msgspec.Struct]:
    top: dict[str, list[str]] = {}
    for name in names:
        head, _, rest = name.partition(".")
        top.setdefault(head, [])
        if rest:
            top[head].append(rest)
    fields: list[tuple[str, Any, Any]] = []
    for info in msgspec.structs.fields(cls):
        if info.name not in top:
            continue
        type_: Any = info.type
        if top[info.name]:
            type_ = _narrow(type_, tuple(top[info.name]))
        if info.default is not msgspec.NODEFAULT:
            spec = msgspec.field(name=info.encode_name, default=info.default)
        elif info.default_factory is not msgspec.NODEFAULT:
            spec = msgspec.field(name=info.encode_name, default_factory=info.default_factory)
        else:
            spec = msgspec.field(name=info.encode_name)
        fields.append((info.name, type_, spec))
    missing = set(top) - {name for name, _, _ in fields}
    if missing:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(missing)}")
    return msgspec.defstruct(f"{cls.__name__}View", fields, kw_only=True, frozen=True)


def _narrow(type_: Any, names: tuple[str, ...]) -> Any:
    origin = typing.get_origin(type_)
    args = typing.get_args(type_)
    if origin is list and args and isinstance(args[0], type) and issubclass(args[0], msgspec.Struct):
        return list[view_type(args[0], names)]  # type: ignore[misc]
    if isinstance(type_, type) and issubclass(type_, msgspec.Struct):
        return view_type(type_, names)
    raise TypeError(f"cannot narrow {type_!r} to {names}: only Struct and list[Struct] fields")


def merge_reads(declared: Iterable[tuple[frozenset[str] | None, Reads | None]]) -> dict[str, tuple[str, ...] | None]:
    """One decode plan for several folds: (types selected, reads) per fold -> type ->
    the union of the fields, or None (decode in full) when some fold selecting the type
    does not narrow it."""
    plan: dict[str, tuple[str, ...] | None] = {}
    full: set[str] = set()
    for types, reads in declared:
        for type_ in types if types is not None else BY_TYPE:
            names = None if reads is None else reads.get(type_)
            if names is None:
                full.add(type_)
                continue
            plan[type_] = tuple(sorted(set(plan.get(type_) or ()) | set(names)))
    for type_ in full:
        plan[type_] = None
    return plan


def decoders_for(plan: Mapping[str, tuple[str, ...] | None]) -> dict[str, tuple[int, Callable[[bytes], Any]]]:
    """type -> (current schema, decode function) for the types of `plan`, known to this catalog."""
    out: dict[str, tuple[int, Callable[[bytes], Any]]] = {}
    for type_, names in plan.items():
        cls = BY_TYPE.get(type_)
        if cls is None:
            continue
        out[type_] = (cls.SCHEMA, _decoder(cls, None if names is None else tuple(sorted(set(names)))))
    return out


@cache
def _decoder(cls: type[msgspec.Struct], names: tuple[str, ...] | None) -> Callable[[bytes], Any]:
    return msgspec.json.Decoder(cls if names is None else _view(cls, names)).decode



Decoders = Mapping[str, tuple[int, Callable[[bytes], Any]]]


def decode_row(decoders: Decoders, type_: str, schema: int, payload: bytes) -> Any:
    """A row's payload through its narrow decoder, or in full (with upcasters) when its
    type has none or was written under another schema."""
    entry = decoders.get(type_)
    if entry is not None and entry[0] == schema:
        return entry[1](payload)
    return decode_payload(type_, schema, payload)


def read_views(ledger: Ledger, type_: str, fields: tuple[str, ...], **select: Any) -> Iterator[tuple[int, Any]]:
    """(seq, view of `fields`) of every `type_` event `select` picks (`Ledger.read_raw`'s
    bounds and ranges): a query that needs a few fields of one type of event."""
    decoders = decoders_for({type_: fields})
    for row in ledger.read_raw(types=[type_], **select):
        try:
            view = decode_row(decoders, type_, row[5], row[7])
        except PAYLOAD_ERRORS as exc:
            raise ledger.undecodable(row[0], exc) from None
        yield row[0], view
