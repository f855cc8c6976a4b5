"""What the view has folded, kept between requests, and dropped only when the ledger says so.

A page of the view is a fold of some of the ledger's events: a run's outcomes and audit
read the run's own streams (`run/V`, `run/V/...`), plus a few kinds of event anywhere
(task validations, the runs' starts and ends, memory writes for the titles of recalled
items). Each value kept here names those as its dependencies. On a request the cache
asks the ledger for its head (one indexed `MAX(seq)`):

- unchanged: every value kept is still the fold of the same events; nothing is read;
- grown: only the events after the last head seen are read (their stream and type, not
  decoded), and the values that depend on one of them are dropped; the rest stay;
- a different ledger, or one whose event at the last head seen is not the one seen (a
  results folder replaced under a running view): everything is dropped.

Nothing kept depends on the clock or on files beside the ledger: a run's live status
(its lock) and the time left are computed again on every request from what is kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ledger import Ledger

T = TypeVar("T")

MAX_ENTRIES = 1024
"""Values kept at most; the least recently used go first."""

Dependency = tuple[str, str]
"""("run", version): any event of the run's streams; ("type", event type): any such event anywhere."""


def on_run(version: str) -> Dependency:
    return ("run", version)


def on_types(types: Iterable[str]) -> list[Dependency]:
    return [("type", t) for t in types]


def _run_of(stream: str) -> str | None:
    # `run/V` and `run/V/SEQUENCE`: the run the event belongs to.
    if not stream.startswith("run/"):
        return None
    return stream[4:].split("/", 1)[0]


@dataclass
class _Entry:
    value: Any
    depends: frozenset[Dependency]


@dataclass
class FoldCache:
    """Values folded from the ledger as of `head`, each with what it depends on."""

    ledger_id: str | None = None
    head: int = 0
    head_hash: bytes | None = None
    entries: dict[tuple[Any, ...], _Entry] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)
    """Held for a whole request's use of the cache: the server answers requests on threads."""

    def sync(self, ledger: Ledger) -> int:
        """Bring the cache to the ledger's head; returns the head."""
        head = ledger.head()
        if ledger.ledger_id != self.ledger_id or head < self.head or (
            self.head and ledger.hash_at(self.head) != self.head_hash
        ):
            self.entries.clear()
        elif head > self.head:
            changed: set[Dependency] = set()
            # Stream and type of each new event, nothing decoded: what was appended, not what it says.
            for row in ledger.read_raw(after=self.head, upto=head):
                stream, type_ = row[2], row[4]
                changed.add(("type", type_))
                if (run := _run_of(stream)) is not None:
                    changed.add(("run", run))
            self.entries = {k: e for k, e in self.entries.items() if not (e.depends & changed)}
        self.ledger_id = ledger.ledger_id
        self.head = head
        self.head_hash = ledger.hash_at(head) if head else None
        return head

    def get(self, key: tuple[Any, ...], depends: Iterable[Dependency], compute: Callable[[], T]) -> T:
        """The value kept under `key`, or `compute()` kept there (call `sync` first)."""
        found = self.entries.pop(key, None)
        if found is None:
            found = _Entry(compute(), frozenset(depends))
        self.entries[key] = found  # the most recently used last
        while len(self.entries) > MAX_ENTRIES:
            # A shown attempt holds its patch and logs: a long browse must not keep them all.
            del self.entries[next(iter(self.entries))]
        return found.value  # type: ignore[no-any-return]
