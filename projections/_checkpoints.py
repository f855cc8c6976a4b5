"""The checkpoint cache of projection states, in `projections.db` (SQLModel)."""

from __future__ import annotations

import logging
from contextlib import closing
from pathlib import Path

from typing import TYPE_CHECKING

from ledger import utc_now
from ledger.sqlite import StdlibError, connect_stdlib

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from ._read_models import Checkpoint

log = logging.getLogger(__name__)

# Older checkpoints of the same projection and scope beyond this many are dropped.
KEEP_PER_SCOPE = 8


def _errors() -> tuple[type[BaseException], ...]:
    from sqlalchemy.exc import SQLAlchemyError

    return (SQLAlchemyError, OSError)


class CheckpointStore:
    """Best-effort cache: a failure to read or write it never fails a projection.

    SQLModel is imported on first use: it costs more than a second of start-up, which
    commands that never touch a checkpoint should not pay.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._engine: Engine | None = None

    def _db(self) -> Engine:
        from sqlalchemy import event
        from sqlmodel import SQLModel, create_engine

        from ._read_models import Checkpoint  # lazy: SQLModel, see the class docstring

        if self._engine is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(f"sqlite:///{self.path}", connect_args={"timeout": 30})

            @event.listens_for(engine, "connect")
            def _pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=NORMAL")
                cur.close()

            SQLModel.metadata.create_all(engine, tables=[Checkpoint.__table__])  # type: ignore[list-item]
            self._engine = engine
        return self._engine

    def candidates(self, name: str, version: int, scope: str, ledger_id: str, upto: int) -> list[Checkpoint]:
        """Checkpoints at or before `upto`, newest first."""
        from sqlmodel import Session, col, select

        from ._read_models import Checkpoint  # lazy: SQLModel, see the class docstring

        try:
            with Session(self._db()) as s:
                rows = s.exec(
                    select(Checkpoint)
                    .where(Checkpoint.name == name, Checkpoint.version == version)
                    .where(Checkpoint.scope == scope, Checkpoint.ledger_id == ledger_id)
                    .where(Checkpoint.seq <= upto)
                    .order_by(col(Checkpoint.seq).desc())
                    .limit(KEEP_PER_SCOPE)
                ).all()
                return list(rows)
        except _errors() as exc:
            log.warning("projection checkpoints unavailable (%s); folding from the start", exc)
            return []

    def save(
        self, name: str, version: int, scope: str, ledger_id: str, seq: int, ledger_hash: bytes, state: bytes
    ) -> bool:
        from sqlmodel import Session, col, delete, select

        from ._read_models import Checkpoint  # lazy: SQLModel, see the class docstring

        try:
            with Session(self._db()) as s:
                s.merge(
                    Checkpoint(
                        name=name,
                        version=version,
                        scope=scope,
                        ledger_id=ledger_id,
                        seq=seq,
                        ledger_hash=ledger_hash,
                        state=state,
                        created_at=utc_now(),
                    )
                )
                keep = s.exec(
                    select(Checkpoint.seq)
                    .where(Checkpoint.name == name, Checkpoint.scope == scope, Checkpoint.ledger_id == ledger_id)
                    .order_by(col(Checkpoint.seq).desc())
                    .limit(KEEP_PER_SCOPE)
                ).all()
                s.exec(  # type: ignore[call-overload]
                    delete(Checkpoint)
                    .where(col(Checkpoint.name) == name, col(Checkpoint.scope) == scope)
                    .where(col(Checkpoint.ledger_id) == ledger_id)
                    .where(col(Checkpoint.seq).not_in(list(keep)))
                )
                s.commit()
            return True
        except _errors() as exc:
            log.warning("could not save a projection checkpoint (%s)", exc)
            return False

    def clear(self) -> None:
        from sqlmodel import Session, delete

        from ._read_models import Checkpoint  # lazy: SQLModel, see the class docstring

        try:
            with Session(self._db()) as s:
                s.exec(delete(Checkpoint))  # type: ignore[call-overload]
                s.commit()
        except _errors() as exc:
            log.warning("could not clear projection checkpoints (%s)", exc)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


class ChainCheckpoints:
    """How far the read commands have verified each ledger's hash chain: (seq, hash).

    Lives in `projections.db` beside the projection checkpoints and, like them, is a
    cache: deleting it only means the next read verifies the chain from the start once.
    Plain stdlib sqlite3 (what SQLModel itself uses on this file, so one SQLite library
    per file in a process), not SQLModel: a `swecl log` must not pay its import for it.
    Every failure (no file, a read-only directory, a lock) reads as "no checkpoint" or
    "not saved", never as an error.
    """

    _TABLE = (
        "CREATE TABLE IF NOT EXISTS verified_chain ("
        " ledger_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, hash BLOB NOT NULL, verified_at TEXT NOT NULL)"
    )

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self, ledger_id: str) -> tuple[int, bytes] | None:
        if not self.path.exists():
            return None
        try:
            with closing(connect_stdlib(self.path, readonly=True)) as conn:
                row = conn.execute("SELECT seq, hash FROM verified_chain WHERE ledger_id = ?", (ledger_id,)).fetchone()
        except StdlibError:
            return None  # no table yet, or unreadable: verify from the start
        if row is None or not isinstance(row[0], int) or not isinstance(row[1], bytes):
            return None
        return row[0], row[1]

    def save(self, ledger_id: str, seq: int, digest: bytes) -> bool:
        try:
            with closing(connect_stdlib(self.path)) as conn:
                conn.execute("PRAGMA journal_mode=WAL")  # as CheckpointStore keeps this file
                with conn:
                    conn.execute(self._TABLE)
                    conn.execute(
                        "INSERT OR REPLACE INTO verified_chain (ledger_id, seq, hash, verified_at) VALUES (?, ?, ?, ?)",
                        (ledger_id, seq, digest, utc_now()),
                    )
            return True
        except (StdlibError, OSError) as exc:
            log.debug("could not save the verified chain checkpoint (%s)", exc)
            return False
