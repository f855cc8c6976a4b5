"""The ledger's codec: event ids, times, payload encoding and decoding, the hash chain's
link function, the value types an append takes and a read gives back, and the mapping
between an `events` row and a `Recorded` (its SELECT, the stream-range clause).

Separate from the store (`_store.Ledger`) because none of it holds a connection: it is
the pure part of the format, shared by appending, reading, verifying and merging, and
the part a reader of the file format needs to follow to recompute a hash or decode a row.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec

from .errors import LedgerError
from .events import BY_TYPE, Event, UnknownEvent
from ._upcasting import upcast

_ENCODER = msgspec.json.Encoder(order="deterministic")
_RAW_DECODER = msgspec.json.Decoder()
_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {}
_HASH_FIELDS = msgspec.msgpack.Encoder()


def _uuid_text(digest: bytes, version: str) -> str:
    """The canonical text of the UUID made of the first 16 bytes of `digest` with
    `version` and the RFC 4122 variant set: what `str(uuid.UUID(bytes=..., version=...))`
    gives, without building a UUID object (which cost more than hashing the event, measured)."""
    h = digest[:16].hex()
    return f"{h[:8]}-{h[8:12]}-{version}{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


# The variant's top bits are 10: the high hex digit of byte 8 becomes 8, 9, a or b.
_VARIANT = {d: "89ab"[int(d, 16) & 3] for d in "0123456789abcdef"}


def new_event_id() -> str:
    """A random (version 4) UUID, as `str(uuid.uuid4())`."""
    return _uuid_text(os.urandom(16), "4")


_NAMESPACE = uuid.UUID("5f0c2a4e-8d1b-4c3e-9a57-2b6e1f3d7c90")
_NAMESPACE_BYTES = _NAMESPACE.bytes


def event_id_for(*parts: object) -> str:
    """A deterministic event id: the same decision retried gets the same id (idempotent).

    Exactly `str(uuid.uuid5(_NAMESPACE, "\\x1f".join(map(str, parts))))`.
    """
    name = "\x1f".join([str(p) for p in parts])
    return _uuid_text(hashlib.sha1(_NAMESPACE_BYTES + name.encode("utf-8", "surrogatepass")).digest(), "5")


def utc_now() -> str:
    """UTC now as `2024-05-01T12:00:00.000000Z` (isoformat: half the cost of strftime)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def encode_payload(event: Event) -> bytes:
    try:
        return _ENCODER.encode(event)
    except UnicodeEncodeError:
        return _ENCODER.encode(_scrubbed(event))


def _scrubbed(event: Event) -> Event:
    """A copy of `event` whose unpaired surrogates became U+FFFD.

    Text from the outside (an agent's output, a file name read with surrogateescape)
    can hold lone surrogates, which UTF-8 cannot carry: the event is recorded with the
    replacement character rather than lost with a traceback."""
    return msgspec.convert(_scrub_surrogates(msgspec.to_builtins(event)), type(event))


def _scrub_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_scrub_surrogates(k): _scrub_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_surrogates(v) for v in value]
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def chain_hash(
    prev_hash: bytes,
    seq: int,
    event_id: str,
    stream: str,
    stream_version: int,
    type_: str,
    schema: int,
    time: str,
    payload: bytes,
) -> bytes:
    """SHA-256 over the previous hash and a msgpack array of the row's fields.

    msgpack of ints, strings and bytes has exactly one encoding, so any reader can
    recompute the chain from the stored columns.
    """
    return hashlib.sha256(
        prev_hash + _HASH_FIELDS.encode((seq, event_id, stream, stream_version, type_, schema, time, payload))
    ).digest()


# What decoding an altered payload raises (msgspec's errors, an upcaster's KeyError/TypeError).
PAYLOAD_ERRORS = (msgspec.MsgspecError, LookupError, TypeError, ValueError)


