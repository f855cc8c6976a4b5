"""`swecl validate`: SWE-bench's validation step, on this host.

For each task three patches are graded, each as a run version of its own (stage base,
agent predictions, initial pass): the gold patch, the empty patch, and a no-op patch that
changes no code (one new text file), so the tests really run without the fix. A task is
gradeable here when the gold patch resolves and the no-op patch does not; anything else
is a property of the host (an environment that cannot be built, tests that need the
network, a flaky test), recorded in one `tasks.validated` event. From then on the metrics
report such a task as missing, with the reason, never as an agent's 0.

The predictions files hold the answers (gold patches): they are written under the results
directory, which no agent sees (the sandbox hides it), and removed after the runs.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ledger import Ledger, StreamRange, SweclError
from ledger.events import TasksValidated, TaskValidity
from projections import read_views

from ._results import Results
from .inputs import Task

KINDS = ("gold", "noop", "empty")

# A new file changes no code, applies at any commit, and leaves every test to run.
NOOP_PATCH = (
    "diff --git a/SWECL_VALIDATION_NOOP.txt b/SWECL_VALIDATION_NOOP.txt\n"
    "new file mode 100644\n"
    "--- /dev/null\n"
    "+++ b/SWECL_VALIDATION_NOOP.txt\n"
    "@@ -0,0 +1 @@\n"
    "+a patch that changes no code (swecl validate)\n"
)


def patch_for(kind: str, task: Task) -> str:
    return {"gold": task.patch or "", "noop": NOOP_PATCH, "empty": ""}[kind]


def write_predictions(directory: Path, kind: str, tasks: list[Task]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{kind}.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for task in tasks:
            row = {"instance_id": task.instance_id, "model_name_or_path": f"swecl-validate-{kind}",
                   "model_patch": patch_for(kind, task)}
            fh.write(json.dumps(row) + "\n")
    return path


def judge(gold: tuple[str, str | None], noop: tuple[str, str | None], empty: tuple[str, str | None]) -> tuple[bool, str | None]:
    """Whether a task is gradeable here, and why not: swebench's validation rule (the gold
    patch resolves; without the fix, here the no-op patch, FAIL_TO_PASS does not pass)."""
    if gold[0] != "resolved":
        return False, f"gold patch {gold[0]}" + (f": {gold[1]}" if gold[1] else "")
    if noop[0] == "resolved":
        return False, "the no-op patch resolves: FAIL_TO_PASS passes without the fix"
    if noop[0] not in ("unresolved",):
        return False, f"no-op patch {noop[0]}" + (f": {noop[1]}" if noop[1] else "")
    return True, None


@dataclass
class Validation:
    """The outcome: one row per task, and the run versions behind them."""

    runs: dict[str, str]
    rows: list[TaskValidity] = field(default_factory=list)

    def by_repo(self, repo_of: dict[str, str]) -> dict[str, dict[str, object]]:
        """Per repository: tasks, gold resolved, no-op resolved, and failures by cause."""
        table: dict[str, dict[str, object]] = {}
        for row in self.rows:
            repo = repo_of.get(row.instance_id, "?")
            entry = table.setdefault(repo, {"tasks": 0, "gold_resolved": 0, "noop_resolved": 0, "gradeable": 0,
                                            "causes": {}})
            entry["tasks"] = int(entry["tasks"]) + 1  # type: ignore[call-overload]
            entry["gold_resolved"] = int(entry["gold_resolved"]) + (row.gold == "resolved")  # type: ignore[call-overload]
            entry["noop_resolved"] = int(entry["noop_resolved"]) + (row.noop == "resolved")  # type: ignore[call-overload]
            entry["gradeable"] = int(entry["gradeable"]) + row.gradeable  # type: ignore[call-overload]
            if not row.gradeable:
                causes: dict[str, int] = entry["causes"]  # type: ignore[assignment]
                cause = cause_of(row)
                causes[cause] = causes.get(cause, 0) + 1
        return dict(sorted(table.items()))


def cause_of(row: TaskValidity) -> str:
    """A short name for why a task is not gradeable (the table's columns)."""
    if row.gold != "resolved":
        return f"gold {row.gold}"
    return "no-op resolves" if row.noop == "resolved" else f"no-op {row.noop}"


def validate(
    results: Results,
    tasks: list[Task],
    grade: Callable[[str, Path, str], str],
    *,
    slug: str,
    incomplete: dict[str, str] | None = None,
) -> Validation:
    """Grade every kind of patch for `tasks` through `grade(kind, predictions, version)`
    (which runs `swecl grade`'s machinery and returns the version it recorded), then
    record the judgement as one `tasks.validated` event. `incomplete`: tasks that cannot
    be graded at all (no test lists), recorded as not gradeable with that reason."""
    scratch = results.root / ".validate" / slug
    versions: dict[str, str] = {}
    try:
        for kind in KINDS if tasks else ():
            versions[kind] = grade(kind, write_predictions(scratch, kind, tasks), f"{slug}-{kind}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    with results.open_ledger() as ledger:
        statuses = {kind: _statuses(ledger, version) for kind, version in versions.items()}
        validation = Validation(runs=versions)
        for task in tasks:
            got = {kind: statuses[kind].get(task.instance_id, ("missing", None)) for kind in KINDS}
            gradeable, reason = judge(got["gold"], got["noop"], got["empty"])
            validation.rows.append(TaskValidity(
                instance_id=task.instance_id, gradeable=gradeable, gold=got["gold"][0], noop=got["noop"][0],
                empty=got["empty"][0], reason=reason,
            ))
        for iid, why in sorted((incomplete or {}).items()):
            validation.rows.append(TaskValidity(instance_id=iid, gradeable=False, gold="ungraded", noop="ungraded",
                                                empty="ungraded", reason=why))
        ledger.append(f"validation/{slug}", [TasksValidated(runs=versions, tasks=validation.rows)], durable=True)
    return validation


def _statuses(ledger: Ledger, version: str) -> dict[str, tuple[str, str | None]]:
    out: dict[str, tuple[str, str | None]] = {}
    views = read_views(ledger, "grade.finished", ("instance_id", "pass_", "status", "error"),
                       ranges=[StreamRange(f"run/{version}")])
    for _, ev in views:
        if ev.pass_ == "initial":
            out[ev.instance_id] = (ev.status, ev.error)
    return out


def not_gradeable(ledger: Ledger) -> dict[str, str]:
    """instance_id -> reason, for the tasks the latest validation of each found not
    gradeable on this host (a later validation of a task replaces an earlier one)."""
    latest: dict[str, TaskValidity] = {}
    for _, ev in read_views(ledger, "tasks.validated", ("tasks",)):
        for row in ev.tasks:
            latest[row.instance_id] = row
    return {iid: row.reason or "not gradeable" for iid, row in latest.items() if not row.gradeable}


_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def check_slug(slug: str) -> str:
    if not _SLUG.match(slug):
        raise SweclError(f"--version {slug!r}: use letters, digits, '.', '_' and '-' (at most 63)")
    return slug
