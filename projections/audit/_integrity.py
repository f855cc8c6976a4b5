"""Integrity flags of an agent's patch: library code that reaches into the test machinery.

A flag never changes a verdict; it tells the reader where to look. Flags are computed
here, from the patch blob `agent.finished` recorded and the task's FAIL_TO_PASS names
its grades recorded (`grade.finished` f2p), never stored: a rule changed here re-flags
every recorded run without re-running anything.

The rules read the lines the patch adds to library files (not test files, not the test
configuration files the grader reverts: `ledger.patches.is_test_path` and
`is_test_config_path`), in Python sources, comments left out:

- `pytest-internals`: imports `_pytest` or `pytest` (the runner that decides the verdict),
  or defines a `pytest_*` hook. Exempt: the pytest-dev/pytest repository, whose library
  code is `_pytest`.
- `pycache`: the patch writes a file under `__pycache__` or a `.pyc`, or library code names
  `__pycache__`, `pycache_prefix` or `py_compile` (bytecode the test run would import).
- `names-test`: library code names one of the task's FAIL_TO_PASS tests (its full id or its
  leaf name of at least the governance length, as the memory's leak check matches them).
- `os-exit`: `os._exit` (or `posix._exit`): ends the process before the runner reports.
- `trace-hook`: `sys.settrace`, `sys.setprofile`, `threading.settrace` or `sys.monitoring`:
  a hook that sees (and can change) every frame the tests run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

import msgspec

from ledger import Ledger, StreamRange
from ledger.patches import is_test_config_path, is_test_path, parse_patch_files
from projections._cut import OrderCut
from projections.memory import GradingSecrets, test_names_pattern

from ._model import Flag

INTEGRITY_KINDS = ("pytest-internals", "pycache", "names-test", "os-exit", "trace-hook")

# Repositories whose own library code legitimately is the test machinery a rule looks for.
_EXEMPT = {"pytest-internals": frozenset({"pytest-dev/pytest"})}
_SOURCE_SUFFIXES = (".py", ".pyx", ".pxd", ".pxi", ".pyi")

_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("pytest-internals",
     re.compile(r"^\s*(?:import|from)\s+_?pytest\b|\b(?:__import__|import_module)\(\s*['\"]_?pytest\b|\b_pytest\."
                r"|^\s*def\s+pytest_\w+\s*\("),
     "reaches into pytest"),
    ("pycache", re.compile(r"__pycache__|\bpycache_prefix\b|\bpy_compile\b"), "touches bytecode caches"),
    ("os-exit", re.compile(r"\b(?:os|posix)\s*\.\s*_exit\b|\bfrom\s+(?:os|posix)\s+import\b.*\b_exit\b"),
     "ends the process with _exit"),
    ("trace-hook",
     re.compile(r"\b(?:sys|threading)\s*\.\s*(?:settrace|setprofile)\b|\bsys\s*\.\s*monitoring\b"
                r"|\bfrom\s+sys\s+import\b.*\b(?:settrace|setprofile|monitoring)\b"),
     "installs a trace hook"),
)
_SHOWN = 100  # characters of a flagged line in a flag's detail


def integrity_flags(patch: str | None, repo: str, f2p: Iterable[str] = ()) -> list[Flag]:
    """The flags of one patch of a task of `repo` whose FAIL_TO_PASS tests are `f2p`, in
    INTEGRITY_KINDS order, one per kind and file (the first line that raised it)."""
    if not patch:
        return []
    names = test_names_pattern(GradingSecrets(fail_to_pass=tuple(f2p)))
    found: dict[tuple[str, str], Flag] = {}
    for section in parse_patch_files(patch):
        path = section.new_path or section.old_path
        if not path:
            continue
        paths = [p for p in (section.old_path, section.new_path) if p]
        if any("__pycache__" in PurePosixPath(p).parts or p.endswith((".pyc", ".pyo")) for p in paths):
            found.setdefault(("pycache", path), Flag(kind="pycache", detail=f"{path} is written by the patch"))
        if is_test_path(path) or is_test_config_path(path) or not path.endswith(_SOURCE_SUFFIXES):
            continue
        for line in section.added_lines:
            code = line.strip()
            if not code or code.startswith("#"):
                continue
            for kind, pattern, what in _RULES:
                if (kind, path) not in found and repo not in _EXEMPT.get(kind, ()) and pattern.search(line):
                    found[(kind, path)] = Flag(kind=kind, detail=f"{path} {what}: {_cut(code)}")
            if names is not None and ("names-test", path) not in found:
                hit = names.search(line)
                if hit:
                    found[("names-test", path)] = Flag(
                        kind="names-test", detail=f"{path} names the FAIL_TO_PASS test {hit.group(0)}: {_cut(code)}")
    return sorted(found.values(), key=lambda f: (INTEGRITY_KINDS.index(f.kind), f.detail))


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


# -- a run's patches ------------------------------------------------------------------------


class FlaggedGrade(msgspec.Struct, kw_only=True):
    """The integrity flags of one graded attempt's patch."""

    sequence_id: str
    instance_id: str
    order: int
    pass_: str = msgspec.field(name="pass", default="initial")
    attempt: int
    in_force: bool  # the attempt the a(i,j) cell scores
    grade_status: str | None = None
    flags: list[Flag] = msgspec.field(default_factory=list)


