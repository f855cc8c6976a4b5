"""The demo benchmark as a `Benchmark`, its repositories on disk, and its curriculum file."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from graders.host import default_cache_dir
from ledger.errors import SweclError

from .._dump import write_curriculum
from .._model import DIFFICULTY_LABELS, Benchmark, Sequence, Task
from ._history import GOLD, Built, build_library, git_env, write_repo
from ._library_files import INICONF, SPANS, TEXTKIT

__all__ = [
    "DEMO_ATTEMPTS",
    "DEMO_DESIGN",
    "DEMO_ENVIRONMENT",
    "DEMO_OWNER",
    "DemoDesign",
    "default_repos_dir",
    "demo_benchmark",
    "materialise_demo_repos",
    "write_demo_curriculum",
]

DEMO_OWNER = "swecl-demo"

# python None = the interpreter running swecl; no install step: each library is a flat
# package at the worktree root that pytest's `pythonpath = ["."]` makes importable.
DEMO_ENVIRONMENT: dict[str, Any] = {
    "python": None,
    "pip_packages": ["pytest"],
    "install": None,
    "test_cmd": "python -m pytest -rA -p no:cacheprovider",
    "log_parser": "pytest",
}

# Sequence order follows SWE-Bench-CL's rule: most tasks first.
_LIBRARIES = (TEXTKIT, INICONF, SPANS)
_LABEL_OF = {score: label for label, score in DIFFICULTY_LABELS.items()}
_MARKER = "swecl-demo"  # a file in .git/ telling our repositories from anything else


@dataclass(frozen=True)
class DemoDesign:
    """What a demo task is for, and what the demo agent is expected to score on it.

    kind: "new" (a bug seen for the first time), "recurrence" (an earlier bug brought
    back; `recurs` names the task whose fix applies verbatim), "decoy" (an earlier
    fix applies cleanly but is not enough) or "late-fix" (an earlier bug that memory
    never solved brought back; the agent solves it itself, and its fix then applies at,
    and solves, the earlier task `recurs` names). attempt: the bundled attempt is the "gold"
    fix, another "correct" fix, "wrong", or "empty".
    """

    instance_id: str
    sequence_id: str
    order: int
    difficulty: int
    kind: str
    recurs: str | None
    attempt: Literal["gold", "correct", "wrong", "empty"]
    expect_memory_on: bool
    expect_memory_off: bool
    notes: str


def _sequence_id(name: str) -> str:
    return f"{DEMO_OWNER}_{name}_sequence"


@cache
def _built() -> tuple[Built, ...]:
    return tuple(build_library(library) for library in _LIBRARIES)


def _iso(when: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(when, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _sequences() -> tuple[Sequence, ...]:
    sequences = []
    for built in _built():
        repo = f"{DEMO_OWNER}/{built.library.name}"
        tasks = []
        for order, item in enumerate(built.tasks, start=1):
            spec = item.spec
            earlier = [
                t.instance_id
                for t in built.tasks[: order - 1]
                if set(t.modified_files) & set(item.modified_files)
            ]
            tasks.append(
                Task(
                    instance_id=item.instance_id,
                    repo=repo,
                    base_commit=item.base_commit,
                    order=order,
                    difficulty=spec.difficulty,
                    difficulty_label=_LABEL_OF[spec.difficulty],
                    version=spec.version,
                    # Issues are opened a few hours after the snapshot they describe.
                    created_at=_iso(item.base_time + 3 * 3600),
                    problem_statement=f"{spec.title}\n{spec.body}",
                    hints_text=spec.hints,
                    patch=item.patch,
                    test_patch=item.test_patch,
                    fail_to_pass=spec.fail_to_pass,
                    pass_to_pass=spec.pass_to_pass,
                    dependencies=tuple(sorted(earlier)),
                    modified_files=item.modified_files,
                    environment=dict(DEMO_ENVIRONMENT),
                )
            )
        sequences.append(
            Sequence(
                id=_sequence_id(built.library.name),
                repo=repo,
                tasks=tuple(tasks),
                environment=dict(DEMO_ENVIRONMENT),
            )
        )
    return tuple(sequences)


def _attempts() -> dict[str, str]:
    return {item.instance_id: item.attempt_patch for built in _built() for item in built.tasks}


def _design() -> dict[str, DemoDesign]:
    design = {}
    for built in _built():
        ids = {item.spec.number: item.instance_id for item in built.tasks}
        for order, item in enumerate(built.tasks, start=1):
            spec = item.spec
            if spec.attempt is None:
                attempt = "empty"
            elif spec.attempt == GOLD:
                attempt = "gold"
            else:
                attempt = "correct" if spec.expect_memory_off else "wrong"
            design[item.instance_id] = DemoDesign(
                instance_id=item.instance_id,
                sequence_id=_sequence_id(built.library.name),
                order=order,
                difficulty=spec.difficulty,
                kind=spec.kind,
                recurs=None if spec.recurs is None else ids[spec.recurs],
                attempt=attempt,  # type: ignore[arg-type]
                expect_memory_on=spec.expect_memory_on,
                expect_memory_off=spec.expect_memory_off,
                notes=spec.notes,
            )
    return design


# The demo agent's own attempt per task (a unified diff; "" = it gives up).
DEMO_ATTEMPTS: dict[str, str] = _attempts()
DEMO_DESIGN: dict[str, DemoDesign] = _design()


def _fingerprint() -> str:
    return hashlib.sha256(" ".join(b.tip for b in _built()).encode()).hexdigest()[:12]


def default_repos_dir() -> Path:
    """Where the demo repositories live unless told otherwise.

    $SWECL_DEMO_REPOS, else the swecl cache (`$SWECL_CACHE`, `$XDG_CACHE_HOME/swecl` or
    ~/.cache/swecl) under demo-repos/<fingerprint>: a new demo history gets a new folder instead of
    clobbering one another swecl version may be using.
    """
    explicit = os.environ.get("SWECL_DEMO_REPOS")
    if explicit:
        return Path(explicit)
    return repos_dir_in(default_cache_dir())  # $SWECL_CACHE: one cache root for repos, envs and the demo


def repos_dir_in(cache_dir: str | os.PathLike[str]) -> Path:
    """The demo repositories' folder under a swecl cache root."""
    return Path(cache_dir) / "demo-repos" / _fingerprint()


