"""`swecl validate`: SWE-bench's validation step, on this host.

For each task three patches are graded, each as a run version of its own (stage base,
agent predictions, initial pass): the gold patch, the empty patch, and a no-op patch that
changes no code (one new text file), so the tests really run without the fix. A task is
gradeable here when the gold patch resolves and the no-op patch does not pass its
FAIL_TO_PASS tests; anything else is a property of the host (an environment that cannot
be built, a flaky test), recorded in one `tasks.validated` event. From then on the
metrics report such a task as missing, with the reason, never as an agent's 0.

SWE-bench's own validation keeps a test in PASS_TO_PASS only when it passes before and
after the fix. Here the lists come from SWE-bench's hosts, and a few of their tests fail on
this one whatever the patch (they fetch URLs; the sandbox has no network): a PASS_TO_PASS
test that fails with the gold patch *and* with the no-op patch is left out of this
host's grades, named on the validation and on every grade made without it (`swecl run`,
`swecl grade`, and `swecl regrade` for grades made before). A test the gold patch fails
but the no-op patch passes is not the host's doing: that task is not gradeable.

The predictions files hold the answers (gold patches): they are written under the results
directory, which no agent sees (the sandbox hides it), and removed after the runs.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

from graders import (
    MISSING, UnknownEnvSpec, f2p_passes, missing_packages, p2p_passes, pre_install_plan, spec_for, spec_system_packages,
)
from ledger import StreamRange, SweclError
from ledger.events import GradeCorrected, GradeFinished, TasksValidated, TaskValidity
from projections import GradingCost, Results, grade_reasons, grading_cost, pass_statuses, verdicts_in_force

from ._regrade import regrade
from .inputs import Task
from .run import environment_spec

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


Verdict = GradeFinished | GradeCorrected


def failing_either_way(gold: Verdict, noop: Verdict | None) -> list[str]:
    """The PASS_TO_PASS tests this host fails with the fix and without it, when they are
    all that keeps the gold patch from resolving; else none (nothing to leave out)."""
    if gold.status != "unresolved" or noop is None or noop.status not in ("resolved", "unresolved"):
        return []
    if not all(f2p_passes(s) for s in gold.f2p.values()):
        return []
    failing = [t for t, s in gold.p2p.items() if not p2p_passes(s)]
    if any(p2p_passes(noop.p2p.get(t, MISSING)) for t in failing):
        return []  # the gold patch breaks a test that passes without it: not the host's doing
    return failing


# What a test's failure says when the host, not the code, made it fail.
_NETWORK = re.compile(r"ConnectionError|ConnectTimeout|URLError|urlopen error|gaierror|Name or service not known|"
                      r"Temporary failure in name resolution|Network is unreachable|No route to host|"
                      r"Connection refused|NewConnectionError|MaxRetryError|socket\.timeout|ProxyError", re.I)
_SYSTEM = re.compile(r"ExecutableNotFound|command not found|No such file or directory: '[^'/]+'|"
                     r"failed to execute|not installed|cannot find -l|lib\S+\.so|graphviz|\bdot\b.*not found|"
                     r"latex|dvipng|ImageMagick|convert.*not found", re.I)


def why_left_out(tests: list[str], gold: GradeFinished | GradeCorrected, log: str) -> dict[str, str]:
    """Why each of `tests` fails here with and without the fix, in one short phrase with the
    log's own words: the network (the sandbox has none), a system package, a naming
    difference (the log holds no test of that name), or just that it fails here."""
    from ._env_verify import failure_causes

    causes = {f.test: f.cause for f in failure_causes(log, gold.tests)} if log else {}
    out: dict[str, str] = {}
    for test in tests:
        status = gold.p2p.get(test, MISSING)
        cause = causes.get(test, "")
        if status == MISSING and test not in gold.tests:
            out[test] = "naming: the log holds no test of this name (not collected, or named otherwise here)"
        elif _NETWORK.search(cause):
            out[test] = f"network: {cause}"
        elif _SYSTEM.search(cause):
            out[test] = f"system package: {cause}"
        else:
            out[test] = f"fails here: {cause or status}"
    return out


_INSTALL = re.compile(r"^\[swecl\] install: (?P<how>[\w ]+?) \((?:ok|FAILED)\)$", re.M)
_WHY_RAN = re.compile(r"^\[swecl\] (the install's record (?:does not fit|is of another format|could not be put back).*)$",
                      re.M)


def installs_of(ledger: Any, version: str) -> dict[str, Any]:
    """How the repository's installs of one graded run went, from its grades' logs: how
    many ran, were put back from a record (`restored`) or stayed from the task before
    (`reused`), and why each one ran (a record that did not fit, or none made yet)."""
    counts: dict[str, int] = {}
    why: dict[str, str] = {}
    for rec in ledger.read(types=["grade.finished"], ranges=[StreamRange(f"run/{version}")]):
        log = ledger.get_blob(rec.event.log).decode("utf-8", "replace") if rec.event.log else ""
        found = _INSTALL.search(log)
        if found is None:
            continue
        how = found["how"]
        counts[how] = counts.get(how, 0) + 1
        if how == "ran":
            reason = _WHY_RAN.search(log)
            why[rec.event.instance_id] = reason.group(1) if reason else "no record of it yet"
    return {"counts": counts, "why_ran": why}


def setup_not_run(task: Task) -> list[str]:
    """The lines of the task's set-up that this host does not run (system packages:
    `apt-get install -y graphviz` for sphinx 7.x, whose tests then skip)."""
    try:
        spec = spec_for(task.repo, task.version, environment_spec(task))
    except UnknownEnvSpec:
        return []
    return [line for line, _ in pre_install_plan(spec)[1]]


def missing_system_packages(task: Task) -> list[str]:
    """The Debian packages the task's set-up installs with apt that this host lacks
    (`swecl env system-deps` lists and installs them); none on a host without dpkg."""
    try:
        spec = spec_for(task.repo, task.version, environment_spec(task))
    except UnknownEnvSpec:
        return []
    return missing_packages(spec_system_packages(spec, task.repo)) or []


def not_gradeable_reason(task: Task, reason: str | None) -> str | None:
    """A not-gradeable task's reason with what this host lacks for its set-up first: the
    missing system packages by name, else the set-up lines that do not run here."""
    if missing := missing_system_packages(task):
        return (f"missing system package(s) {', '.join(missing)} (the set-up installs them with apt-get; "
                f"`swecl env system-deps --install` as root): {reason}")
    if lines := setup_not_run(task):
        return f"{reason} (set-up this host does not run: {'; '.join(lines)})"
    return reason


def judge(gold: tuple[str, str | None], noop: tuple[str, str | None], *,
          noop_passes_f2p: bool = False) -> tuple[bool, str | None]:
    """Whether a task is gradeable here, and why not: swebench's validation rule (the gold
    patch resolves; without the fix, here the no-op patch, FAIL_TO_PASS does not pass).
    The empty patch is recorded for the table; it never decides."""
    if gold[0] != "resolved":
        return False, f"gold patch {gold[0]}" + (f": {gold[1]}" if gold[1] else "")
    if noop[0] == "resolved":
        return False, "the no-op patch resolves: FAIL_TO_PASS passes without the fix"
    if noop[0] != "unresolved":
        return False, f"no-op patch {noop[0]}" + (f": {noop[1]}" if noop[1] else "")
    if noop_passes_f2p:
        return False, "the no-op patch passes every FAIL_TO_PASS test: they do not tell the fix from its absence here"
    return True, None


@dataclass
class RepoCounts:
    """One repository's line of the validation table."""

    tasks: int = 0
    gold_resolved: int = 0
    noop_resolved: int = 0
    gradeable: int = 0
    p2p_excluded: int = 0  # gradeable with PASS_TO_PASS tests that fail here either way left out
    causes: dict[str, int] = field(default_factory=dict)


