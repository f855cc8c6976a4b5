"""The view's requests -> responses, without any server: `View(results).respond(target)`.

Every request opens the ledger read-only (apsw's read-only flag: nothing can be written
through it), asks the projections the CLI asks, renders, and closes it. What those
projections folded is kept between requests (`_cache.FoldCache`) until an event they
depend on is appended: a refresh of an unchanged ledger reads no event, one after a run
appended reads the new events and folds again only what they touch (that run). Each page
is still the ledger as of that request; `/api/head` (the last global position, one indexed
lookup) is what a page polls, when `/api/events` cannot push it, to know when to fetch itself again.

Routes (GET and HEAD only):

    /                                  the runs, with progress and headline metrics
    /run/V                             one run: facts, progress/ETA, metrics, a(i,j) per sequence
    /run/V/seq/S                       one sequence of a run: metrics, a(i,j), its tasks
    /run/V/task/T[?pass=P]             one attempt's evidence (`swecl show V T --pass P`)
    /run/V/task/T/FILE[?pass=P]        the files `swecl show --files` writes, raw
    /api/head                          {"head": seq}
    /api/events                        the head pushed as Server-Sent Events (`_events`; served
                                       by the HTTP server as a stream, not by `respond`)
    /api/runs                          the runs as `swecl runs --json`, each with its progress
    /static/view.css, /static/view.js
"""

from __future__ import annotations

import dataclasses
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import msgspec

from ledger import Ledger, SweclError
from ledger.errors import NotFound
from projections import (
    Projector,
    Results,
    RunsProjection,
    RunSummary,
    VersionMetrics,
    canonical_version,
    live_status,
    not_gradeable,
    outcomes,
    run_not_gradeable,
    run_row,
    runs,
)
from projections.audit import audit_task, pass_rank
from projections.metrics import compute
from projections.report import assessment_runs, collect, memory_items, run_assessment, run_label
from projections.show import attempt_files, show_attempt

from . import _pages
from ._cache import Dependency, FoldCache, on_run, on_types
from ._events import head_events
from ._progress import ProgressFacts, progress_facts, progress_now
from ._static import CSS, SCRIPT

# No inline script or style on any page, nothing from elsewhere; the page may fetch only
# its own server (the push stream and the poll), and may not be framed.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
JSON = "application/json"