def _tip_of(path: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "-q", "--verify", "refs/heads/main^{commit}"],
            cwd=path,
            capture_output=True,
            text=True,
            env=git_env(),
            check=False,
        )
    except FileNotFoundError:
        raise SweclError("git is not on PATH; the demo benchmark builds its repositories with git") from None
    return done.stdout.strip() if done.returncode == 0 else None


def _is_ours(path: Path) -> bool:
    return (path / ".git" / _MARKER).is_file()


def _materialise_one(built: Built, dest: Path) -> Path:
    target = dest / built.library.name
    if target.exists():
        if not _is_ours(target):
            raise SweclError(
                f"{target} exists and is not a swecl demo repository; remove it or pick another directory"
            )
        if _tip_of(target) == built.tip:
            return target
    # Build beside the target and rename into place, so a concurrent or interrupted
    # build never leaves a half-written repository where a grader would clone from.
    staging = Path(tempfile.mkdtemp(prefix=f".{built.library.name}.", dir=dest))
    try:
        repo = staging / "repo"
        write_repo(built, repo)
        (repo / ".git" / _MARKER).write_text(built.tip + "\n", encoding="utf-8")
        if target.exists():
            stale = staging / "stale"
            os.replace(target, stale)
        try:
            os.replace(repo, target)
        except OSError:
            # Another process put a repository there first; use it if it is right.
            if not (_is_ours(target) and _tip_of(target) == built.tip):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def materialise_demo_repos(dest: str | os.PathLike[str]) -> dict[str, Path]:
    """Create (or reuse) the demo's git repositories under `dest`.

    Returns "swecl-demo/NAME" -> repository path. Idempotent: a repository already
    holding the expected history is left alone; one of ours with another history is
    rebuilt. Every commit SHA is checked against the task data.
    """
    root = Path(dest).resolve()
    root.mkdir(parents=True, exist_ok=True)
    return {f"{DEMO_OWNER}/{built.library.name}": _materialise_one(built, root) for built in _built()}


def demo_benchmark(repos_dir: str | os.PathLike[str] | None = None, *, materialise: bool = True) -> Benchmark:
    """The built-in demo benchmark (name "demo").

    With `materialise` (the default) its repositories are created in `repos_dir`
    (default: `default_repos_dir()`) and `repo_sources` points at them; without, no
    git is run and `repo_sources` is empty (enough to list or inspect tasks).
    """
    sources: dict[str, str] = {}
    if materialise:
        paths = materialise_demo_repos(repos_dir if repos_dir is not None else default_repos_dir())
        sources = {repo: str(path) for repo, path in paths.items()}
    return Benchmark(
        name="demo",
        source="swecl built-in demo benchmark",
        sequences=_sequences(),
        repo_sources=sources,
    )


def write_demo_curriculum(path: str | os.PathLike[str], repos_dir: str | os.PathLike[str] | None = None) -> Path:
    """Write the demo as a SWE-Bench-CL curriculum JSON that `load_benchmark` reads back.

    Its repositories are materialised in `repos_dir` (default: `swecl-demo-repos/`
    beside the file) and recorded in metadata.repo_sources, relative to the file when
    they lie under its folder, so the file and its repositories move together and two
    copies written anywhere are byte-identical.
    """
    target = Path(path).resolve()
    repos = Path(repos_dir).resolve() if repos_dir is not None else target.parent / "swecl-demo-repos"
    paths = materialise_demo_repos(repos)
    sources = {}
    for repo, where in paths.items():
        try:
            sources[repo] = where.relative_to(target.parent).as_posix()
        except ValueError:
            sources[repo] = str(where)
    return write_curriculum(demo_benchmark(materialise=False), target, repo_sources=sources)