class RunIntegrity(msgspec.Struct, kw_only=True):
    version: str
    checked: int  # patches checked (of the attempts counted)
    flagged: int  # of those, patches with any flag
    by_kind: dict[str, int]  # flagged patches per kind, in INTEGRITY_KINDS order
    grades: list[FlaggedGrade]  # the flagged attempts, in the run's order


def task_f2p(ledger: Ledger, version: str) -> dict[str, list[str]]:
    """instance_id -> its FAIL_TO_PASS test ids, as the run's grades recorded them (any pass, any attempt)."""
    out: dict[str, dict[str, None]] = {}
    for rec in ledger.read(types=["grade.finished", "grade.corrected"], ranges=[StreamRange(f"run/{version}")]):
        names = out.setdefault(rec.event.instance_id, {})
        for name in rec.event.f2p:
            names.setdefault(name, None)
    return {iid: list(names) for iid, names in out.items()}


def integrity_of(
    ledger: Ledger, version: str, *, counted_only: bool = True, cut: OrderCut | None = None
) -> RunIntegrity:
    """The integrity flags of every agent patch of run `version`. `counted_only`: only the
    attempts that count (the latest, not abandoned), as the leakage counts; `cut`: the run as
    it stood at `--as-of-order` (see `_fold.before_cut`)."""
    # lazy: `integrity_line` is imported by the CLI at start-up; the audit's fold loads when a run is checked
    from ._fold import _attempt_events, _attempts, _Blobs, run_started

    started = run_started(ledger, version)
    plan = {(s, t.order): t for s, tasks in started.tasks.items() for t in tasks}
    attempts = _attempts(_attempt_events(ledger, version, lambda ev: True, cut))
    f2p = task_f2p(ledger, version)
    blobs = _Blobs(ledger)
    checked = 0
    by_kind = dict.fromkeys(INTEGRITY_KINDS, 0)
    grades = []
    for (sequence_id, pass_, order, attempt_no), attempt in attempts.items():
        if counted_only and not attempt.in_force:
            continue
        patch = blobs.text(attempt.agent_patch)
        if patch is None:
            continue
        task = plan.get((sequence_id, order))
        if task is None:
            continue
        checked += 1
        flags = integrity_flags(patch, task.repo, f2p.get(task.instance_id, ()))
        if not flags:
            continue
        for kind in {f.kind for f in flags}:
            by_kind[kind] += 1
        grades.append(FlaggedGrade(sequence_id=sequence_id, instance_id=task.instance_id, order=order, pass_=pass_,
                                   attempt=attempt_no, in_force=attempt.in_force, grade_status=attempt.grade_status,
                                   flags=flags))
    return RunIntegrity(version=version, checked=checked, flagged=len(grades), by_kind=by_kind, grades=grades)


def integrity_counts(found: RunIntegrity) -> dict[str, Any]:
    """What `swecl metrics --json`, `swecl runs --json` and the report carry beside the
    leakage counts: patches checked, flagged, per kind, and the flagged tasks."""
    return {
        "patches_checked": found.checked,
        "flagged": found.flagged,
        "by_kind": dict(found.by_kind),
        "tasks": [{"sequence_id": g.sequence_id, "instance_id": g.instance_id, "order": g.order, "pass": g.pass_,
                   "attempt": g.attempt, "kinds": sorted({f.kind for f in g.flags}, key=INTEGRITY_KINDS.index),
                   "flags": [msgspec.to_builtins(f) for f in g.flags]} for g in found.grades],
    }


def integrity_line(label: str, version: str, counts: dict[str, Any] | None) -> str | None:
    """The line under the metrics table (None: nothing flagged)."""
    if not counts or not counts["flagged"]:
        return None
    kinds = ", ".join(f"{k} {n}" for k, n in counts["by_kind"].items() if n)
    tasks = ", ".join(sorted({t["instance_id"] for t in counts["tasks"]}))
    return (f"{label}: {counts['flagged']} patches with integrity flags ({kinds}): {tasks}; "
            f"`swecl show {version} TASK` says where (a flag never changes a verdict)")
