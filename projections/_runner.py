"""Projections: named, versioned pure folds over the ledger, run up to any cursor.

A projection never writes events. Its state as of a seq is `fold(apply, events <= seq,
initial())`; checkpoints in `projections.db` only shorten that fold. A checkpoint is used
only if the projection's name, version and scope match and the ledger's hash at the
checkpoint's seq is the one it was taken at, so bumping `version` after changing `apply`
is all it takes to invalidate every old checkpoint. A `Projector` also remembers, in
memory and under the same rules, the states of its own longer folds, so folding the same
projection again at a later cursor (a replay's several cursors, a catch-up) starts there.

A projection that declares `reads` has its events decoded narrowly (`_views`); one that
does not gets every event decoded in full, as `Ledger.read` gives it.
"""

from __future__ import annotations

import gc
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

import msgspec

from ledger import PAYLOAD_ERRORS, Ledger, Recorded, StreamRange

from ._checkpoints import CheckpointStore
from ._views import Reads, decode_row, decoders_for, merge_reads

S = TypeVar("S")

_MEMO_PER_SCOPE = 8  # remembered states per projection and scope (cursors of one replay)
_MEMO_MIN_APPLIED = 256  # shorter folds are not remembered
_MEMO_BYTES = 64 << 20  # encoded states kept by one projector, at most
_STATE_DECODERS: dict[Any, msgspec.msgpack.Decoder[Any]] = {}


