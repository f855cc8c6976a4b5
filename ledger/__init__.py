"""swecl's event store: one append-only, hash-chained SQLite log of everything a run did.

Public API: `Ledger` (open, append, read, blobs, verify, merge import), the event
catalog (`events`), upcaster registration, and the errors every layer raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports

_EXPORTS = {
    "MergeReport": "_merge",
    "ShardReport": "_merge",
    "merge_ledgers": "_merge",
    "check_references": "_references",
    "GENESIS_HASH": "_schema",
    "STORE_SCHEMA": "_schema",
    "Ledger": "_store",
    "NewEvent": "_store",
    "PAYLOAD_ERRORS": "_store",
    "Recorded": "_store",
    "StreamBatch": "_store",
    "StreamRange": "_store",
    "VerifyReport": "_store",
    "blob_hash": "_store",
    "blob_refs_of": "_store",
    "chain_hash": "_store",
    "decode_payload": "_store",
    "encode_payload": "_store",
    "event_id_for": "_store",
    "new_event_id": "_store",
    "utc_now": "_store",
    "upcast": "_upcasting",
    "upcaster": "_upcasting",
    "ConcurrencyConflict": "errors",
    "IntegrityError": "errors",
    "LedgerDamaged": "errors",
    "LedgerError": "errors",
    "SweclError": "errors",
    "Terminated": "errors",
    "AnyEvent": "events",
    "BY_TYPE": "events",
    "EVENT_TYPES": "events",
    "Event": "events",
    "UnknownEvent": "events",
    "events": "events",
    "sqlite": "sqlite",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from . import events, sqlite
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

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
