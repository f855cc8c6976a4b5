"""`swecl view`: a small local web app over the ledger, read-only and live.

    from projections import Results
    from projections.view import View

    View(Results(Path("results"))).respond("/run/1/task/spans-3?pass=retest")  # -> Response

Pages drill from the runs (as `swecl runs` lists them, with headline metrics and the
progress of a running run) to a run, a sequence's a(i,j) matrix and task list, and one
task's evidence (what `swecl show` gives: patch, test output, FAIL_TO_PASS/PASS_TO_PASS
results, recalled memories with the audit's leak flags, transcript). Every number comes
from the projections the CLI uses (`projections.show`, `projections.audit`, the runs and
outcome folds, `projections.report`'s collection): nothing is folded twice. The HTTP
server around `View.respond` is `commands.cli._view`.
"""

from __future__ import annotations

from ._app import CSP, NotFound, Response, View
from ._events import EVENT_STREAM, EVENTS_PATH
from ._progress import Progress, run_progress

__all__ = ["CSP", "EVENT_STREAM", "EVENTS_PATH", "NotFound", "Progress", "Response", "View", "run_progress"]
