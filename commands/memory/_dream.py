"""Dream: the night pass over a version's substrate. Every decision is an event with its reason.

In order: governance (credentials and oversize items that slipped in, e.g. by import),
TTL prune, dedup (near-duplicates merged), contradiction (newer supersedes older on the
same subject), caps (per-repo live item limit). Nothing is deleted: an item leaves the
live set by `memory.pruned`, `memory.merged` or `memory.superseded`, and stays in the
ledger and in `memory.db` with its history. All of a dream's events are one atomic
batch on the header stream `run/{V}`, between `dream.started` and `dream.finished`.

Deciding is a pure function of the state (`plan_dream`), so a second dream over a
substrate with nothing new decides nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from ledger import Ledger, NewEvent, Recorded, SweclError, event_id_for
from ledger.events import (
    DreamFinished,
    DreamStarted,
    Event,
    MemoryMerged,
    MemoryPruned,
    MemorySuperseded,
)
from projections.memory import MemoryItem, MemoryState, expired, load_memory, tokens

from ._governance import DEFAULT_POLICY, Checker, GovernancePolicy

REASONS = ("manual", "pre-eval", "fork")  # fork: `swecl run --fork V@K --dream-at-fork`, before task K


@dataclass(frozen=True)
class DreamPolicy:
    """What a dream does. Defaults are what `swecl dream` and plugin-dreamed use.

    dedup_threshold: Jaccard similarity of word `shingle_size`-grams (of title, body,
    files and symbols, lower-cased) at or above which two same-repo items are the same
    memory. 0.7 merges one task remembered twice (the same issue summary, a different
    outcome line) and keeps different issues apart, whose shingles barely overlap.
    """

    governance: bool = True
    ttl: bool = True
    dedup: bool = True
    dedup_threshold: float = 0.7
    shingle_size: int = 3
    contradictions: bool = True
    max_live_per_repo: int | None = 200
    limits: GovernancePolicy = DEFAULT_POLICY

    def params(self) -> dict[str, object]:
        out = dataclasses.asdict(self)
        out["limits"] = dataclasses.asdict(self.limits)
        return out


@dataclass(frozen=True)
class DreamDecision:
    action: str  # pruned | merged | superseded
    item_id: str
    reason: str
    by: str | None = None  # merged into / superseded by
    similarity: float | None = None


@dataclass(frozen=True)
class DreamReport:
    version: str
    dream_id: str
    reason: str
    decisions: tuple[DreamDecision, ...]
    recorded: list[Recorded]
    live_before: int
    live_after: int

    def lines(self) -> list[str]:
        head = (
            f"dream {self.dream_id} of v{self.version} ({self.reason}): {len(self.decisions)} decision(s), "
            f"live items {self.live_before} -> {self.live_after}"
        )
        rows = [head]
        for d in self.decisions:
            by = f" -> {d.by}" if d.by else ""
            rows.append(f"  {d.action} {d.item_id}{by}: {d.reason}")
        return rows


# -- similarity ---------------------------------------------------------------------------


def shingles(item: MemoryItem, size: int = 3) -> frozenset[tuple[str, ...]]:
    words = tokens(" ".join([item.title, item.body, " ".join(item.files), " ".join(item.symbols)]))
    if len(words) < size:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def jaccard(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _resolved(item: MemoryItem) -> bool:
    return item.outcome == "resolved"


def _value(item: MemoryItem) -> tuple[int, int, int, str]:
    """Higher is worth keeping: resolved, then recalled more, then newer."""
    return (int(_resolved(item)), item.recall_count, item.written_seq, item.item_id)


# -- planning -----------------------------------------------------------------------------


def plan_dream(
    state: MemoryState, *, policy: DreamPolicy = DreamPolicy(), now: datetime | None = None
) -> list[DreamDecision]:
    """The decisions a dream over `state` makes, in the order they are recorded."""
    moment = now if now is not None else datetime.now(UTC)
    live: dict[str, MemoryItem] = {i.item_id: i for i in state.live_items()}
    decisions: list[DreamDecision] = []

    def decide(d: DreamDecision) -> None:
        decisions.append(d)
        live.pop(d.item_id, None)

    if policy.governance:
        checker = Checker(None, policy.limits)
        for item in list(live.values()):
            v = checker.check(
                {
                    "title": item.title,
                    "body": item.body,
                    "tags": item.tags,
                    "files": item.files,
                    "symbols": item.symbols,
                }
            )
            if v is not None:
                decide(DreamDecision("pruned", item.item_id, f"governance ({v.rule}): {v.reason}"))

    if policy.ttl:
        for item in list(live.values()):
            why = expired(state, item, now=moment)
            if why:
                decide(DreamDecision("pruned", item.item_id, f"expired: {why}"))

    if policy.dedup:
        for group in _by_repo(live.values()):
            for d in _dedup(group, policy):
                decide(d)

    if policy.contradictions:
        for group in _by_repo(live.values()):
            for d in _contradictions(group):
                decide(d)

    if policy.max_live_per_repo is not None:
        cap = policy.max_live_per_repo
        for group in _by_repo(live.values()):
            if len(group) <= cap:
                continue
            excess = len(group) - cap
            for item in sorted(group, key=_value)[:excess]:
                decide(
                    DreamDecision(
                        "pruned",
                        item.item_id,
                        f"cap: {item.repo} had {len(group)} live items, over the cap of {cap}; "
                        "pruned the lowest value (unresolved before resolved, least recalled, oldest)",
                    )
                )
    return decisions


def _by_repo(items: Iterable[MemoryItem]) -> list[list[MemoryItem]]:
    groups: dict[str, list[MemoryItem]] = {}
    for item in items:
        groups.setdefault(item.repo, []).append(item)
    return [sorted(groups[r], key=lambda i: (i.written_seq, i.item_id)) for r in sorted(groups)]


def _dedup(items: list[MemoryItem], policy: DreamPolicy) -> list[DreamDecision]:
    """Near-duplicate clusters, each merged into its most valuable member.

    Clusters grow from the newest item: each joins the first (newest) seed it matches.
    """
    newest_first = sorted(items, key=lambda i: (-i.written_seq, i.item_id))
    sh = {i.item_id: shingles(i, policy.shingle_size) for i in newest_first}
    clusters: list[tuple[MemoryItem, list[tuple[MemoryItem, float]]]] = []
    for item in newest_first:
        for seed, members in clusters:
            sim = jaccard(sh[seed.item_id], sh[item.item_id])
            if sim >= policy.dedup_threshold:
                members.append((item, sim))
                break
        else:
            clusters.append((item, []))
    out: list[DreamDecision] = []
    for seed, members in clusters:
        if not members:
            continue
        everyone = [(seed, 1.0)] + members
        survivor = max((m for m, _ in everyone), key=_value)
        for member, sim in everyone:
            if member is survivor:
                continue
            similarity = sim if survivor is seed else jaccard(sh[survivor.item_id], sh[member.item_id])
            out.append(
                DreamDecision(
                    "merged",
                    member.item_id,
                    f"near-duplicate (word-{policy.shingle_size}-shingle Jaccard {similarity:.3f} >= {policy.dedup_threshold}) "
                    f"of {survivor.item_id}, which is kept ({'resolved' if _resolved(survivor) else 'newest'})",
                    by=survivor.item_id,
                    similarity=round(similarity, 6),
                )
            )
    return out


def _contradictions(items: list[MemoryItem]) -> list[DreamDecision]:
    """Newer supersedes older on the same subject: same repo, a shared file and symbol.

    A newer item that did not resolve its task does not supersede an older one that
    did: a failed attempt is not better knowledge than a fix. Items of one daydream
    (same task, same run) are one account, not rivals.
    """
    newest_first = sorted(items, key=lambda i: (-i.written_seq, i.item_id))
    out: list[DreamDecision] = []
    gone: set[str] = set()
    for idx, older in enumerate(newest_first):
        if not older.files or not older.symbols:
            continue
        for newer in newest_first[:idx]:
            if newer.item_id in gone or newer.written_seq == older.written_seq:
                continue
            if newer.source_instance == older.source_instance and newer.written_in == older.written_in:
                continue
            if _resolved(older) and not _resolved(newer):
                continue
            files = sorted(set(newer.files) & set(older.files))
            symbols = sorted(set(newer.symbols) & set(older.symbols))
            if files and symbols:
                out.append(
                    DreamDecision(
                        "superseded",
                        older.item_id,
                        f"contradiction: newer {newer.item_id} covers the same subject ({older.repo} "
                        f"{', '.join(files)}: {', '.join(symbols)})",
                        by=newer.item_id,
                    )
                )
                gone.add(older.item_id)
                break
    return out


# -- the command --------------------------------------------------------------------------


def _events(dream_id: str, decisions: list[DreamDecision]) -> list[Event]:
    events: list[Event] = []
    merged: dict[str, list[DreamDecision]] = {}
    for d in decisions:
        if d.action == "pruned":
            events.append(MemoryPruned(item_id=d.item_id, reason=d.reason, dream_id=dream_id))
        elif d.action == "superseded":
            assert d.by is not None
            events.append(MemorySuperseded(item_id=d.item_id, by=d.by, reason=d.reason, dream_id=dream_id))
        else:
            assert d.by is not None
            if d.by not in merged:
                merged[d.by] = []
                events.append(MemoryMerged(into=d.by, from_=[], dream_id=dream_id))  # placeholder, filled below
            merged[d.by].append(d)
    out: list[Event] = []
    for ev in events:
        if isinstance(ev, MemoryMerged):
            group = merged[ev.into]
            out.append(
                MemoryMerged(
                    into=ev.into,
                    from_=[d.item_id for d in group],
                    reason="; ".join(f"{d.item_id}: {d.reason}" for d in group),
                    similarity=min(d.similarity for d in group if d.similarity is not None),
                    dream_id=dream_id,
                )
            )
        else:
            out.append(ev)
    return out


def dream(
    ledger: Ledger,
    version: str,
    *,
    reason: str = "manual",
    policy: DreamPolicy = DreamPolicy(),
    now: datetime | None = None,
) -> DreamReport:
    """Run one dream pass over `version`'s substrate and record it on `run/{version}`.

    `reason` is `manual` (`swecl dream`) or `pre-eval` (plugin-dreamed, after seeding
    and before the first task). Returns the decisions and the events appended.
    """
    if reason not in REASONS:
        raise SweclError(f"dream reason {reason!r}: use one of {', '.join(REASONS)}")
    header = f"run/{version}"
    header_version = ledger.stream_version(header)
    if header_version < 0:
        raise SweclError(f"no run version {version!r} in {ledger.path}: nothing to dream over")
    cursor = ledger.head()
    state = load_memory(ledger, version, upto=cursor).state
    live_before = len(state.live_items())
    decisions = plan_dream(state, policy=policy, now=now)
    dream_id = "dream-" + hashlib.sha256(f"{version}\x1f{cursor}\x1f{reason}".encode()).hexdigest()[:16]
    events: list[Event] = [DreamStarted(dream_id=dream_id, reason=reason, params=policy.params())]
    events += _events(dream_id, decisions)
    events.append(DreamFinished(dream_id=dream_id, decisions=len(decisions)))
    batch = [NewEvent(ev, event_id_for("dream", dream_id, n)) for n, ev in enumerate(events)]
    # Decided on the state at `cursor`: a header write since then (another dream, a
    # seed) would make these decisions stale, so append only where we read.
    recorded = ledger.append(header, batch, expected_version=header_version, durable=True)
    return DreamReport(
        version=version,
        dream_id=dream_id,
        reason=reason,
        decisions=tuple(decisions),
        recorded=recorded,
        live_before=live_before,
        live_after=live_before - len(decisions),
    )