@dataclass
class Validation:
    """The outcome: one row per task, and the run versions behind them."""

    runs: dict[str, str]
    rows: list[TaskValidity] = field(default_factory=list)
    # per patch kind (pass): how its installs went (`installs_of`)
    installs: dict[str, dict[str, Any]] = field(default_factory=dict)
    # per patch kind (pass): what its run cost in time (`projections.grading_cost`)
    costs: dict[str, GradingCost] = field(default_factory=dict)

    def by_repo(self, repo_of: dict[str, str]) -> dict[str, RepoCounts]:
        """Per repository: tasks, gold resolved, no-op resolved, and failures by cause."""
        table: dict[str, RepoCounts] = {}
        for row in self.rows:
            entry = table.setdefault(repo_of.get(row.instance_id, "?"), RepoCounts())
            entry.tasks += 1
            entry.gold_resolved += row.gold == "resolved"
            entry.noop_resolved += row.noop == "resolved"
            entry.gradeable += row.gradeable
            entry.p2p_excluded += bool(row.gradeable and row.p2p_excluded)
            if not row.gradeable:
                cause = cause_of(row)
                entry.causes[cause] = entry.causes.get(cause, 0) + 1
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
        projector = results.projector(ledger)
        excluded: dict[str, list[str]] = {}
        excluded_why: dict[str, dict[str, str]] = {}
        noop_verdicts: dict[str, Verdict] = {}
        if versions:
            gold_verdicts = verdicts_in_force(ledger, projector, versions["gold"])
            noop_verdicts = verdicts_in_force(ledger, projector, versions["noop"])
            for iid, verdict in gold_verdicts.items():
                if tests := failing_either_way(verdict, noop_verdicts.get(iid)):
                    excluded[iid] = tests
                    log = ledger.get_blob(verdict.log).decode("utf-8", "replace") \
                        if isinstance(verdict, GradeFinished) and verdict.log else ""
                    excluded_why[iid] = why_left_out(tests, verdict, log)
            # the two runs' grades, decided as this host's grades will be (FAIL_TO_PASS
            # statuses stay as they are, so `noop_verdicts` still holds for them)
            for kind in ("gold", "noop"):
                regrade(ledger, versions[kind], excluded=excluded)
        statuses = {kind: pass_statuses(ledger, projector, version) for kind, version in versions.items()}
        reasons = {kind: grade_reasons(ledger, version) for kind, version in versions.items()}
        validation = Validation(runs=versions)
        for task in tasks:
            got = {kind: (statuses[kind].get(task.instance_id, "missing"), reasons[kind].get(task.instance_id))
                   for kind in KINDS}
            noop = noop_verdicts.get(task.instance_id)
            gradeable, reason = judge(got["gold"], got["noop"], noop_passes_f2p=bool(
                noop and noop.f2p and all(f2p_passes(s) for s in noop.f2p.values())))
            if not gradeable and got["gold"][0] != "resolved":
                reason = not_gradeable_reason(task, reason)
            validation.rows.append(TaskValidity(
                instance_id=task.instance_id, gradeable=gradeable, gold=got["gold"][0], noop=got["noop"][0],
                empty=got["empty"][0], reason=reason,
                p2p_excluded=excluded.get(task.instance_id, []) if gradeable else [],
                p2p_excluded_why=excluded_why.get(task.instance_id, {}) if gradeable else {},
            ))
        for iid, why in sorted((incomplete or {}).items()):
            validation.rows.append(TaskValidity(instance_id=iid, gradeable=False, gold="ungraded", noop="ungraded",
                                                empty="ungraded", reason=why))
        ledger.append(f"validation/{slug}", [TasksValidated(runs=versions, tasks=validation.rows)], durable=True)
        validation.installs = {kind: installs_of(ledger, version) for kind, version in versions.items()}
        for kind, version in versions.items():
            if cost := grading_cost(ledger, version):
                validation.costs[kind] = cost
    return validation


_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def check_slug(slug: str) -> str:
    if not _SLUG.match(slug):
        raise SweclError(f"--version {slug!r}: use letters, digits, '.', '_' and '-' (at most 63)")
    return slug
