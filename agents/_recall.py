"""The recall service an agent talks to, in process or through the MCP server.

One service per task: it knows the run version, sequence, pass, order and repo of the
asking task, so every recall sees exactly what that task may see (docs/design.md section 5) and
is recorded as a `memory.recalled` event on the task's sequence stream.

Note for writers of the same stream: a recall appends at the stream's head while the
agent runs, so code that appends to `run/{V}/{sequence}` after an agent must not reuse
a stream version it read before the agent started.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Self

import msgspec

from ledger import Ledger, LedgerError, StreamRange, SweclError
from ledger.events import MemoryRecalled, RecallHit
from projections.memory import (
    Embedder,
    MemoryProjection,
    MemoryState,
    RecallContext,
    SeedLink,
    load_embedder,
    rank_items,
    ranker_name,
    resolve_seed_chain,
    visible_items,
)

from ._scrub import Scrubber

QUERY_RECORD_CHARS = 2000  # the query text kept in the event (its hash covers all of it)
MAX_K = 50
PASSES_WITHOUT_MEMORY = ("baseline",)


class RecalledItem(msgspec.Struct, frozen=True):
    """What an agent gets back: the item, its rank and score, and its patch text."""

    item_id: str
    rank: int
    score: float
    title: str
    body: str
    repo: str
    files: list[str]
    symbols: list[str]
    outcome: str | None
    patch: str | None
    source_instance: str | None
    source_run: str
    tags: list[str] = msgspec.field(default_factory=list)
    kind: str = "episode"


def query_hash(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()


class RecallService:
    """Recall for one task of one pass of one run version.

    `ledger` is an open Ledger or the path of one (opened on first use, closed by
    `close`). `ranker` is bm25 (default), vector or hybrid; the last two need an
    `embedder` (or `embedder_spec`, e.g. "hashing:256", which is also what the MCP
    server is told).
    """

    def __init__(
        self,
        ledger: Ledger | str | os.PathLike[str],
        version: str,
        sequence_id: str,
        pass_: str,
        order: int,
        instance_id: str,
        attempt: int = 1,
        repo: str | None = None,
        *,
        via: str = "inproc",
        ranker: str = "bm25",
        embedder: Embedder | None = None,
        embedder_spec: str | None = None,
        hidden: Iterable[str] = (),
    ) -> None:
        if isinstance(ledger, Ledger):
            self._ledger: Ledger | None = ledger
            self._owns = False
            self.ledger_path = Path(ledger.path)
        else:
            self._ledger = None
            self._owns = True
            self.ledger_path = Path(ledger)
        self.context = RecallContext(
            version=version,
            sequence_id=sequence_id,
            pass_=pass_,
            order=order,
            repo=repo,
            instance_id=instance_id,
            attempt=attempt,
        )
        self.via = via
        # `swecl counterfactual`: items this task must not see, as if never written (they
        # are left out before ranking, so they shift no other item's score either).
        self.hidden = frozenset(hidden)
        self.ranker = ranker
        self.embedder_spec = embedder_spec
        self.embedder = embedder if embedder is not None else load_embedder(embedder_spec)
        self.ranker_label = ranker_name(ranker, self.embedder)
        # An incremental fold: (chain, cursor, state), refolded only if the chain changes.
        self._cache: tuple[tuple[SeedLink, ...], int, MemoryState] | None = None

    # -- plumbing ---------------------------------------------------------------------------

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            self._ledger = Ledger.open(self.ledger_path)
        return self._ledger

    def close(self) -> None:
        if self._owns and self._ledger is not None:
            self._ledger.close()
            self._ledger = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def stream(self) -> str:
        return f"run/{self.context.version}/{self.context.sequence_id}"

    # -- the substrate this task sees ---------------------------------------------------------

    def _cutoff(self) -> int | None:
        """Where the pass's memory froze: the retest sees the end of this sequence's
        initial pass; `retest-{i}` sees the substrate as its row started, right after
        initial task i finished (before initial task i+1 started, in a ledger older than
        that rule). Fixed points, so the tasks of a pass may run at once and beside the
        initial pass's later tasks."""
        ctx = self.context
        if ctx.pass_ == "initial":
            return None
        led = self.ledger
        if ctx.pass_.startswith("retest-"):
            for rec in led.read(types=["pass.started"], ranges=[StreamRange(self.stream)]):
                if rec.event.pass_ == ctx.pass_:
                    return rec.seq
            try:
                i = int(ctx.pass_.split("-", 1)[1])
            except ValueError:
                return None
            start = led.task_position(ctx.version, i + 1, pass_="initial", sequence_id=ctx.sequence_id)
            return None if start is None else start - 1
        for rec in led.read(types=["pass.finished"], ranges=[StreamRange(self.stream)]):
            if rec.event.pass_ == "initial":
                return rec.seq
        return None

    def state(self) -> MemoryState:
        led = self.ledger
        cutoff = self._cutoff()
        cursor = led.head() if cutoff is None else min(cutoff, led.head())
        chain = resolve_seed_chain(led, self.context.version, cursor)
        projection = MemoryProjection(self.context.version, chain)
        if self._cache is not None and self._cache[0] == chain and self._cache[1] <= cursor:
            _, after, state = self._cache
        else:
            after, state = 0, projection.initial()
        sel = projection.selection()
        for rec in led.read(after=after, upto=cursor, types=sel.types, ranges=list(sel.ranges or ())):
            state = projection.apply(state, rec)
        self._cache = (chain, cursor, state)
        return state

    # -- recall -----------------------------------------------------------------------------

    def recall(
        self, query: str, k: int = 5, repo: str | None = None, *, now: datetime | None = None
    ) -> list[RecalledItem]:
        """The top `k` visible items for `query` (same repo as the task unless `repo`),
        recorded as one `memory.recalled` event."""
        if not isinstance(query, str):
            raise SweclError("recall: query must be text")
        k = max(1, min(int(k), MAX_K))
        ctx = self.context
        target_repo = repo or ctx.repo
        if ctx.pass_ in PASSES_WITHOUT_MEMORY:
            ranked = []
        else:
            items = visible_items(self.state(), ctx, repo=target_repo, now=now)
            if self.hidden:
                items = [i for i in items if i.item_id not in self.hidden]
            ranked = rank_items(items, query, k, ranker=self.ranker, embedder=self.embedder)
        event = MemoryRecalled(
            sequence_id=ctx.sequence_id,
            instance_id=ctx.instance_id,
            order=ctx.order,
            pass_=ctx.pass_,
            attempt=ctx.attempt,
            query_hash=query_hash(query),
            # Scrubbed before the cut, so a cut never leaves half a key. The recall server
            # runs with a minimal environment: there it knows key-shaped text only.
            query=Scrubber().text(query)[:QUERY_RECORD_CHARS],
            repo=target_repo,
            k=k,
            results=[RecallHit(item_id=r.item.item_id, score=r.score, rank=r.rank) for r in ranked],
            via=self.via,
            ranker=self.ranker_label,
        )
        self.ledger.append(self.stream, [event])
        return [
            RecalledItem(
                item_id=r.item.item_id,
                rank=r.rank,
                score=r.score,
                title=r.item.title,
                body=r.item.body,
                repo=r.item.repo,
                files=list(r.item.files),
                symbols=list(r.item.symbols),
                outcome=r.item.outcome,
                patch=self._patch_text(r.item.patch),
                source_instance=r.item.source_instance,
                source_run=r.item.source_run,
                tags=list(r.item.tags),
                kind=r.item.kind,
            )
            for r in ranked
        ]

    def _patch_text(self, digest: str | None) -> str | None:
        if not digest:
            return None
        try:
            return self.ledger.get_blob(digest).decode("utf-8", errors="replace")
        except LedgerError:
            return None

    # -- the MCP server for this same task ----------------------------------------------------

    def mcp_server_argv(self) -> list[str]:
        """The command that serves `recall` over MCP stdio for this task (via = mcp)."""
        ctx = self.context
        argv = [
            sys.executable,
            "-m",
            "agents.recall_server",
            "--ledger",
            str(self.ledger_path.resolve()),
            "--version",
            ctx.version,
            "--sequence",
            ctx.sequence_id,
            "--pass",
            ctx.pass_,
            "--order",
            str(ctx.order),
            "--instance",
            ctx.instance_id,
            "--attempt",
            str(ctx.attempt),
            "--ranker",
            self.ranker,
        ]
        if ctx.repo is not None:
            argv += ["--repo", ctx.repo]
        if self.embedder_spec:
            argv += ["--embedder", self.embedder_spec]
        for item_id in sorted(self.hidden):
            argv += ["--hide", item_id]
        return argv

    def mcp_server_env(self) -> dict[str, str]:
        """Environment the server needs beyond a minimal one: the project on PYTHONPATH
        (MCP clients start servers with a scrubbed environment)."""
        root = str(Path(__file__).resolve().parents[1])
        existing = os.environ.get("PYTHONPATH")
        return {"PYTHONPATH": root if not existing else os.pathsep.join([root, existing])}