def decode_payload(type_: str, schema: int, payload: bytes) -> Event | UnknownEvent:
    cls = BY_TYPE.get(type_)
    if cls is None:
        return UnknownEvent(type=type_, raw=_RAW_DECODER.decode(payload))
    if schema < cls.SCHEMA:
        raw = upcast(type_, _RAW_DECODER.decode(payload), schema, cls.SCHEMA)
        return msgspec.convert(raw, cls)
    # Keyed by class, not type name: a type re-bound to another class (tests do) gets its own.
    decoder = _DECODERS.get(cls)
    if decoder is None:
        decoder = _DECODERS[cls] = msgspec.json.Decoder(cls)
    return decoder.decode(payload)


class Recorded(msgspec.Struct, frozen=True):
    """An event as stored: its position, identity and decoded payload."""

    seq: int
    event_id: str
    stream: str
    stream_version: int
    type: str
    schema: int
    time: str
    event: Any  # Event | UnknownEvent
    prev_hash: bytes
    hash: bytes


@dataclass(frozen=True)
class NewEvent:
    """An event to append, with the client-made id that makes a retry idempotent."""

    event: Event
    event_id: str = ""

    def with_id(self) -> NewEvent:
        return self if self.event_id else NewEvent(self.event, new_event_id())


@dataclass(frozen=True)
class StreamBatch:
    stream: str
    events: Sequence[Event | NewEvent]
    expected_version: int | None = None  # None: append at the head, whatever it is


@dataclass(frozen=True)
class StreamRange:
    """Events of one stream (or every stream under `prefix/`) up to an optional seq."""

    prefix: str
    upto: int | None = None


def _range_sql(ranges: Sequence[StreamRange], params: list[Any], column: str = "stream") -> str:
    clauses = []
    for r in ranges:
        # `prefix` itself or anything below `prefix/`; '0' is the character after '/',
        # so the half-open range is index-friendly where LIKE would not be. Written as
        # flat disjuncts (each one stream-index search) rather than nested ORs, which
        # SQLite's OR optimisation cannot split, and would scan the table instead.
        limit = "" if r.upto is None else " AND +seq <= ?"
        clauses.append(f"({column} = ?{limit})")
        params.append(r.prefix)
        if r.upto is not None:
            params.append(r.upto)
        clauses.append(f"({column} >= ? AND {column} < ?{limit})")
        params.extend([r.prefix + "/", r.prefix + "0"])
        if r.upto is not None:
            params.append(r.upto)
    return "(" + " OR ".join(clauses) + ")"


_SELECT = (
    "SELECT seq, event_id, stream, stream_version, type, schema, time, payload, prev_hash, hash FROM events"
)


def _row_to_recorded(row: Sequence[Any]) -> Recorded:
    seq, event_id, stream, version, type_, schema, time, payload, prev_hash, digest = row
    return Recorded(
        seq, event_id, stream, version, type_, schema, time, decode_payload(type_, schema, payload), prev_hash, digest
    )


def _as_new(e: Event | NewEvent) -> NewEvent:
    if isinstance(e, NewEvent):
        return e.with_id()
    if not isinstance(e, Event):
        raise TypeError(f"not an event: {e!r}")
    return NewEvent(e, new_event_id())


_EncodedBatch = tuple[str, "int | None", list[tuple[NewEvent, str, int, bytes]]]


def _encode_batches(batches: Sequence[StreamBatch]) -> list[_EncodedBatch]:
    """Ids given (or made), types and payloads encoded: everything done before the transaction."""
    encoded: list[_EncodedBatch] = []
    seen: set[str] = set()
    count = 0
    encode = _ENCODER.encode
    for b in batches:
        evs = []
        for e in b.events:
            ne = _as_new(e)
            event = ne.event
            try:
                payload = encode(event)
            except UnicodeEncodeError:
                ne = NewEvent(_scrubbed(event), ne.event_id)
                event = ne.event
                payload = encode(event)
            evs.append((ne, event.type_name(), event.SCHEMA, payload))
            seen.add(ne.event_id)
            count += 1
        encoded.append((b.stream, b.expected_version, evs))
    if len(seen) != count:
        raise LedgerError("a batch repeats an event_id")
    return encoded
