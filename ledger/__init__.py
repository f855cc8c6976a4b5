"""swecl's event store: one append-only, hash-chained SQLite log of everything a run did.

Public API: `Ledger` (open, append, read, blobs, verify, merge import), the event
catalog (`events`), upcaster registration, and the errors every layer raises.
"""

from __future__ import annotations

from . import events
from .errors import ConcurrencyConflict, IntegrityError, LedgerDamaged, LedgerError, SweclError, Terminated
from .events import BY_TYPE, EVENT_TYPES, AnyEvent, Event, UnknownEvent
from ._schema import GENESIS_HASH, STORE_SCHEMA
from ._store import (
    PAYLOAD_ERRORS,
    Ledger,
    NewEvent,
    Recorded,
    StreamBatch,
    StreamRange,
    VerifyReport,
    blob_hash,
    blob_refs_of,
    chain_hash,
    decode_payload,
    encode_payload,
    event_id_for,
    new_event_id,
    utc_now,
)
from ._merge import MergeReport, ShardReport, merge_ledgers
from ._references import check_references
from ._upcasting import upcast, upcaster

__all__ = [
    "BY_TYPE",
    "EVENT_TYPES",
    "GENESIS_HASH",
    "PAYLOAD_ERRORS",
    "STORE_SCHEMA",
    "AnyEvent",
    "ConcurrencyConflict",
    "Event",
    "IntegrityError",
    "Ledger",
    "LedgerDamaged",
    "LedgerError",
    "MergeReport",
    "NewEvent",
    "Recorded",
    "StreamBatch",
    "ShardReport",
    "StreamRange",
    "SweclError",
    "Terminated",
    "UnknownEvent",
    "VerifyReport",
    "blob_hash",
    "blob_refs_of",
    "chain_hash",
    "check_references",
    "decode_payload",
    "encode_payload",
    "event_id_for",
    "merge_ledgers",
    "events",
    "new_event_id",
    "upcast",
    "upcaster",
    "utc_now",
]
