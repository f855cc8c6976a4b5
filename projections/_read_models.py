"""Read models kept in `projections.db`, never in the ledger file.

SQLModel (SQLAlchemy over the stdlib sqlite3) owns this file; apsw owns the ledger. Two
SQLite libraries on one file in one process is unsafe, so they never share one.
Everything here is a cache: deleting `projections.db` loses nothing.
"""

from __future__ import annotations

from sqlmodel import Field, SQLModel


class Checkpoint(SQLModel, table=True):
    """A projection's state as of `seq`, valid while name, version, scope and ledger match."""

    __tablename__ = "checkpoints"

    name: str = Field(primary_key=True)
    version: int = Field(primary_key=True)
    scope: str = Field(primary_key=True)
    ledger_id: str = Field(primary_key=True)
    seq: int = Field(primary_key=True)
    ledger_hash: bytes  # the ledger's chain hash at `seq`: a different history invalidates it
    state: bytes  # msgpack of the projection's state
    created_at: str
