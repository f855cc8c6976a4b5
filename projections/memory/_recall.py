"""Recall: which items a task may see, and how they rank against a query.

Visibility is a pure function of the substrate state and the asking task; ranking is a
pure function of the visible items and the query. The default ranker is SQLite FTS5's
bm25 over an in-memory index built per call (a few hundred items at most, so building
costs less than keeping one in sync); vectors go through an `Embedder` and are only
ever computed offline (a hashing embedder here; a packaged local model if installed).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from ledger import SweclError, sqlite
from projections._passes import retest_row

from ._state import MemoryItem, MemoryState, expired

RANKERS = ("bm25", "vector", "hybrid")

# Column weights of bm25(): a title or a touched symbol/file says more than a word
# somewhere in a long body; tags are mostly bookkeeping.
FTS_COLUMNS = ("title", "body", "files", "symbols", "tags")
BM25_WEIGHTS = (2.0, 1.0, 1.5, 1.5, 0.5)
FTS_DDL = (
    "CREATE VIRTUAL TABLE items_fts USING fts5(item_id UNINDEXED, "
    + ", ".join(FTS_COLUMNS)
    + ", tokenize = 'unicode61 remove_diacritics 2')"
)

# Long issue texts are queries too; past this many distinct terms bm25 gains nothing.
MAX_QUERY_TERMS = 256
# Reciprocal-rank fusion constant (the usual 60): ranks matter, raw scores do not.
RRF_K = 60
# Scores are rounded to this many significant digits before ordering: float noise
# must never decide a tie, and bm25 over a tiny corpus gives tiny (clamped-IDF) scores,
# so a fixed number of decimals would flatten them all into ties.
SCORE_DIGITS = 9


def round_score(x: float) -> float:
    return float(f"{x:.{SCORE_DIGITS}g}")


_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

# English function words dropped from queries. Issue texts are long prose; with a
# substrate of a few items, bm25's IDF would otherwise let "the" outweigh "header"
# (a term in most items gets a near-zero IDF, a rare "the" a large one).
STOPWORDS = frozenset(
    """a about after again all also am an and any are as at be been before being but by can could did do does
    doing down during each few for from further had has have having he her here hers him his how i if in into is
    it its itself just me more most my no nor not now of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your yours""".split()  # noqa: SIM905
)


def tokens(text: str) -> list[str]:
    """Lower-case word tokens, split like FTS5's unicode61 tokenizer (underscores split)."""
    return [t.lower() for t in _TOKEN.findall(text)]


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression OR-ing the query's distinct terms (stopwords dropped), each quoted.

    Quoting makes any user text safe (FTS5 syntax such as NEAR, ^ or a bare quote in an
    issue would otherwise be a syntax error).
    """
    seen: dict[str, None] = {}
    for tok in tokens(text):
        if tok not in seen and tok not in STOPWORDS:
            seen[tok] = None
            if len(seen) >= MAX_QUERY_TERMS:
                break
    return " OR ".join(f'"{t}"' for t in seen)


def item_text(item: MemoryItem) -> str:
    return "\n".join([item.title, item.body, " ".join(item.files), " ".join(item.symbols), " ".join(item.tags)])


# -- visibility ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RecallContext:
    """The task asking: run version, sequence, pass, order (and its repo)."""

    version: str
    sequence_id: str
    pass_: str
    order: int
    repo: str | None = None
    instance_id: str = ""
    attempt: int = 1


def written_by(item: MemoryItem, version: str) -> bool:
    """Written by a daydream of `version` itself (not seeded or imported into it)."""
    return len(item.origin) == 1 and item.origin[0].via == "written" and item.origin[0].run == version


def written_later(item: MemoryItem, ctx: RecallContext) -> bool:
    """An item this run wrote at or after the asking task's position in the pass.

    In the initial pass, task K sees only what tasks before K wrote (even if a resumed
    or parallel writer already recorded more). In `retest-{i}`, what tasks 1..i wrote.
    The final retest sees the whole initial pass.
    """
    if not written_by(item, ctx.version) or item.source_order is None or item.source_pass not in (None, "initial"):
        return False
    if ctx.pass_ == "initial":
        return item.source_order >= ctx.order
    upto = retest_row(ctx.pass_)
    if upto is not None:
        return item.source_order > upto
    return False


def visible_items(
    state: MemoryState, ctx: RecallContext, *, repo: str | None = None, now: datetime | None = None
) -> list[MemoryItem]:
    """Live, same-repo, unexpired items not written after the asking task, by item id."""
    target_repo = repo if repo is not None else ctx.repo
    moment = now if now is not None else datetime.now(UTC)
    current = (ctx.version, ctx.sequence_id, ctx.order) if ctx.pass_ == "initial" else None
    out = []
    for item in state.live_items(target_repo):
        if written_later(item, ctx):
            continue
        if expired(state, item, now=moment, current=current):
            continue
        out.append(item)
    return out


# -- ranking ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranked:
    item: MemoryItem
    score: float
    rank: int  # 1-based


@runtime_checkable
class Embedder(Protocol):
    """Texts to vectors, offline and deterministic for a given model."""

    @property
    def name(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashingEmbedder:
    """Feature hashing of word tokens into `dim` signed buckets, 1+log(tf), L2-normalised.

    No model, no download, identical across processes and machines (blake2b, not
    Python's salted hash): the embedder tests and CI use.
    """

    def __init__(self, dim: int = 256) -> None:
        if dim < 8:
            raise SweclError(f"hashing embedder dim {dim}: use at least 8")
        self.dim = dim

    @property
    def name(self) -> str:
        return f"hashing-{self.dim}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for tok, tf in sorted(Counter(tokens(text)).items()):
            digest = hashlib.blake2b(tok.encode(), digest_size=8).digest()
            h = int.from_bytes(digest, "big")
            vec[h % self.dim] += (1.0 + math.log(tf)) * (1.0 if (h >> 63) & 1 else -1.0)
        norm = math.sqrt(sum(v * v for v in vec))
        return [v / norm for v in vec] if norm else vec


class LocalModelEmbedder:
    """A sentence-transformers model from a local directory, never downloaded.

    Only for users who installed `sentence-transformers` and have the model on disk;
    the Hub is forced offline before the library is imported.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        p = Path(path)
        if not p.is_dir():
            raise SweclError(f"embedder model {p}: not a directory; give a local model folder (nothing is downloaded)")
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        try:
            from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]
        except ImportError:
            raise SweclError(
                "embedder 'local:...' needs the sentence-transformers package, which is not installed"
            ) from None
        self._model = SentenceTransformer(str(p), local_files_only=True)
        self._name = f"local-{p.name}"

    @property
    def name(self) -> str:
        return self._name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self._model.encode(list(texts), normalize_embeddings=True)]