@dataclass
class Response:
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class View:
    results: Results
    log_error: Callable[[str], None] = lambda line: None
    secrets: Callable[[Ledger, str], tuple[Any, Any]] | None = None
    """version -> (grading secrets or None, `DatasetNote`) for the audit's test-content flag
    (`commands.inputs.load_task_secrets`; the write side's, so the CLI passes it in). None:
    the flag is not checked, and the task page says so."""
    cache: FoldCache = field(default_factory=FoldCache)
    """What earlier requests folded, kept until the ledger appends an event it depends on."""

    def open(self) -> Ledger:
        # Checked once at start-up (`swecl view` opens it with the usual chain check);
        # per request a plain read-only open, so serving a page writes nothing anywhere.
        return self.results.open_ledger(readonly=True, check=False)

    def events(self, **timing: float) -> Iterator[bytes]:
        """The chunks of `/api/events`, forever (see `_events.head_events`): the server writes
        them as they come, and stops when the page has gone."""
        return head_events(self.open, **timing)

    def respond(self, target: str) -> Response:
        """The response to `GET target` (a path with an optional query)."""
        parts = urlsplit(target)
        path = parts.path
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if path == "/static/view.css":
            return Response(200, "text/css; charset=utf-8", CSS.encode())
        if path == "/static/view.js":
            return Response(200, "text/javascript; charset=utf-8", SCRIPT.encode())
        head = 0
        try:
            with self.open() as ledger, self.cache.lock:
                head = self.cache.sync(ledger)
                if path == "/api/head":
                    return _json({"head": head, "ledger_id": ledger.ledger_id})
                return self._route(ledger, head, path, query)
        except SweclError as exc:
            # An unknown run, task or pass (NotFound, or what `swecl show` says in its one line).
            return self._error(404, str(exc), head, path)
        except Exception as exc:  # a bug, or a damaged ledger: the traceback to the log, one line on the page
            self.log_error(f"{target}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            return self._error(500, f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())}", head, path)

    def _error(self, status: int, message: str, head: int, path: str) -> Response:
        if path.startswith("/api/"):
            return _json({"error": message}, status)
        return Response(status, HTML, _pages.error_page(status, message, head).encode())

    def _route(self, ledger: Ledger, head: int, path: str, query: dict[str, str]) -> Response:
        segments = [unquote(s) for s in path.strip("/").split("/")] if path.strip("/") else []
        if len(segments) > 1 and segments[0] == "run":
            given = segments[1]  # `v2` names run 2, as on the command line
            segments[1] = self.cache.get(("canonical", given), _RUNS_DEPS, lambda: canonical_version(ledger, given))
        match segments:
            case []:
                return _html(self._runs_page(ledger, head))
            case ["api", "runs"]:
                return _json([{**listing.row, "progress": _progress_doc(listing.progress)}
                              for listing in self._listings(ledger)])
            case ["funnels"]:
                projector = self.results.projector(ledger)
                reports = [self._version(ledger, v) for v in self._known(ledger, projector)]
                return _html(_pages.funnels_page(reports, head))
            case ["run", version]:
                return _html(self._run_page(ledger, head, version))
            case ["run", version, "seq", sequence_id]:
                return _html(self._sequence_page(ledger, head, version, sequence_id))
            case ["run", version, "task", task_id]:
                return _html(self._task_page(ledger, head, version, task_id, query.get("pass", "initial")))
            case ["run", version, "task", task_id, name]:
                return self._task_file(ledger, version, task_id, query.get("pass", "initial"), name)
        raise NotFound(f"nothing at {path}")

    # -- pages --------------------------------------------------------------------------

    def _known(self, ledger: Ledger, projector: Projector) -> dict[str, RunSummary]:
        return self.cache.get(("runs",), _RUNS_DEPS, lambda: runs(ledger, projector))

    def _outcomes(self, ledger: Ledger, projector: Projector, version: str) -> Any:
        return self.cache.get(("outcomes", version), [on_run(version)], lambda: outcomes(ledger, projector, version))

    def _facts(self, ledger: Ledger, projector: Projector, run: RunSummary) -> ProgressFacts:
        return self.cache.get(("progress", run.version), [on_run(run.version)],
                              lambda: progress_facts(ledger, run, self._outcomes(ledger, projector, run.version)))

    def _listings(self, ledger: Ledger) -> list[_pages.RunListing]:
        projector = self.results.projector(ledger)
        out = []
        for version, run in self._known(ledger, projector).items():
            metrics, row = self.cache.get(("listing", version), [on_run(version), *_VALIDITY_DEPS],
                                          lambda run=run: self._listing(ledger, projector, run))  # type: ignore[misc]
            # The run's lock and the clock are not in the ledger: asked on every request.
            status = live_status(self.results, run)
            progress = progress_now(self._facts(ledger, projector, run), status)
            out.append(_pages.RunListing(row={**row, "status": status}, metrics=metrics, progress=progress))
        return out

    def _listing(self, ledger: Ledger, projector: Projector, run: RunSummary) -> tuple[VersionMetrics, dict[str, Any]]:
        # As `metrics_for` scores a run (every run, failed ones included), and `swecl runs --json`'s row.
        state = self._outcomes(ledger, projector, run.version)
        found = self.cache.get(("not_gradeable",), _VALIDITY_DEPS, lambda: not_gradeable(ledger))
        excluded = run_not_gradeable(state, found)
        row = run_row(self.results, ledger, run, state)
        metrics = VersionMetrics(run, state, compute(state.to_metric_inputs(excluded), "native"), excluded,
                                 row["memory_server"])
        return metrics, row

    def _runs_page(self, ledger: Ledger, head: int) -> str:
        return _pages.runs_page(self._listings(ledger), head, str(self.results.ledger_path))

    def _version(self, ledger: Ledger, version: str) -> Any:
        projector = self.results.projector(ledger)
        known = self._known(ledger, projector)
        if version not in known:
            raise NotFound(f"no run version {version!r} in {ledger.path} (versions: {', '.join(known) or 'none yet'})")
        # The titles of recalled items come from the memory writes of every run: kept apart,
        # so a run that grew folds its own events again, not every run's memory.
        items = self.cache.get(("memory_items",), _ITEM_DEPS, lambda: memory_items(ledger))
        depends = [on_run(version), *_VALIDITY_DEPS, *_RUNS_DEPS, *_ITEM_DEPS, *_COUNTERFACTUAL_DEPS]
        return self.cache.get(("version", version), depends,
                              lambda: collect(ledger, projector, [version], known=known, items=items).versions[0])

    def _run_page(self, ledger: Ledger, head: int, version: str) -> str:
        vr = self._version(ledger, version)
        status = live_status(self.results, vr.run)
        projector = self.results.projector(ledger)
        progress = progress_now(self._facts(ledger, projector, vr.run), status)
        known = self._known(ledger, projector)
        # Against its base, as `swecl metrics` says it: depends on the base and oracle runs too.
        depends = [on_run(v) for v in (version, *assessment_runs(vr.run, known))]
        assessed = self.cache.get(("assessment", version), [*depends, *_VALIDITY_DEPS, *_RUNS_DEPS],
                                  lambda: run_assessment(
                                      ledger, projector, known, vr,
                                      outcomes_of=lambda v: self._outcomes(ledger, projector, v),
                                      gradeable=self.cache.get(("not_gradeable",), _VALIDITY_DEPS,
                                                               lambda: not_gradeable(ledger))))
        return _pages.run_page(dataclasses.replace(vr, assessed=assessed), status, progress, head)

    def _sequence_page(self, ledger: Ledger, head: int, version: str, sequence_id: str) -> str:
        vr = self._version(ledger, version)
        seq = vr.sequences.get(sequence_id)
        if seq is None:
            raise NotFound(f"run {version} has no sequence {sequence_id!r} (sequences: {', '.join(vr.sequences)})")
        return _pages.sequence_page(vr, seq, live_status(self.results, vr.run), head)

    def _shown(self, ledger: Ledger, version: str, task_id: str, pass_: str) -> Any:
        return self.cache.get(("show", version, task_id, pass_), [on_run(version), *_VALIDITY_DEPS],
                              lambda: show_attempt(ledger, version, task_id, pass_=pass_))

    def _task_page(self, ledger: Ledger, head: int, version: str, task_id: str, pass_: str) -> str:
        shown = self._shown(ledger, version, task_id, pass_)
        projector = self.results.projector(ledger)
        run = self._known(ledger, projector)[version]
        depends = [on_run(version), *_RUNS_DEPS, *_ITEM_DEPS]
        flags, dataset, passes = self.cache.get(("audit", version, task_id, pass_), depends,
                                                lambda: self._task_audit(ledger, projector, version, shown, pass_))
        return _pages.task_page(shown, run_label(run), flags, dataset, passes, live_status(self.results, run), head,
                                list(attempt_files(shown)))

    def _task_audit(self, ledger: Ledger, projector: Projector, version: str, shown: Any, pass_: str) -> tuple[Any, Any, list[str]]:
        secrets, note = self.secrets(ledger, version) if self.secrets is not None else (None, None)
        audit = audit_task(ledger, version, shown.instance_id, pass_=pass_, secrets=secrets, dataset=note)
        flags = {(r.seq, h.rank): list(h.flags) for r in audit.recalls if r.attempt == shown.attempt for h in r.hits}
        cells = self._outcomes(ledger, projector, version).sequences.get(shown.sequence_id)
        ran = [p for p, by_order in cells.passes.items() if shown.order in by_order] if cells is not None else []
        return flags, audit.dataset, sorted(set(ran) | {pass_}, key=pass_rank)

    def _task_file(self, ledger: Ledger, version: str, task_id: str, pass_: str, name: str) -> Response:
        files = attempt_files(self._shown(ledger, version, task_id, pass_))
        if name not in files:
            raise NotFound(f"no file {name!r} for this attempt (files: {', '.join(files)})")
        kind = JSON if name.endswith(".json") else TEXT
        return Response(200, kind, files[name])


# What the runs themselves are (`RunsProjection`: their starts, resumes, ends and seeds) and
# which tasks this host can grade (`swecl validate`) are folded from events of every stream.
_RUNS_DEPS: list[Dependency] = on_types(RunsProjection().selection().types or ())
_VALIDITY_DEPS: list[Dependency] = on_types(["tasks.validated"])
_ITEM_DEPS: list[Dependency] = on_types(["memory.written"])
# A counterfactual's verdict (on its own stream, never the run's) decides a funnel's `used`.
_COUNTERFACTUAL_DEPS: list[Dependency] = on_types(["counterfactual.finished"])


def _html(page: str) -> Response:
    return Response(200, HTML, page.encode())


def _json(doc: Any, status: int = 200) -> Response:
    return Response(status, JSON, msgspec.json.encode(doc))


def _progress_doc(p: Any) -> dict[str, Any]:
    return {"done": p.done, "total": p.total, "running": p.running, "eta_s": p.eta_s, "pace_s": p.pace_s}


__all__ = ["CSP", "NotFound", "Response", "View"]
