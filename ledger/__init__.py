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
    "merge_branch": "_merge",
    "merge_ledgers": "_merge",
    "check_references": "_references",
    "SubsetReport": "_subset",
    "copy_subset": "_subset",
    "GENESIS_HASH": "_schema",
    "STORE_DDL": "_schema",
    "STORE_SCHEMA": "_schema",
    "Ledger": "_store",
    "NewEvent": "_codec",
    "PAYLOAD_ERRORS": "_codec",
    "Recorded": "_codec",
    "StreamBatch": "_codec",
    "StreamRange": "_codec",
    "VerifyReport": "_verify",
    "blob_hash": "_blobs",
    "blob_refs_of": "_blobs",
    "decode_blob": "_blobs",
    "chain_hash": "_codec",
    "decode_payload": "_codec",
    "encode_payload": "_codec",
    "event_id_for": "_codec",
    "new_event_id": "_codec",
    "utc_now": "_codec",
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
    from ._schema import GENESIS_HASH, STORE_DDL, STORE_SCHEMA
    from ._blobs import blob_hash, blob_refs_of, decode_blob
    from ._codec import (
        PAYLOAD_ERRORS,
        NewEvent,
        Recorded,
        StreamBatch,
        StreamRange,
        chain_hash,
        decode_payload,
        encode_payload,
        event_id_for,
        new_event_id,
        utc_now,
    )
    from ._store import Ledger
    from ._verify import VerifyReport
    from ._merge import MergeReport, ShardReport, merge_branch, merge_ledgers
    from ._references import check_references
    from ._subset import SubsetReport, copy_subset
    from ._upcasting import upcast, upcaster

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
