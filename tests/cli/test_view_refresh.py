"""`swecl view` refreshes without folding the ledger again: events read per request, counted
at the Ledger's read API, on a real SQLite ledger that a run appends to between requests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.ledgers import LedgerBuilder
from ledger import Ledger
from projections import Results
from projections.view import View
from tests.report.realistic import BASE, DJANGO, PLAN, PLUGIN, SYMPY, build_realistic

LIVE = "live"
_PAGES = ("/", "/api/runs", f"/run/{BASE}", f"/run/{PLUGIN}", f"/run/{LIVE}", f"/run/{LIVE}/seq/{DJANGO}",
          f"/run/{PLUGIN}/task/{PLAN[DJANGO][1].instance_id}", f"/run/{LIVE}/task/{PLAN[DJANGO][0].instance_id}")


class Reads:
    """Rows the Ledger's read methods hand out, by the run their stream belongs to."""

    def __init__(self) -> None:
        self.by_run: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return sum(self.by_run.values())

    def count(self, stream: str) -> None:
        parts = stream.split("/")
        self.by_run[parts[1] if parts[0] == "run" and len(parts) > 1 else stream] += 1


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    found = Reads()
    originals = {name: getattr(Ledger, name) for name in ("read", "read_raw", "read_stream")}

    def counted(name: str) -> Any:
        original = originals[name]

        def wrapper(self: Ledger, *args: Any, **kwargs: Any) -> Iterator[Any]:
            for row in original(self, *args, **kwargs):
                found.count(row.stream if name != "read_raw" else row[2])
                yield row
        return wrapper

    for name in originals:
        monkeypatch.setattr(Ledger, name, counted(name))

    def get(self: Ledger, seq: int) -> Any:
        rec = original_get(self, seq)
        if rec is not None:
            found.count(rec.stream)
        return rec

    original_get = Ledger.get
    monkeypatch.setattr(Ledger, "get", get)
    return found


def _live_run(root: Path) -> LedgerBuilder:
    """A third run, under way: django's first task done, the ledger open for more."""
    b = LedgerBuilder(Ledger.open(root / "ledger.db"))
    b.start_run(LIVE, stage="plugin-blank", plan=PLAN)
    b.pass_mark(LIVE, DJANGO, "initial", "started")
    b.task(LIVE, DJANGO, 1, status="resolved", write=b.item(LIVE, DJANGO, 1, "mem-live-1"))
    return b


def _bodies(view: View) -> dict[str, bytes]:
    out = {}
    for page in _PAGES:
        response = view.respond(page)
        assert response.status == 200, (page, response.body[:300])
        out[page] = response.body
    return out


def test_a_refresh_reads_nothing_and_a_grown_ledger_only_the_run_that_grew(tmp_path: Path, reads: Reads) -> None:
    root = tmp_path / "results"
    build_realistic(root)
    builder = _live_run(root)
    try:
        view = View(Results(root))
        first = _bodies(view)
        assert reads.by_run[BASE] > 0 and reads.by_run[PLUGIN] > 0 and reads.by_run[LIVE] > 0  # the first fold

        reads.by_run.clear()
        assert _bodies(view) == first
        assert reads.total == 0, reads.by_run  # unchanged ledger: the head, and nothing else

        # The live run finishes its second task; a task of the other sequence starts.
        head = Ledger.open(root / "ledger.db", readonly=True)
        try:
            before = head.head()
            builder.task(LIVE, DJANGO, 2, status="unresolved", recalls=[[("mem-live-1", 0.8)]])
            builder.task_started(LIVE, SYMPY, 1)
            appended = head.head() - before
        finally:
            head.close()
        reads.by_run.clear()
        grown = _bodies(view)
        # Nothing of the runs that did not move is read again; the new events are read once
        # to see what moved, then the live run (and only it) is folded again.
        assert reads.by_run[BASE] == 0 and reads.by_run[PLUGIN] == 0, reads.by_run
        assert set(reads.by_run) == {LIVE} and reads.by_run[LIVE] >= appended
        # And what is served is what a view that never saw the ledger before serves.
        fresh = View(Results(root))
        assert grown == _bodies(fresh)
        assert grown["/"] != first["/"] and grown[f"/run/{LIVE}"] != first[f"/run/{LIVE}"]
        assert 'data-run="live"' in grown["/"].decode() and 'data-done="2"' in grown["/"].decode()
    finally:
        builder.close()


def test_a_different_ledger_in_the_same_place_is_folded_from_scratch(tmp_path: Path, reads: Reads) -> None:
    """The results folder replaced under a running view (same path, another ledger): nothing kept is served."""
    root = tmp_path / "results"
    build_realistic(root)
    view = View(Results(root))
    before = view.respond(f"/run/{BASE}").body
    for name in ("ledger.db", "ledger.db-wal", "ledger.db-shm", "projections.db"):
        (root / name).unlink(missing_ok=True)
    other = LedgerBuilder.create(root / "ledger.db")
    try:
        other.start_run(BASE, stage="base", plan={DJANGO: PLAN[DJANGO]})
        other.run_pass(BASE, DJANGO, "initial", [0, 0, 0, 0, 0])
        other.finish_run(BASE)
    finally:
        other.close()
    reads.by_run.clear()
    after = view.respond(f"/run/{BASE}").body
    assert reads.by_run[BASE] > 0 and after != before
    assert after == View(Results(root)).respond(f"/run/{BASE}").body


def test_the_runs_page_shows_memory_on_vs_off_as_the_report_counts_it(tmp_path: Path) -> None:
    import re

    from projections.report import collect
    from projections.report._rates import contrast_rows

    root = tmp_path / "results"
    build_realistic(root)
    page = View(Results(root)).respond("/").body.decode()
    results = Results(root)
    with results.open_ledger(readonly=True) as ledger:
        data = collect(ledger, results.projector(ledger), [])
    for row in contrast_rows(data.versions):
        cell = re.search(rf'<tr data-run="{re.escape(row.version)}".*?<td data-contrast="(on|off)">([^<]*)</td>', page)
        assert cell is not None, row.version
        if row.kind == "self":  # a run without memory: its initial pass, memory off
            assert cell.group(1) == "off" and f"{row.off.resolved}/{row.off.valid}" in cell.group(2)  # type: ignore[union-attr]
        elif row.kind == "baseline":
            assert row.on is not None and row.off is not None
            assert cell.group(1) == "on" and cell.group(2).startswith(f"on {row.on.resolved}/{row.on.valid} ")
            assert f"off {row.off.resolved}/{row.off.valid} " in cell.group(2)
            assert row.delta is not None and f"Δ {row.delta:+.2f}" in cell.group(2)
