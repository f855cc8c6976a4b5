"""Real grading of demo tasks for the tests: git worktrees, `git apply`, pytest runs.

Deliberately simple and independent of `graders/` (the lead later re-runs these checks
through the real grader): a worktree at the base commit, `git apply` of the patch and
the test patch, `python -m pytest -rA` on the test files the test patch touches, and
the `-rA` summary lines read as `STATUS test-id`.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bench.processes import pycache_prefix
from commands.inputs import Benchmark, Task

_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)")
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/", re.MULTILINE)


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return env


def git(args: list[str], cwd: Path, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, text=True, capture_output=True, env=git_env(), check=check)


@dataclass(frozen=True)
class Outcome:
    applied: bool
    statuses: dict[str, str] = field(default_factory=dict)
    log: str = field(default="", compare=False, repr=False)

    def passed(self, test_id: str) -> bool:
        return self.statuses.get(test_id) in ("PASSED", "XFAIL")

    def resolves(self, task: Task) -> bool:
        needed = list(task.fail_to_pass or ()) + list(task.pass_to_pass or ())
        return self.applied and all(self.passed(t) for t in needed)


class DemoGrader:
    """Grades (task, patch) pairs for real, caching results by content."""

    def __init__(self, benchmark: Benchmark, workdir: Path) -> None:
        self.benchmark = benchmark
        self.workdir = workdir
        self._cache: dict[tuple[str, str], Outcome] = {}
        self._lock = threading.Lock()
        self._count = 0

    def repo(self, task: Task) -> Path:
        return Path(self.benchmark.repo_sources[task.repo])

    def worktree(self, task: Task, tag: str) -> Path:
        with self._lock:
            self._count += 1
            path = self.workdir / f"{task.instance_id}-{tag}-{self._count}"
        git(["worktree", "add", "-q", "--detach", str(path), task.base_commit], self.repo(task))
        return path

    def applies(self, task: Task, patch: str, worktree: Path | None = None) -> bool:
        """`git apply --check` of a non-empty patch at the task's base commit."""
        where = worktree or self.worktree(task, "check")
        return git(["apply", "--check", "-"], where, stdin=patch, check=False).returncode == 0

    def grade(self, task: Task, patch: str) -> Outcome:
        key = (task.instance_id, patch)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        tree = self.worktree(task, "grade")
        outcome = self._run(task, patch, tree)
        with self._lock:
            self._cache[key] = outcome
        return outcome

    def grade_many(self, pairs: list[tuple[Task, str]]) -> list[Outcome]:
        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            return list(pool.map(lambda pair: self.grade(*pair), pairs))

    def _run(self, task: Task, patch: str, tree: Path) -> Outcome:
        for text in (patch, task.test_patch or ""):
            if text:
                applied = git(["apply", "-"], tree, stdin=text, check=False)
                if applied.returncode != 0:
                    return Outcome(applied=False, log=applied.stderr)
        test_files = _DIFF_FILE.findall(task.test_patch or "")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTEST_", "GIT_")) and k != "PYTHONDONTWRITEBYTECODE"}
        # Bytecode outside the worktree, shared: pytest compiled once, not at every one of
        # these hundreds of runs (where PYTHONDONTWRITEBYTECODE is set, each run compiled it).
        env["PYTHONPYCACHEPREFIX"] = pycache_prefix()
        # The demo suites need no plugins; skipping the venv's (anyio, ...) saves startup time.
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *test_files],
            cwd=tree,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        statuses = {}
        for line in done.stdout.splitlines():
            match = _SUMMARY.match(line)
            if match:
                statuses[match.group(2)] = match.group(1)
        return Outcome(applied=True, statuses=statuses, log=done.stdout[-2000:] + done.stderr[-2000:])


# --- the demo agent, as specified for agents/ (re-implemented here to test the design) --


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


def bm25_rank(query: str, documents: list[str], k1: float = 1.2, b: float = 0.75) -> list[int]:
    """Indices of `documents` by descending Okapi BM25 score (ties: earlier first)."""
    docs = [tokens(d) for d in documents]
    if not docs:
        return []
    average = sum(len(d) for d in docs) / len(docs)
    terms = set(tokens(query))
    scores = []
    for doc in docs:
        score = 0.0
        for term in terms:
            df = sum(1 for d in docs if term in d)
            if df == 0:
                continue
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            tf = doc.count(term)
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / average))
        scores.append(score)
    return sorted(range(len(docs)), key=lambda i: (-scores[i], i))


@dataclass(frozen=True)
class MemoryItem:
    instance_id: str
    text: str
    patch: str
    resolved: bool


def memory_text(task: Task, patch: str) -> str:
    """What the daydream keeps: issue summary, files and functions touched, the patch."""
    files = " ".join(_DIFF_FILE.findall(patch))
    functions = " ".join(re.findall(r"^@@ .* @@ ?(.*)$", patch, re.MULTILINE))
    return f"{task.problem_statement}\n{files}\n{functions}\n{patch}"


def run_demo_agent(
    grader: DemoGrader, tasks: tuple[Task, ...], attempts: dict[str, str], memory: bool
) -> dict[str, tuple[bool, str, str]]:
    """instance_id -> (resolved, submitted patch, where it came from) over one sequence."""
    items: list[MemoryItem] = []
    results: dict[str, tuple[bool, str, str]] = {}
    for task in tasks:
        patch, origin = attempts[task.instance_id], "attempt"
        if memory:
            ranked = bm25_rank(task.problem_statement or "", [item.text for item in items])
            base = grader.worktree(task, "recall")
            for index in ranked:
                item = items[index]
                if item.resolved and item.patch and grader.applies(task, item.patch, base):
                    patch, origin = item.patch, f"memory:{item.instance_id}"
                    break
        resolved = grader.grade(task, patch).resolves(task)
        results[task.instance_id] = (resolved, patch, origin)
        items.append(MemoryItem(task.instance_id, memory_text(task, patch), patch, resolved))
    return results