def _state_decoder(state_type: Any) -> msgspec.msgpack.Decoder[Any]:
    # A decoder per state type, made once: building one walks the whole type each time.
    decoder = _STATE_DECODERS.get(state_type)
    if decoder is None:
        decoder = _STATE_DECODERS[state_type] = msgspec.msgpack.Decoder(state_type)
    return decoder


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
    reads: ClassVar[Reads | None] = None
    """Optional: the fields `apply` reads, by event type (see `_views`). Listed types are
    decoded into views of just those fields, which is most of the cost of a fold saved;
    None (the default) decodes every event in full."""

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
    """Runs projections against one ledger, using and refreshing checkpoints (and its own
    remembered states: `memo` projection scopes at most, 0 for none)."""

    def __init__(
        self,
        ledger: Ledger,
        checkpoints: CheckpointStore | None = None,
        *,
        checkpoint_every: int = 2000,
        memo: int = 32,
    ) -> None:
        self.ledger = ledger
        self.checkpoints = checkpoints
        self.checkpoint_every = checkpoint_every
        # States this projector folded, encoded, by (name, version, scope): the next run
        # of the same projection at a later cursor (a replay at several cursors, a
        # catch-up in a long-lived process) folds only what came after. In memory only;
        # validated like a checkpoint (the ledger's hash at its seq). `memo=0` turns it off.
        self._memo_size = memo
        self._memo: OrderedDict[tuple[str, int, str], dict[int, tuple[bytes, bytes]]] = OrderedDict()
        self._memo_bytes = 0

    def run(self, projection: Projection[S], upto: int | None = None, *, save: bool | None = None) -> Folded[S]:
        """The projection's state as of `upto` (default: the ledger's head).

        Starts from the newest valid state at or before `upto` (remembered by this
        projector, or a checkpoint), folds the rest, and saves a new checkpoint when that
        fold was long (or when `save` says so).
        """
        collecting = gc.isenabled()
        # A fold (and decoding a remembered state) builds long-lived, acyclic state: the
        # cyclic collector would only rescan it again and again (a third of a replay's
        # time, measured). Reference counting still frees everything transient.
        gc.disable()
        try:
            return self._run(projection, upto, save)
        finally:
            if collecting:
                gc.enable()

    def run_through(
        self, projection: Projection[S], cursors: Iterable[int], observe: Callable[[int, S], None]
    ) -> Folded[S]:
        """One fold up to the largest of `cursors`, calling `observe(cursor, state)` as it
        reaches each of them, in ascending order.

        The state `observe` sees is the live one the fold goes on mutating: it must copy
        what it keeps. One read and one restore serve every cursor, where `run` at each
        cursor would restore a remembered state (and refold) once per cursor.
        """
        head = self.ledger.head()
        points = sorted({max(0, min(c, head)) for c in cursors})
        if not points:
            raise ValueError("run_through needs at least one cursor")
        collecting = gc.isenabled()
        gc.disable()  # see `run`
        try:
            state, start = self._restore(projection, points[0])
            pending = iter(points)
            nxt = next(pending)
            applied = 0
            apply = projection.apply
            for rec in self._events(projection, start, points[-1]):
                while nxt is not None and rec.seq > nxt:
                    observe(nxt, state)
                    nxt = next(pending, None)
                state = apply(state, rec)
                applied += 1
            while nxt is not None:
                observe(nxt, state)
                nxt = next(pending, None)
            self._keep(projection, state, start, points[-1], applied, None)
            return Folded(state=state, seq=points[-1], from_checkpoint=start or None, applied=applied)
        finally:
            if collecting:
                gc.enable()

    def _run(self, projection: Projection[S], upto: int | None, save: bool | None) -> Folded[S]:
        head = self.ledger.head()
        cursor = head if upto is None else max(0, min(upto, head))
        state, start = self._restore(projection, cursor)
        applied = 0
        apply = projection.apply
        for rec in self._events(projection, start, cursor):
            state = apply(state, rec)
            applied += 1
        self._keep(projection, state, start, cursor, applied, save)
        return Folded(state=state, seq=cursor, from_checkpoint=start or None, applied=applied)

    def _events(self, projection: Projection[S], after: int, upto: int) -> Iterator[Recorded]:
        """The projection's selected events in (after, upto], decoded as it `reads` them."""
        if upto <= after:
            return
        sel = projection.selection()
        ranges = list(sel.ranges) if sel.ranges is not None else None
        if projection.reads is None:
            yield from self.ledger.read(after=after, upto=upto, types=sel.types, ranges=ranges)
            return
        decoders = decoders_for(merge_reads([(sel.types, projection.reads)]))
        for row in self.ledger.read_raw(after=after, upto=upto, types=sel.types, ranges=ranges):
            try:
                event = decode_row(decoders, row[4], row[5], row[7])
            except PAYLOAD_ERRORS as exc:
                raise self.ledger.undecodable(row[0], exc) from None
            yield Recorded(row[0], row[1], row[2], row[3], row[4], row[5], row[6], event, row[8], row[9])

    def _keep(
        self, projection: Projection[S], state: S, start: int, cursor: int, applied: int, save: bool | None
    ) -> None:
        """Remember (and checkpoint) a fold that was worth it: redoing a short one from
        where it started costs less than copying the state every time."""
        should_save = save if save is not None else applied >= self.checkpoint_every
        remember = self._memo_size > 0 and applied >= _MEMO_MIN_APPLIED
        if cursor > start and (remember or (should_save and self.checkpoints is not None)):
            encoded = msgspec.msgpack.encode(state)
            if remember:
                self._remember(projection, cursor, encoded)
            if should_save and self.checkpoints is not None:
                self._save(projection, cursor, encoded)

    def _restore(self, projection: Projection[S], cursor: int) -> tuple[S, int]:
        if cursor == 0:
            return projection.initial(), 0
        key = (projection.name, projection.version, projection.scope())
        remembered = self._memo.get(key, {})
        for seq in sorted((s for s in remembered if s <= cursor), reverse=True):
            ledger_hash, data = remembered[seq]
            if self.ledger.hash_at(seq) != ledger_hash:
                self._memo_bytes -= len(remembered.pop(seq)[1])
                continue
            if seq < cursor and self.checkpoints is not None:
                stored = self._from_store(projection, cursor, newer_than=seq)
                if stored is not None:
                    return stored
            self._memo.move_to_end(key)
            return _state_decoder(projection.state_type).decode(data), seq
        stored = self._from_store(projection, cursor, newer_than=0) if self.checkpoints is not None else None
        return stored if stored is not None else (projection.initial(), 0)

    def _from_store(self, projection: Projection[S], cursor: int, *, newer_than: int) -> tuple[S, int] | None:
        """The newest valid checkpoint at or before `cursor` and after `newer_than`."""
        assert self.checkpoints is not None
        for cp in self.checkpoints.candidates(
            projection.name, projection.version, projection.scope(), self.ledger.ledger_id, cursor
        ):
            if cp.seq <= newer_than:
                return None
            if self.ledger.hash_at(cp.seq) != cp.ledger_hash:
                continue
            try:
                state = _state_decoder(projection.state_type).decode(cp.state)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            self._remember(projection, cp.seq, cp.state, ledger_hash=cp.ledger_hash)
            return state, cp.seq
        return None

    def _remember(self, projection: Projection[S], seq: int, encoded: bytes, *, ledger_hash: bytes | None = None) -> None:
        if self._memo_size <= 0 or len(encoded) > _MEMO_BYTES:
            return
        ledger_hash = ledger_hash if ledger_hash is not None else self.ledger.hash_at(seq)
        if ledger_hash is None:
            return
        key = (projection.name, projection.version, projection.scope())
        entries = self._memo.setdefault(key, {})
        old = entries.pop(seq, None)
        self._memo_bytes += len(encoded) - (len(old[1]) if old else 0)
        entries[seq] = (ledger_hash, encoded)
        while len(entries) > _MEMO_PER_SCOPE:
            self._memo_bytes -= len(entries.pop(next(iter(entries)))[1])  # the least recently folded
        self._memo.move_to_end(key)
        # Least recently used scopes go first, past the count or the byte budget.
        while len(self._memo) > self._memo_size or (self._memo_bytes > _MEMO_BYTES and len(self._memo) > 1):
            _, dropped = self._memo.popitem(last=False)
            self._memo_bytes -= sum(len(data) for _, data in dropped.values())

    def _save(self, projection: Projection[S], seq: int, encoded: bytes) -> None:
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
            encoded,
        )
