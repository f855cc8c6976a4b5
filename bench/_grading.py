"""Benchmark 5: grading overhead per task, on a generated repository of 2,000+ files.

A git repository is generated in a temp dir: a package of `files` Python modules in
directories of 50 (plus its tests, a root conftest.py, three commits to use as base
commits), with `pkg/calc/ops.py:clamp` ignoring its upper bound. A sequence of tasks
(each: a base commit, a version, the model patch - the fix, or a wrong fix -, the gold
test patch adding `test_clamp_high`, FAIL_TO_PASS and PASS_TO_PASS) is graded by the
real `swebench` grader (`get_grader("swebench")`: bare mirror, worktree slot reused
task after task, environment cache, the apply chain, test-file revert, pytest run,
parse, decide), with a fresh cache dir, environments built with uv.

Overhead per task = the grade's wall time - the test command's own time - environment
builds, both as the grader reports them in `GradeOutcome.timings` (an environment is
built once per (repo, version) and counted separately, from `GradeOutcome.env_built`). The
first task also pays the mirror clone and the worktree checkout of the repository.
Target: at most 1 s per task (every task); the ratio is the mean overhead to the mean
test-command time. `grading_env_builds` checks that builds == distinct (repo, version)
pairs over the sequence. `grading_sandbox_cost` is the time bwrap adds to one test run
(the same gold grade's test run, confined minus unconfined); target at most 0.3 s.
`grading_warm_vs_bare`: a warm grade's wall time against the bare test command run by hand
in the same environment (unconfined, no results plugin, a plain clone; the ledger's
`grade.finished.timings` say where the rest goes, `phases_mean_s` in the details).
`grading_install_record`: the repository's install put back from its record against the
same install run (`graders._install_record`), on a small package; target at most half.
`grading_replay_checkout`: what the oracle and predictions agents' checkout costs per task,
sparse (the patched files) against whole; target at most half (full size only).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graders.host import git

from ._core import Context, Result

REPO = "acme/bigcalc"
TARGET_S = 1.0

OPS = '''"""Arithmetic helpers."""


def add(a, b):
    return a + b


def clamp(x, lo, hi):
    """x limited to [lo, hi]."""
    if x < lo:
        return lo
    return x
'''

TESTS = '''from pkg.calc.ops import add, clamp


def test_add():
    assert add(2, 3) == 5


def test_clamp_low():
    assert clamp(-5, 0, 10) == 0
'''

GOLD = '''diff --git a/pkg/calc/ops.py b/pkg/calc/ops.py
--- a/pkg/calc/ops.py
+++ b/pkg/calc/ops.py
@@ -9,4 +9,6 @@ def clamp(x, lo, hi):
     \"\"\"x limited to [lo, hi].\"\"\"
     if x < lo:
         return lo
+    if x > hi:
+        return hi
     return x
'''

WRONG = GOLD.replace("+        return hi\n", "+        return hi - 1\n")

TEST_PATCH = '''diff --git a/tests/test_ops.py b/tests/test_ops.py
--- a/tests/test_ops.py
+++ b/tests/test_ops.py
@@ -7,3 +7,7 @@ def test_add():
 
 def test_clamp_low():
     assert clamp(-5, 0, 10) == 0
+
+
+def test_clamp_high():
+    assert clamp(50, 0, 10) == 10
'''

F2P = ["tests/test_ops.py::test_clamp_high"]
P2P = ["tests/test_ops.py::test_add", "tests/test_ops.py::test_clamp_low"]

# (version, base commit index, patch) per task: two versions -> two environment builds.
FULL_TASKS = (
    ("1.0", 0, GOLD), ("1.0", 1, GOLD), ("1.1", 0, GOLD), ("1.0", 2, WRONG),
    ("1.1", 1, GOLD), ("1.1", 2, GOLD), ("1.0", 0, GOLD), ("1.1", 2, WRONG),
)
QUICK_TASKS = (("1.0", 0, GOLD), ("1.1", 1, GOLD), ("1.0", 2, WRONG))


def _git(cwd: Path, *args: str) -> str:
    """git as the grader runs it (isolated from the user's config), committing as "bench"."""
    done = git(["-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args], cwd=cwd)
    return done.stdout.decode().strip()


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_repo(root: Path, files: int) -> tuple[Path, list[str]]:
    """A repository of at least `files` tracked files; returns (path, three base commits)."""
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    _write(root, "pkg/__init__.py", "")
    _write(root, "pkg/calc/__init__.py", "")
    _write(root, "pkg/calc/ops.py", OPS)
    _write(root, "tests/test_ops.py", TESTS)
    _write(root, "conftest.py", "# puts the repository root on sys.path for pytest\n")
    _write(root, ".gitignore", "__pycache__/\n*.egg-info/\nbuild/\n")
    made = 6
    n = 0
    while made < files:
        folder = f"pkg/area{n // 50:03d}"
        if n % 50 == 0:
            _write(root, f"{folder}/__init__.py", "")
            made += 1
        _write(
            root,
            f"{folder}/module{n % 50:02d}.py",
            f'"""Module {n} of the generated package."""\n\n\ndef f{n}(x):\n    return x * {n % 7 + 1}\n\n\n'
            f"class Thing{n}:\n    def value(self):\n        return {n}\n",
        )
        made += 1
        n += 1
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    commits = [_git(root, "rev-parse", "HEAD")]
    for i in (1, 2):
        _write(root, f"docs/notes{i}.txt", f"release notes {i}\n")
        _write(root, f"pkg/area000/module0{i}.py", f'"""Changed in commit {i}."""\n\n\ndef f{i}(x):\n    return x + {i}\n')
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"change {i}")
        commits.append(_git(root, "rev-parse", "HEAD"))
    tracked = int(_git(root, "ls-files").count("\n")) + 1
    assert tracked >= files, tracked
    return root, commits


def bare_argv(argv: Sequence[str]) -> list[str]:
    """The test command as a user types it: without swecl's results plugin (`-p swecl_...`)."""
    out: list[str] = []
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg == "-p" and i + 1 < len(argv) and argv[i + 1].startswith("swecl"):
            skip = True
            continue
        if arg.startswith("-pswecl"):
            continue
        out.append(arg)
    return out


def _bare_test_command(ctx: Context, repo: Path, base: str, argv: list[str]) -> float:
    """The grade's own test command run by hand in a plain clone with the fix and the test
    patch: no sandbox, no results plugin, no harness (fastest of 3)."""
    plain = ctx.work / "grading-bare"
    git(["clone", "--quiet", "--", str(repo), str(plain)])
    git(["checkout", "--quiet", "--detach", base], cwd=plain)
    for patch in (GOLD, TEST_PATCH):
        git(["apply", "-"], cwd=plain, input=patch.encode())
    program = bare_argv(argv)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        done = subprocess.run(program, cwd=plain, capture_output=True, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                                                         "PYTHONDONTWRITEBYTECODE": "1"})
        times.append(time.perf_counter() - t0)
        if done.returncode != 0:
            raise RuntimeError(f"grading benchmark: the bare test command failed: {done.stdout[-500:]!r}")
    return min(times)


def _replay_checkouts(ctx: Context, repo: Path, base: str) -> tuple[float, float]:
    """An agent's checkout of the repository, whole and sparse (the files of the fix only),
    with the fix applied and taken back as a patch: what the oracle and predictions agents
    do per task (fastest of 3 each)."""
    from agents import worktree_patch
    from graders.host import RepoCache

    cache = RepoCache(ctx.work / "grading-cache", {REPO: str(repo)})
    best = {}
    for only in (None, ["pkg/calc/ops.py"]):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            with cache.agent_checkout(REPO, base, only=only) as path:
                git(["apply", "-"], cwd=path, input=GOLD.encode())  # as the replay agents apply it
                if "if x > hi" not in worktree_patch(path, base):
                    raise RuntimeError("grading benchmark: the replayed patch was not taken back")
            times.append(time.perf_counter() - t0)
        best[only is None] = min(times)
    return best[True], best[False]


INSTALLED = "acme/instcalc"
SETUP_PY = 'from setuptools import setup\n\nsetup(name="instcalc", version="{version}", packages=["pkg", "pkg.calc"])\n'


def _install_records(ctx: Context) -> tuple[float, float]:
    """The repository's install run, against its record put back (`graders._install_record`):
    a small package whose two commits differ in setup.py, graded at the first, the second,
    the first again: the third grade's install is the record of the first's. Returns (the
    install phase when it ran, when it was put back)."""
    from graders import EnvSpec, GradeRequest, get_grader

    root = ctx.work / "install-repo"
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    for rel, text in (("pkg/__init__.py", ""), ("pkg/calc/__init__.py", ""), ("pkg/calc/ops.py", OPS),
                      ("tests/test_ops.py", TESTS), (".gitignore", "__pycache__/\n*.egg-info/\nbuild/\n")):
        _write(root, rel, text)
    commits = []
    for version in ("0.1", "0.2"):
        _write(root, "setup.py", SETUP_PY.format(version=version))
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"version {version}")
        commits.append(_git(root, "rev-parse", "HEAD"))
    grader = get_grader("swebench", cache_dir=ctx.work / "install-cache", repo_sources={INSTALLED: str(root)},
                        timeout_s=600)
    env = EnvSpec(python=None, pip_packages=["pytest"], install="python -m pip install --no-build-isolation --no-deps -e .",
                  test_cmd="pytest -rA")
    installs = []
    for i, base in enumerate([commits[0], commits[1], commits[0]], start=1):
        outcome = grader.grade(GradeRequest(
            instance_id=f"acme__instcalc-{i}", repo=INSTALLED, version="0.1", base_commit=base, model_patch=GOLD,
            test_patch=TEST_PATCH, fail_to_pass=F2P, pass_to_pass=P2P, environment=env,
            environment_setup_commit=commits[0],
        ))
        said = "install: restored (ok)" if i == 3 else "install: ran (ok)"
        if outcome.status != "resolved" or said.encode() not in outcome.log:
            raise RuntimeError(f"grading benchmark: install task {i} graded {outcome.status} ({outcome.error}), "
                               f"expected resolved with {said!r}")
        installs.append(outcome.timings.get("install", 0.0))
    ctx.details["grading"]["install_s"] = {"ran": [round(x, 3) for x in installs[:2]], "restored": round(installs[2], 3)}
    return installs[0], installs[2]


