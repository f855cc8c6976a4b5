"""Inputs for the reliability tests: the demo curriculum, predictions files, hostile
repositories and datasets, and scanners that look for what must never be found."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.processes import read_blobs, read_events


@dataclass(frozen=True)
class DemoCurriculum:
    path: Path  # curriculum JSON, repositories in swecl-demo-repos/ beside it
    document: dict[str, Any]

    def task(self, instance_id: str) -> dict[str, Any]:
        for sequence in self.document["sequences"]:
            for task in sequence["tasks"]:
                if task["metadata"]["instance_id"] == instance_id:
                    return task
        raise KeyError(instance_id)

    def sequence_of(self, instance_id: str) -> dict[str, Any]:
        for sequence in self.document["sequences"]:
            if any(t["metadata"]["instance_id"] == instance_id for t in sequence["tasks"]):
                return sequence
        raise KeyError(instance_id)

    def gold(self, instance_id: str) -> str:
        return self.task(instance_id)["evaluation"]["patch"]

    def test_patch(self, instance_id: str) -> str:
        return self.task(instance_id)["evaluation"]["test_patch"]

    def fail_to_pass(self, instance_id: str) -> list[str]:
        return list(self.task(instance_id)["evaluation"]["FAIL_TO_PASS"])

    def repo_dir(self, repo: str) -> Path:
        where = self.document["metadata"]["repo_sources"][repo]
        return (self.path.parent / where).resolve()

    def instance_ids(self, sequence_id: str) -> list[str]:
        for sequence in self.document["sequences"]:
            if sequence["id"] == sequence_id:
                return [t["metadata"]["instance_id"] for t in sequence["tasks"]]
        raise KeyError(sequence_id)


def demo_curriculum(folder: Path) -> DemoCurriculum:
    from commands.inputs.demo import write_demo_curriculum

    path = write_demo_curriculum(folder / "demo-curriculum.json")
    return DemoCurriculum(path, json.loads(path.read_text(encoding="utf-8")))


def one_sequence_curriculum(demo: DemoCurriculum, folder: Path, instance_ids: Sequence[str],
                            edit: Any = None) -> Path:
    """A curriculum holding only `instance_ids` (same sequence, renumbered 1..n), its
    repositories referenced by absolute path; `edit(task_dict)` may change each task."""
    first = demo.sequence_of(instance_ids[0])
    tasks = []
    for position, iid in enumerate(instance_ids, start=1):
        task = json.loads(json.dumps(demo.task(iid)))
        task["continual_learning"]["sequence_position"] = position
        task["continual_learning"]["dependencies"] = []
        if edit is not None:
            edit(task)
        tasks.append(task)
    document = {
        "metadata": {
            **{k: v for k, v in demo.document["metadata"].items() if k != "repo_sources"},
            "repo_sources": {repo: str(demo.repo_dir(repo)) for repo in demo.document["metadata"]["repo_sources"]},
        },
        "sequences": [{**{k: v for k, v in first.items() if k != "tasks"}, "num_tasks": len(tasks), "tasks": tasks}],
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "curriculum.json"
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path


def write_predictions(path: Path, patches: dict[str, str | None]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for iid, patch in patches.items():
            fh.write(json.dumps({"instance_id": iid, "model_name_or_path": "reliability", "model_patch": patch}) + "\n")
    return path


# -- patches ----------------------------------------------------------------------------


def new_file_patch(path: str, lines: Sequence[str], *, mode: str = "100644") -> str:
    """A git patch creating `path` with `lines`."""
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\n"
        f"new file mode {mode}\n"
        "--- /dev/null\n"
        f"+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n"
        f"{body}"
    )


def symlink_patch(path: str, target: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\n"
        "new file mode 120000\n"
        "--- /dev/null\n"
        f"+++ b/{path}\n"
        "@@ -0,0 +1 @@\n"
        f"+{target}\n"
        "\\ No newline at end of file\n"
    )


# -- a hostile repository ---------------------------------------------------------------


def git(args: Sequence[str], cwd: Path, **kw: Any) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com",
    )
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True, **kw)


def make_repo(root: Path, files: dict[str, str], *, symlinks: dict[str, str] | None = None) -> str:
    """A git repository at `root` with one commit of `files` (+ `symlinks`); its sha."""
    root.mkdir(parents=True, exist_ok=True)
    git(["init", "-q", "-b", "main"], root)
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for rel, target in (symlinks or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / rel)
    git(["add", "-A"], root)
    git(["commit", "-q", "-m", "base"], root)
    return git(["rev-parse", "HEAD"], root).stdout.strip()


ENVIRONMENT = {
    "python": None,
    "pip_packages": ["pytest"],
    "install": None,
    "test_cmd": "python -m pytest -rA -p no:cacheprovider",
    "log_parser": "pytest",
}

CALC_FILES = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["."]\n',
    "tests/__init__.py": "",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n",
}
CALC_GOLD = (
    "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n"
)


def calc_test_patch() -> str:
    """The calc task's test patch: one new test, `test_add_numbers`."""
    return (
        "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n"
        "@@ -3,3 +3,7 @@ from calc import add\n \n def test_add_zero():\n     assert add(0, 0) == 0\n+\n+\n"
        "+def test_add_numbers():\n+    assert add(2, 3) == 5\n"
    )