def load_embedder(spec: str | None) -> Embedder | None:
    """`hashing`, `hashing:DIM` or `local:/path/to/model`; None for none."""
    if not spec:
        return None
    kind, _, arg = spec.partition(":")
    if kind == "hashing":
        try:
            return HashingEmbedder(int(arg) if arg else 256)
        except ValueError:
            raise SweclError(f"embedder {spec!r}: the dimension must be an integer, e.g. hashing:256") from None
    if kind == "local" and arg:
        return LocalModelEmbedder(arg)
    raise SweclError(f"embedder {spec!r}: use hashing, hashing:DIM or local:/path/to/model")


def ranker_name(ranker: str, embedder: Embedder | None) -> str:
    if ranker == "bm25":
        return "bm25"
    if embedder is None:
        raise SweclError(f"ranker {ranker!r} needs an embedder (e.g. --embedder hashing)")
    return f"{ranker}:{embedder.name}"


def rank_items(
    items: Sequence[MemoryItem],
    query: str,
    k: int = 5,
    *,
    ranker: str = "bm25",
    embedder: Embedder | None = None,
) -> list[Ranked]:
    """The top `k` items for `query`; equal scores are ordered by item id.

    Scores are rounded (to 9 significant digits) before ordering.
    bm25 scores are -bm25() (higher is better); vector scores are cosine similarity;
    hybrid is reciprocal-rank fusion of the two.
    """
    if ranker not in RANKERS:
        raise SweclError(f"ranker {ranker!r}: use one of {', '.join(RANKERS)}")
    if k < 1 or not items:
        return []
    if ranker == "bm25":
        scored = _bm25(items, query)
    elif ranker == "vector":
        scored = _cosine(items, query, _need(embedder, ranker))
    else:
        scored = _fuse(_bm25(items, query), _cosine(items, query, _need(embedder, ranker)))
    by_id = {i.item_id: i for i in items}
    ordered = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    return [Ranked(by_id[item_id], score, n) for n, (item_id, score) in enumerate(ordered, start=1)]


def _need(embedder: Embedder | None, ranker: str) -> Embedder:
    if embedder is None:
        raise SweclError(f"ranker {ranker!r} needs an embedder (e.g. --embedder hashing)")
    return embedder


def _bm25(items: Sequence[MemoryItem], query: str) -> dict[str, float]:
    match = fts_query(query)
    if not match:
        return {}
    conn = sqlite.connect(":memory:")
    try:
        conn.execute(FTS_DDL)
        with conn:
            conn.executemany(
                "INSERT INTO items_fts (item_id, title, body, files, symbols, tags) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (i.item_id, i.title, i.body, " ".join(i.files), " ".join(i.symbols), " ".join(i.tags))
                    for i in sorted(items, key=lambda i: i.item_id)
                ],
            )
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        rows = conn.execute(
            f"SELECT item_id, bm25(items_fts, 0.0, {weights}) FROM items_fts WHERE items_fts MATCH ?", (match,)
        ).fetchall()
    finally:
        conn.close()
    return {item_id: round_score(-float(score)) for item_id, score in rows}


def _cosine(items: Sequence[MemoryItem], query: str, embedder: Embedder) -> dict[str, float]:
    ordered = sorted(items, key=lambda i: i.item_id)
    vectors = embedder.embed([query] + [item_text(i) for i in ordered])
    q = vectors[0]
    out = {}
    for item, v in zip(ordered, vectors[1:]):
        score = round_score(sum(a * b for a, b in zip(q, v)))
        if score > 0:
            out[item.item_id] = score
    return out


def _fuse(*rankings: dict[str, float]) -> dict[str, float]:
    fused: dict[str, float] = {}
    for scores in rankings:
        ordered = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        for n, (item_id, _) in enumerate(ordered, start=1):
            fused[item_id] = fused.get(item_id, 0.0) + 1.0 / (RRF_K + n)
    return {item_id: round_score(score) for item_id, score in fused.items()}
