"""Projections: named, versioned pure folds over the ledger, run up to any cursor.

A projection never writes events. Its state as of a seq is `fold(apply, events <= seq,
initial())`; checkpoints in `projections.db` only shorten that fold. A checkpoint is used
only if the projection's name, version and scope match and the ledger's hash at the
checkpoint's seq is the one it was taken at, so bumping `version` after changing `apply`
is all it takes to invalidate every old checkpoint.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

import msgspec

from ledger import Ledger, Recorded, StreamRange

from ._checkpoints import CheckpointStore

S = TypeVar("S")


@dataclass(frozen=True)
class Selection:
    """Which events a projection folds: types (None = all) within stream ranges (None = all)."""

    types: frozenset[str] | None = None
    ranges: tuple[StreamRange, ...] | None = None


class Projection(ABC, Generic[S]):
    """Subclass with `name`, `version`, `state_type`, `initial` and `apply`.

    `apply` may update `state` in place and return it: the runner owns the state and
    checkpoints it by encoding, so nothing aliases. It must depend on nothing but the
    state and the event (no clock, no I/O): that is what makes replays exact.
    """

    name: ClassVar[str]
    version: ClassVar[int]
    state_type: ClassVar[Any]

    def scope(self) -> str:
        """Identity of this instance's parameters (e.g. the run version it is about)."""
        return ""

    def selection(self) -> Selection:
        return Selection()

    @abstractmethod
    def initial(self) -> S: ...

    @abstractmethod
    def apply(self, state: S, rec: Recorded) -> S: ...

    def fold(self, events: Iterable[Recorded], state: S | None = None) -> S:
        st = self.initial() if state is None else state
        for rec in events:
            st = self.apply(st, rec)
        return st


@dataclass
class Folded(Generic[S]):
    state: S
    seq: int  # the cursor: the state reflects every selected event with seq <= this
    from_checkpoint: int | None = None
    applied: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


class Projector:
    """Runs projections against one ledger, using and refreshing checkpoints."""

    def __init__(
        self,
        ledger: Ledger,
        checkpoints: CheckpointStore | None = None,
        *,
        checkpoint_every: int = 2000,
    ) -> None:
        self.ledger = ledger
        self.checkpoints = checkpoints
        self.checkpoint_every = checkpoint_every

    def run(self, projection: Projection[S], upto: int | None = None, *, save: bool | None = None) -> Folded[S]:
        """The projection's state as of `upto` (default: the ledger's head).

        Starts from the newest valid checkpoint at or before `upto`, folds the rest, and
        saves a new checkpoint when that fold was long (or when `save` says so).
        """
        head = self.ledger.head()
        cursor = head if upto is None else max(0, min(upto, head))
        state, start = self._restore(projection, cursor)
        from_checkpoint = start if start else None
        sel = projection.selection()
        applied = 0
        apply = projection.apply
        for rec in self.ledger.read(
            after=start, upto=cursor, types=sel.types, ranges=list(sel.ranges) if sel.ranges is not None else None
        ):
            state = apply(state, rec)
            applied += 1
        should_save = save if save is not None else applied >= self.checkpoint_every
        if should_save and self.checkpoints is not None and cursor > start:
            self._save(projection, cursor, state)
        return Folded(state=state, seq=cursor, from_checkpoint=from_checkpoint, applied=applied)

    def _restore(self, projection: Projection[S], cursor: int) -> tuple[S, int]:
        if self.checkpoints is None or cursor == 0:
            return projection.initial(), 0
        for cp in self.checkpoints.candidates(
            projection.name, projection.version, projection.scope(), self.ledger.ledger_id, cursor
        ):
            if self.ledger.hash_at(cp.seq) != cp.ledger_hash:
                continue
            try:
                return msgspec.msgpack.decode(cp.state, type=projection.state_type), cp.seq
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
        return projection.initial(), 0

    def _save(self, projection: Projection[S], seq: int, state: S) -> None:
        assert self.checkpoints is not None
        ledger_hash = self.ledger.hash_at(seq)
        if ledger_hash is None:
            return
        self.checkpoints.save(
            projection.name,
            projection.version,
            projection.scope(),
            self.ledger.ledger_id,
            seq,
            ledger_hash,
            msgspec.msgpack.encode(state),
        )