def calc_curriculum(folder: Path, *, base: str, repo_dir: Path, repo: str = "acme/calc",
                    instances: Sequence[str] = ("acme__calc-1",), test_patch: str | None = None,
                    fail_to_pass: Sequence[str] = ("tests/test_calc.py::test_add_numbers",),
                    pass_to_pass: Sequence[str] = ("tests/test_calc.py::test_add_zero",),
                    issue: str = "add() subtracts instead of adding.",
                    sequence_id: str = "acme_calc_sequence") -> Path:
    """A curriculum over a repository the test built: one task per instance id, all at
    `base` with the same fix and tests (so each can carry a different prediction)."""
    tasks = [
        {
            "metadata": {"instance_id": iid, "repo": repo, "base_commit": base,
                         "created_at": "2024-01-01T00:00:00Z", "difficulty": "<15 min fix"},
            "task": {"problem_statement": issue, "hints_text": ""},
            "evaluation": {
                "patch": CALC_GOLD,
                "test_patch": test_patch if test_patch is not None else calc_test_patch(),
                "FAIL_TO_PASS": list(fail_to_pass),
                "PASS_TO_PASS": list(pass_to_pass),
            },
            "continual_learning": {"sequence_position": position, "difficulty_score": 1, "dependencies": [],
                                   "modified_files": ["calc.py"]},
        }
        for position, iid in enumerate(instances, start=1)
    ]
    document = {
        "metadata": {"name": "reliability", "repo_sources": {repo: str(repo_dir)}},
        "sequences": [
            {"id": sequence_id, "repo": repo, "num_tasks": len(tasks), "environment": ENVIRONMENT, "tasks": tasks}
        ],
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "calc-curriculum.json"
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path


# -- scanners ---------------------------------------------------------------------------


def ledger_texts(results: Path) -> list[tuple[str, bytes]]:
    """(where, bytes) of every event payload and every blob of the ledger."""
    found: list[tuple[str, bytes]] = []
    for e in read_events(results):
        found.append((f"seq {e['seq']} {e['type']}", json.dumps(e["payload"], ensure_ascii=False).encode()))
    for digest, data in read_blobs(results).items():
        found.append((f"blob {digest[:12]}", data))
    return found


def files_under(root: Path) -> list[tuple[str, bytes]]:
    out = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out.append((str(path.relative_to(root)), path.read_bytes()))
    return out


def find_needles(haystack: Iterable[tuple[str, bytes]], needles: Iterable[str]) -> list[str]:
    """'needle in where' for every needle found in any text (raw bytes, so nothing is missed)."""
    hits = []
    wanted = [(n, n.encode()) for n in needles if n]
    for where, data in haystack:
        for text, raw in wanted:
            if raw in data:
                hits.append(f"{text[:60]!r} in {where}")
    return hits


def added_lines(patch: str, min_chars: int = 12) -> list[str]:
    """A patch's added lines that are specific enough to identify it."""
    out = []
    for line in patch.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            body = line[1:].strip()
            if len(body) >= min_chars:
                out.append(body)
    return out


# -- the CLI in this process (fast enough for property tests) -----------------------------


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str


def cli(results: Path, *args: str, cache: Path) -> CliResult:
    """`swecl --results RESULTS ARGS` in this process, as `main` runs it (exit code, output)."""
    import contextlib
    import io

    from commands.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.get("SWECL_CACHE")
    os.environ["SWECL_CACHE"] = str(cache)
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(["--results", str(results), *args])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        if saved is None:
            os.environ.pop("SWECL_CACHE", None)
        else:
            os.environ["SWECL_CACHE"] = saved
    return CliResult(code, out.getvalue(), err.getvalue())


def assert_clean_refusal(result: CliResult | subprocess.CompletedProcess[str]) -> str:
    """Exit 2 with exactly one line `swecl: error: ...` on stderr, no traceback."""
    code = result.code if isinstance(result, CliResult) else result.returncode
    err = result.stderr.strip()
    assert code == 2, f"exit {code}: {result.stderr[-2000:]}"
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    assert len(err.splitlines()) == 1 and err.startswith("swecl: error: "), result.stderr
    return err


def ledger_state(results: Path) -> list[str]:
    """Problems of the results dir after a command: a ledger that does not verify, or a
    run that started and never recorded run.finished (half-written). [] when sound."""
    path = results / "ledger.db"
    if not path.exists() or path.stat().st_size == 0:
        return []
    from ledger import IntegrityError, Ledger

    problems = []
    with Ledger.open(path, readonly=True) as ledger:
        try:
            ledger.verify()
        except IntegrityError as exc:
            problems.append(f"verify: {exc}")
    headers: dict[str, list[str]] = {}
    for e in read_events(results):
        if e["stream"].count("/") == 1 and e["stream"].startswith("run/"):
            headers.setdefault(e["stream"], []).append(e["type"])
    for stream, types in headers.items():
        if types[-1] != "run.finished":
            problems.append(f"{stream}: half-written (last header event {types[-1]})")
    return problems