def run(ctx: Context) -> list[Result]:
    from graders import EnvSpec, GradeRequest, get_grader

    files = 300 if ctx.quick else 2000
    tasks = QUICK_TASKS if ctx.quick else FULL_TASKS
    start = time.perf_counter()
    repo, commits = make_repo(ctx.work / "grading-repo", files)
    ctx.log(f"grading: generated a repository of {files}+ files in {time.perf_counter() - start:.1f}s; "
            f"grading {len(tasks)} tasks")
    grader = get_grader("swebench", cache_dir=ctx.work / "grading-cache", repo_sources={REPO: str(repo)}, timeout_s=600)
    env = EnvSpec(python=None, pip_packages=["pytest"], test_cmd="pytest -rA")
    rows: list[dict[str, Any]] = []
    for i, (version, base, patch) in enumerate(tasks, start=1):
        req = GradeRequest(
            instance_id=f"acme__bigcalc-{i}", repo=REPO, version=version, base_commit=commits[base],
            model_patch=patch, test_patch=TEST_PATCH, fail_to_pass=F2P, pass_to_pass=P2P, environment=env,
        )
        t0 = time.perf_counter()
        outcome = grader.grade(req)
        wall = time.perf_counter() - t0
        expected = "resolved" if patch is GOLD else "unresolved"
        if outcome.status != expected:
            raise RuntimeError(
                f"grading benchmark: task {i} graded {outcome.status} ({outcome.error}), expected {expected}; "
                "the environment needs pytest from the uv cache or PyPI"
            )
        test_s, build_s = outcome.timings.get("tests", 0.0), outcome.timings.get("env", 0.0)
        overhead = wall - test_s - build_s
        rows.append({
            "task": i, "version": version, "status": outcome.status, "applied_with": outcome.applied_with,
            "wall_s": round(wall, 3), "test_s": round(test_s, 3), "env_build_s": round(build_s, 3),
            "env_built": int(bool(outcome.env_built)), "overhead_s": round(overhead, 3),
            "timings": dict(outcome.timings),
        })
        ctx.log(f"  task {i} ({version}, {outcome.status}): wall {wall:.2f}s, tests {test_s:.2f}s, "
                f"env build {build_s:.2f}s, overhead {overhead:.2f}s")
    overheads = [r["overhead_s"] for r in rows]
    bare = _bare_test_command(ctx, repo, commits[tasks[-1][1]], outcome.test_cmd)
    warm = [r for r in rows if not r["env_built"]]
    warm_wall = sum(r["wall_s"] for r in warm) / len(warm)
    tests = [r["test_s"] for r in rows]
    mean_overhead = sum(overheads) / len(overheads)
    mean_test = sum(tests) / len(tests)
    builds = sum(r["env_built"] for r in rows)
    pairs = len({(REPO, v) for v, _, _ in tasks})
    ctx.details["grading"] = {
        "repository_files": int(_git(repo, "ls-files").count("\n")) + 1,
        "tasks": rows,
        "overhead_mean_s": round(mean_overhead, 3),
        "overhead_max_s": round(max(overheads), 3),
        "overhead_max_after_first_s": round(max(overheads[1:]), 3) if len(overheads) > 1 else None,
        "test_mean_s": round(mean_test, 3),
        "env_builds": builds,
        "distinct_repo_version_pairs": pairs,
        "bare_test_command_s": round(bare, 3),
        "warm_grade_wall_mean_s": round(warm_wall, 3),
        "phases_mean_s": {k: round(sum(r["timings"].get(k, 0.0) for r in warm) / len(warm), 3)
                          for k in sorted({k for r in warm for k in r["timings"]})},
    }
    full, sparse = _replay_checkouts(ctx, repo, commits[0])
    ctx.details["grading"]["replay_checkout_s"] = {"whole": round(full, 3), "sparse": round(sparse, 3)}
    ctx.log(f"  bare test command {bare:.2f}s; a warm grade {warm_wall:.2f}s ({warm_wall / bare:.1f}x); "
            f"a replay agent's checkout {sparse:.2f}s sparse, {full:.2f}s whole")
    # The sandbox's cost: the same gold grade, its test run timed unconfined and in bwrap
    # (fastest of three each, alternating, so a slow spell of the machine hits both).
    version, base, _ = tasks[-1]
    gold = GradeRequest(
        instance_id="acme__bigcalc-sandbox", repo=REPO, version=version, base_commit=commits[base],
        model_patch=GOLD, test_patch=TEST_PATCH, fail_to_pass=F2P, pass_to_pass=P2P, environment=env,
    )
    by_mode: dict[str, list[float]] = {"none": [], "bwrap": []}
    graders_by_mode = {
        mode: get_grader("swebench", cache_dir=ctx.work / "grading-cache", repo_sources={REPO: str(repo)},
                         timeout_s=600, sandbox=mode)
        for mode in by_mode
    }
    for _ in range(3):
        for mode, g in graders_by_mode.items():
            outcome = g.grade(gold)
            if outcome.status != "resolved":
                raise RuntimeError(f"grading benchmark: the gold patch graded {outcome.status} with --sandbox {mode}")
            by_mode[mode].append(outcome.timings["tests"])
    unconfined, confined = min(by_mode["none"]), min(by_mode["bwrap"])
    cost = confined - unconfined
    ctx.details["grading"]["sandbox"] = {"test_run_s": {m: [round(x, 3) for x in v] for m, v in by_mode.items()},
                                         "cost_s": round(cost, 3)}
    ctx.log(f"  sandbox: test run {unconfined:.3f}s unconfined, {confined:.3f}s in bwrap: +{cost:.3f}s")
    ran, restored = _install_records(ctx)
    ctx.log(f"  the repository's install: {ran:.2f}s run, {restored:.2f}s put back from its record")
    return [
        Result("grading_install_record", restored, "s/install", restored / ran if ran else None, "ratio <= 0.5",
               restored <= 0.5 * ran,
               reference=f"the same install run ({ran:.2f} s): pip's editable install of a small package, "
                         "with the venv taken back to its build first in both"),
        Result("grading_warm_vs_bare", warm_wall, "s/task", warm_wall / bare, None, None,
               reference=f"the bare test command in the same environment, unconfined, no plugin ({bare:.2f} s; fastest of 3)"),
        # on the quick run's 300 files both checkouts are mostly git's fixed costs: no target there
        Result("grading_replay_checkout", sparse, "s/task", sparse / full, None if ctx.quick else "ratio <= 0.5",
               None if ctx.quick else sparse <= 0.5 * full,
               reference=f"a whole checkout for an agent ({full:.2f} s; fastest of 3): the oracle and predictions agents' "
                         "sparse one holds only the patched files"),
        Result("grading_sandbox_cost", cost, "s/test run", confined / unconfined, "value <= 0.3 s", cost <= 0.3,
               reference=f"the same test run unconfined ({unconfined:.2f} s; fastest of 3 each)"),
        Result("grading_overhead", mean_overhead, "s/task", mean_overhead / mean_test,
               "every task <= 1 s", max(overheads) <= TARGET_S,
               reference=f"test command's own time (mean {mean_test:.2f} s; worst overhead {max(overheads):.2f} s)"),
        Result("grading_env_builds", float(builds), "builds", builds / pairs, "ratio == 1", builds == pairs,
               reference=f"distinct (repo, version) pairs over {len(tasks)} tasks ({pairs})"),
    ]
