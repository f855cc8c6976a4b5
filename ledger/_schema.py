"""The ledger's SQL schema and the store's own schema version.

The triggers make the log append-only at the database level, so even a writer that is
not swecl (the sqlite3 shell, another library) cannot update or delete an event, leave a
gap in `seq` or in a stream's versions, reuse an event id, or break the link of the hash
chain. Whether each `hash` is right is for `verify` to check: plain SQLite has no SHA-256
to check it with.
"""

from __future__ import annotations

STORE_SCHEMA = 3
"""Bumped when the tables change; a ledger of a newer store schema is refused, not guessed at.

A ledger keeps the store schema it was made with (there is no migration): swecl reads,
appends to and verifies a ledger of every schema in `STORE_DDLS`, each against its own DDL.
"""

GENESIS_HASH = bytes(32)

META_KEYS = frozenset({"store_schema", "ledger_id", "created_at"})
"""The rows of `swecl_meta`, each written once when the ledger is made: `verify` wants
exactly these (the metadata is outside the hash chain, so its form is what can be checked).

`verify` also wants every table, index and trigger of the ledger's DDL (`STORE_DDLS` of its
store schema), each with the very SQL text written there (SQLite keeps it in
`sqlite_schema`), and nothing else: a dropped or rewritten trigger is how the log stops
being append-only. So a change to this text (even to its whitespace) or a new object
needs a new store schema, with the old DDL kept in `STORE_DDLS` for the ledgers made
before it.
"""

# The text the schemas share: swecl_meta, the events columns, and everything from the
# events' UPDATE and DELETE triggers on (the blobs with theirs; the blob encodings allowed
# are each schema's own). Each schema's DDL is these around its own constraints, indexes
# and append trigger, in the order schema 1 wrote them.
_META = """
CREATE TABLE swecl_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

"""

_EVENTS_COLUMNS = """CREATE TABLE events (
    seq            INTEGER PRIMARY KEY,
    event_id       TEXT    NOT NULL UNIQUE,
    stream         TEXT    NOT NULL,
    stream_version INTEGER NOT NULL CHECK (stream_version >= 0),
    type           TEXT    NOT NULL,
    schema         INTEGER NOT NULL CHECK (schema >= 1),
    time           TEXT    NOT NULL,
    payload        BLOB    NOT NULL,
    prev_hash      BLOB    NOT NULL CHECK (length(prev_hash) = 32),
    hash           BLOB    NOT NULL CHECK (length(hash) = 32)"""

_IMMUTABLE_TEMPLATE = """CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are immutable: append a correction instead');
END;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are immutable: they cannot be deleted');
END;

CREATE TABLE blobs (
    sha256   TEXT    PRIMARY KEY CHECK (length(sha256) = 64),
    size     INTEGER NOT NULL,
    encoding TEXT    NOT NULL CHECK (encoding IN ({encodings})),
    data     BLOB    NOT NULL
) STRICT;

CREATE TRIGGER blobs_no_update BEFORE UPDATE ON blobs
BEGIN
    SELECT RAISE(ABORT, 'blobs are content-addressed and immutable');
END;

CREATE TRIGGER blobs_no_delete BEFORE DELETE ON blobs
BEGIN
    SELECT RAISE(ABORT, 'blobs are content-addressed and immutable');
END;
"""


def _immutable(encodings: tuple[str, ...]) -> str:
    """The shared tail, with the blob encodings the schema's CHECK allows."""
    return _IMMUTABLE_TEMPLATE.replace("{encodings}", ", ".join(f"'{e}'" for e in encodings))


_IMMUTABLE = _immutable(("identity", "zlib"))

# Schema 2 (the append benchmark of issue 23). Every B-tree an event is inserted into costs a
# page written to the WAL per commit, and the pages written (and the checkpoints they bring)
# are most of an append's time. Schema 1's two per-stream indexes, UNIQUE (stream,
# stream_version) and (stream, type), are one index here: (stream, stream_version, type)
# finds a stream's head, its events by version, and its events of some types from the index
# alone (a run's events are read by a range of streams, after which the type is no search
# key anyway). The uniqueness of (stream, stream_version) is the trigger's (not a gapless
# numbering: a Ray shard holds the tail of a stream whose start is elsewhere). The trigger also
# refuses an event id already recorded, so `INSERT OR REPLACE` cannot delete an event by
# colliding with it (in schema 1, that deleted the older row), and it reads the ledger's
# head once per row, not twice (the seq and the hash of the same last row).
_DDL_2_HEAD = _META + _EVENTS_COLUMNS + """
) STRICT;

CREATE INDEX events_by_type ON events (type, seq);

CREATE INDEX events_by_stream ON events (stream, stream_version, type);

CREATE TRIGGER events_append_only BEFORE INSERT ON events
WHEN COALESCE((SELECT seq = NEW.seq - 1 AND hash = NEW.prev_hash FROM events ORDER BY seq DESC LIMIT 1),
              NEW.seq = 1 AND NEW.prev_hash = zeroblob(32)) IS NOT 1
  OR EXISTS (SELECT 1 FROM events WHERE stream = NEW.stream AND stream_version = NEW.stream_version)
  OR EXISTS (SELECT 1 FROM events WHERE event_id = NEW.event_id)
BEGIN
    SELECT RAISE(ABORT, 'events are appended at the next seq, linked to the previous hash, at a new stream version, with a new event_id');
END;

"""

_DDL_2 = _DDL_2_HEAD + _IMMUTABLE
"""Schema 2, as ledgers made before schema 3 hold it."""

# Schema 3 (issue 46's snapshot overhead): schema 2 with one more blob encoding, `zstd`
# (Zstandard frames), for large blobs: zlib at level 6 took about 500 ms for a 10 MB
# snapshot of a memory server's data directory, zstd at level 1 a few tens (and compresses
# text about as well). A ledger of schema 1 or 2 keeps storing zlib (its CHECK allows no
# other) and reads the same.
STORE_DDL = _DDL_2_HEAD + _immutable(("identity", "zlib", "zstd"))

_DDL_1 = _META + _EVENTS_COLUMNS + """,
    UNIQUE (stream, stream_version)
) STRICT;

CREATE INDEX events_by_type ON events (type, seq);

-- A run's events of some types (a projection's selection): found from the index alone,
-- rows read only for the events selected. Added without a schema bump: it changes
-- nothing that is stored, and a ledger made before it reads the same, only slower
-- (`CREATE INDEX IF NOT EXISTS events_by_stream_type ON events (stream, type)` adds it).
CREATE INDEX events_by_stream_type ON events (stream, type);

CREATE TRIGGER events_append_only BEFORE INSERT ON events
WHEN NEW.seq IS NOT (SELECT COALESCE(MAX(seq), 0) + 1 FROM events)
  OR NEW.prev_hash IS NOT COALESCE((SELECT hash FROM events WHERE seq = NEW.seq - 1), zeroblob(32))
BEGIN
    SELECT RAISE(ABORT, 'events are appended at the next seq, linked to the previous hash');
END;

""" + _IMMUTABLE
"""Schema 1, as ledgers made before schema 2 hold it (byte for byte: `verify` compares)."""

STORE_DDLS = {1: _DDL_1, 2: _DDL_2, 3: STORE_DDL}
"""The DDL of each store schema swecl reads and writes."""
