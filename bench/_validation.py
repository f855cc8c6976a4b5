"""Benchmark 9: a warm `swecl validate` of real tasks against their bare test commands.

A fixed sample of two tasks from each of the five repositories whose mirrors a lab can
fetch (`SAMPLE`: the sample of docs/validation.md) is validated as a user validates it:
`swecl validate --dataset MANIFEST --rows ROWS --instance ... --repo-source ...
--cache-dir CACHE --jobs 1` (ROWS: the sample's rows), a real
subprocess of this checkout's CLI, each time with a results folder of its own. The first
validation fills the cache (cold when the cache is new: environments built, installs
run and recorded); then `ROUNDS` rounds, each a measured validation (its wall time, from
its start to its exit, over its three passes: gold, no-op; the empty patch is decided
without a run) followed by the bare test commands. Every validation's verdicts are
checked: every gold patch resolves, no no-op patch does.

The reference, in the same run and in the same environments: each test command the
validation runs (one with the gold patch, one with the no-op patch, per task) run by
hand, `BARE_REPEATS` times a round. The fastest measured validation is compared with
the sum of each command's fastest run (one run of either moved by as much as the
target's margin); each round's own ratio is reported beside it. The library grader (`get_grader("swebench")`, the cache of the validations)
grades each task's gold and no-op requests, built as `swecl validate` builds them; its
sandbox is wrapped so that, in the worktree state the grade tests (base commit, the
repository's install in place, the patch and the test patch applied, stray bytecode
removed), just before the grade's own confined test run, the same command runs bare:
unconfined, without swecl's results plugin (`-p swecl_results_channel`), with the same
environment variables less swecl's own (the plugin's channel and the process markers),
`PYTHONDONTWRITEBYTECODE=1` as in the grade. Target: the fastest warm validation's wall
time at most 1.1 times the sum of those bare test commands.

Inputs, from the environment (the bench skips, with one line saying what is missing,
when either is absent; a quick run skips it too):

- `SWECL_BENCH_REPO_SOURCES="owner/name=PATH,owner/name=PATH"`: a mirror (or URL) of each
  repository of the sample (`astropy/astropy-helpers` too, if the mirror needs it);
- the grading rows `SWE-Bench-CL-grading-rows.reconstructed.jsonl` and the order manifest
  `SWE-Bench-CL-order-manifest.reconstructed.json`, in `data/` of `$SWECL_SHARED` or of
  `../shared` beside the checkout.

The validations' cache: `CACHE_DIR/validation` when the bench is given a cache folder
(`--cache-dir` or `$SWECL_BENCH_CACHE`: a second bench run is then warm from its first
validation on), else a folder of this run's scratch space (the first validation cold).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commands import NOOP_PATCH
from graders.host import Sandbox

from ._core import Context, Result
from ._grading import bare_argv
from .processes import ledger_rows, shared_dir, swecl

SOURCES_VAR = "SWECL_BENCH_REPO_SOURCES"
ROWS_NAME = "SWE-Bench-CL-grading-rows.reconstructed.jsonl"
MANIFEST_NAME = "SWE-Bench-CL-order-manifest.reconstructed.json"
TARGET = 1.1
TEST_TIMEOUT_S = 1800.0
# One run of either side moves by as much as the target's margin (the host's load, its
# page cache): the measured validation is repeated (ROUNDS, each followed by the bare
# commands, so that a slow spell weighs on both), each bare command BARE_REPEATS times a
# round, and the fastest of each is compared.
ROUNDS = 2
BARE_REPEATS = 2

SAMPLE: dict[str, tuple[str, ...]] = {
    "sympy/sympy": ("sympy__sympy-12096", "sympy__sympy-13372"),
    "sphinx-doc/sphinx": ("sphinx-doc__sphinx-7440", "sphinx-doc__sphinx-7462"),
    "astropy/astropy": ("astropy__astropy-12907", "astropy__astropy-14309"),
    "pydata/xarray": ("pydata__xarray-4075", "pydata__xarray-6461"),
    "pytest-dev/pytest": ("pytest-dev__pytest-5262", "pytest-dev__pytest-5809"),
}
"""Two tasks per repository, two versions each (docs/validation.md's sample)."""


PLUGIN = "swecl_results_channel"


# -- inputs --------------------------------------------------------------------------------


def repo_sources(text: str | None) -> dict[str, str]:
    """`owner/name=PATH,owner/name=PATH` -> {owner/name: PATH}."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        name, sep, where = item.strip().partition("=")
        if sep and name.strip() and where.strip():
            out[name.strip()] = where.strip()
    return out


def _missing_inputs(sources: Mapping[str, str], data: Path | None) -> list[str]:
    missing = []
    if not sources:
        missing.append(f"${SOURCES_VAR} (owner/name=PATH,... of {', '.join(SAMPLE)})")
    else:
        absent = [r for r in SAMPLE if r not in sources]
        if absent:
            missing.append(f"{', '.join(absent)} in ${SOURCES_VAR}")
        gone = [f"{r}={p}" for r, p in sources.items() if "://" not in p and not Path(p).exists()]
        if gone:
            missing.append(f"the sources {', '.join(gone)} (no such path)")
    absent = [n for n in (ROWS_NAME, MANIFEST_NAME) if data is None or not (data / n).is_file()]
    if absent:
        missing.append(f"{' and '.join(f'data/{n}' for n in absent)} ($SWECL_SHARED or ../shared beside the checkout)")
    return missing


def _sample_rows(rows: Path) -> list[dict[str, Any]]:
    wanted = {iid for ids in SAMPLE.values() for iid in ids}
    found: dict[str, dict[str, Any]] = {}
    with rows.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                if row.get("instance_id") in wanted:
                    found[row["instance_id"]] = row
    return [found[iid] for ids in SAMPLE.values() for iid in ids if iid in found]


def _validation_cache(ctx: Context) -> tuple[Path, bool]:
    """(the validations' cache folder, whether it was named): under a bench cache folder that
    was named, else in this run's scratch space (bench/.cache, the default, holds generated
    ledgers; environments of real repositories are gigabytes)."""
    default = (Path(__file__).resolve().parent / ".cache").resolve()
    if ctx.cache.resolve() != default:
        return ctx.cache / "validation", True
    return ctx.work / "validation-cache", False


# -- the bare test commands ------------------------------------------------------------------


def bare_env(env: Mapping[str, str]) -> dict[str, str]:
    """The grade's test environment less swecl's own: its variables (the results channel,
    the process markers) and the plugin's folder on PYTHONPATH."""
    out = {k: v for k, v in env.items() if not k.startswith("SWECL_")}
    if "PYTHONPATH" in out:
        kept = [p for p in out["PYTHONPATH"].split(os.pathsep) if p and not (Path(p) / f"{PLUGIN}.py").exists()]
        if kept:
            out["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            del out["PYTHONPATH"]
    out["PYTHONDONTWRITEBYTECODE"] = "1"
    return out


@dataclass
class BareRun:
    argv: list[str]
    cwd: str
    seconds: float  # the fastest of its repeats
    exit_code: int | None
    every_s: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class BareBeside(Sandbox):
    """The grader's sandbox, which also runs each command it confines bare first, in the
    same folder and state (the grader confines only its test runs), and keeps the times."""

    runs: list[BareRun] = field(default_factory=list, compare=False, hash=False)
    timeout_s: float = TEST_TIMEOUT_S
    repeats: int = 1

    @classmethod
    def around(cls, sandbox: Sandbox, timeout_s: float, repeats: int = 1) -> BareBeside:
        return cls(sandbox.mode, sandbox.bwrap, sandbox.hidden, sandbox.exposed, timeout_s=timeout_s,
                   repeats=repeats)

    def wrap(self, argv: Sequence[str], *, cwd: str | os.PathLike[str], env: Mapping[str, str],
             writable: Iterable[str | os.PathLike[str]] = (), readable: Iterable[str | os.PathLike[str]] = (),
             **kwargs: Any) -> tuple[list[str], dict[str, str]]:
        program = bare_argv(argv)
        every: list[float] = []
        codes: set[int | None] = set()
        for _ in range(self.repeats):  # PYTHONDONTWRITEBYTECODE: a repeat finds what the first found
            with tempfile.TemporaryFile(prefix="swecl-bench-bare-") as sink:
                t0 = time.perf_counter()
                try:
                    done = subprocess.run(program, cwd=cwd, env=bare_env(env), stdin=subprocess.DEVNULL, stdout=sink,
                                          stderr=subprocess.STDOUT, timeout=self.timeout_s, start_new_session=True)
                    codes.add(done.returncode)
                except subprocess.TimeoutExpired:
                    codes.add(None)
                every.append(time.perf_counter() - t0)
        code = codes.pop() if len(codes) == 1 else None  # repeats that disagree: no exit code to trust
        self.runs.append(BareRun(program, os.fspath(cwd), min(every), code, every))
        return super().wrap(argv, cwd=cwd, env=env, writable=writable, readable=readable, **kwargs)


def bare_reference(ctx: Context, data: tuple[Path, Path], cache: Path, sources: Mapping[str, str],
                   wanted: Sequence[str], repeats: int = BARE_REPEATS) -> dict[str, dict[str, Any]]:
    """Per task: the bare test command's time with the gold patch and with the no-op patch
    (the fastest of `repeats`, in the state the grade tests), and the library grade's status."""
    from commands.run import RunOptions, environment_spec, open_benchmark
    from graders import GradeRequest, get_grader

    manifest, rows = data
    benchmark = open_benchmark(RunOptions(stage="base", dataset=str(manifest), rows=str(rows), cache_dir=str(cache)))
    tasks = [t for t in benchmark.tasks() if t.instance_id in wanted]
    grader = get_grader("swebench", cache_dir=cache, repo_sources={**benchmark.repo_sources, **sources},
                        timeout_s=TEST_TIMEOUT_S)
    sandbox = BareBeside.around(grader.sandbox, TEST_TIMEOUT_S, repeats)  # type: ignore[attr-defined]
    grader.sandbox = sandbox  # type: ignore[attr-defined]
    out: dict[str, dict[str, Any]] = {t.instance_id: {"repo": t.repo} for t in tasks}
    for kind in ("gold", "noop"):  # as the validation grades them: every gold patch, then every no-op
        for task in tasks:
            before = len(sandbox.runs)
            outcome = grader.grade(GradeRequest(
                instance_id=task.instance_id, repo=task.repo, version=task.version, base_commit=task.base_commit,
                model_patch=task.patch or "" if kind == "gold" else NOOP_PATCH, test_patch=task.test_patch or "",
                fail_to_pass=list(task.fail_to_pass or ()), pass_to_pass=list(task.pass_to_pass or ()),
                environment=environment_spec(task), gold_patch=task.patch,
                environment_setup_commit=task.environment_setup_commit,
            ))
            ran = sandbox.runs[before:]
            expected = outcome.status == "resolved" if kind == "gold" else outcome.status == "unresolved"
            if not ran or not expected:
                raise RuntimeError(f"validation benchmark: the reference grade of {task.instance_id} ({kind}) "
                                   f"ended {outcome.status} ({outcome.error}) with {len(ran)} test run(s)")
            bare = ran[0]  # a second one would be the control run, which the validation's grades did not need
            # the grade's "tests" phase holds the bare run too (it runs inside the sandbox's wrapping)
            confined = outcome.timings.get("tests", 0.0) - sum(bare.every_s)
            out[task.instance_id][kind] = {"bare_s": round(bare.seconds, 3), "exit_code": bare.exit_code,
                                           "bare_every_s": [round(x, 3) for x in bare.every_s],
                                           "grade_tests_s": round(confined, 3)}
            ctx.log(f"  {task.instance_id} ({kind}): bare test command {bare.seconds:.2f}s, the fastest of "
                    f"{', '.join(f'{x:.2f}' for x in bare.every_s)} (exit {bare.exit_code}); its grade {outcome.status}")
    return out


# -- the validations --------------------------------------------------------------------------


def _validate(ctx: Context, name: str, data: tuple[Path, Path], cache: Path, sources: Mapping[str, str],
              wanted: Sequence[str]) -> tuple[float, Path, Any]:
    """One `swecl validate` as a user runs it: (wall seconds, its results folder, its JSON)."""
    results = ctx.work / f"validation-{name}"
    manifest, rows = data
    args = ["validate", "--dataset", str(manifest), "--rows", str(rows), "--cache-dir", str(cache), "--jobs", "1",
            "--version", f"bench-{name}", "--json"]
    for iid in wanted:
        args += ["--instance", iid]
    for repo, where in sorted(sources.items()):
        args += ["--repo-source", f"{repo}={where}"]
    t0 = time.perf_counter()
    done = swecl(results, *args, cache=cache, timeout=4 * 3600)
    wall = time.perf_counter() - t0
    return wall, results, json.loads(done.stdout)


def _check(doc: Any, name: str) -> None:
    wrong = [f"{t['instance_id']}: gold {t['gold']}, no-op {t['noop']}" + (f" ({t['reason']})" if t.get("reason") else "")
             for t in doc["tasks"] if t["gold"] != "resolved" or t["noop"] == "resolved"]
    expected = {iid for ids in SAMPLE.values() for iid in ids}
    if missing := expected - {t["instance_id"] for t in doc["tasks"]}:
        wrong.append(f"not validated: {', '.join(sorted(missing))}")
    if wrong:
        raise RuntimeError(f"validation benchmark: the {name} validation's verdicts differ from gold resolved, "
                           f"no-op not: {'; '.join(wrong)}")


def ledger_times(results: Path) -> dict[str, dict[str, Any]]:
    """Per task, from a validation's ledger: its grades' phases by kind of patch
    (`grade.finished.timings`) and its busy time by kind (`task.started` to `task.finished`)."""
    rows = ledger_rows(results, ("task.started", "task.finished", "grade.finished"))
    out: dict[str, dict[str, Any]] = {}
    started: dict[tuple[str, str, str, int], float] = {}
    for stream, type_, at, p in rows:
        kind = stream.split("/")[1].rsplit("-", 1)[-1]
        iid = p["instance_id"]
        key = (stream, iid, p.get("pass", "initial"), p.get("attempt", 1))
        task = out.setdefault(iid, {"phases": {}, "busy_s": {}})
        if type_ == "task.started":
            started[key] = at
        elif type_ == "task.finished" and key in started:
            task["busy_s"][kind] = round(task["busy_s"].get(kind, 0.0) + at - started.pop(key), 3)
        elif type_ == "grade.finished":
            task["phases"][kind] = {k: round(v, 3) for k, v in (p.get("timings") or {}).items()}
    return out


def _sum(values: Iterable[float]) -> float:
    return round(sum(values), 3)


def run(ctx: Context) -> list[Result]:
    if ctx.quick:
        ctx.log("validation: skipped (not in a quick run: it validates real repositories for minutes)")
        return []
    sources = repo_sources(os.environ.get(SOURCES_VAR))
    shared = shared_dir()
    data_dir = shared / "data" if shared is not None else None
    if missing := _missing_inputs(sources, data_dir):
        ctx.log(f"validation: skipped, missing {'; '.join(missing)}")
        return []
    assert data_dir is not None
    sample = _sample_rows(data_dir / ROWS_NAME)
    wanted = [iid for ids in SAMPLE.values() for iid in ids]
    if len(sample) != len(wanted):
        absent = sorted(set(wanted) - {r["instance_id"] for r in sample})
        ctx.log(f"validation: skipped, missing the rows of {', '.join(absent)} in {ROWS_NAME}")
        return []
    rows = ctx.work / "validation-rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in sample), encoding="utf-8")
    data = (data_dir / MANIFEST_NAME, rows)
    cache, named = _validation_cache(ctx)
    cache.mkdir(parents=True, exist_ok=True)
    was_new = not any(cache.iterdir())
    n = len(sample)
    ctx.log(f"validation: {n} tasks, cache {'new' if was_new else 'in use'} ({'named' if named else 'scratch'}); "
            "the first validation")
    first_s, _first_dir, first_doc = _validate(ctx, "first", data, cache, sources, wanted)
    _check(first_doc, "first")
    ctx.log(f"  first validation: {first_s:.1f}s ({first_s / n:.1f} s/task); {ROUNDS} rounds of a measured "
            f"validation and the bare test commands ({BARE_REPEATS} runs each)")
    rounds: list[dict[str, Any]] = []
    for r in range(1, ROUNDS + 1):
        warm_s, warm_dir, warm_doc = _validate(ctx, f"warm{r}", data, cache, sources, wanted)
        _check(warm_doc, f"warm{r}")
        ctx.log(f"  round {r}: warm validation {warm_s:.1f}s ({warm_s / n:.1f} s/task); the bare test commands")
        bare = bare_reference(ctx, data, cache, sources, wanted)
        rounds.append({"warm_s": warm_s, "warm_dir": warm_dir, "doc": warm_doc, "bare": bare})
    fastest = min(rounds, key=lambda x: x["warm_s"])
    tasks = _task_rows(wanted, [x["bare"] for x in rounds], ledger_times(fastest["warm_dir"]))
    bare_total = _sum(min(v["bare_test_command_s"]["gold"]) + min(v["bare_test_command_s"]["noop"])
                      for v in tasks.values())
    warm_s = fastest["warm_s"]
    per_round = [{"warm_validation_s": round(x["warm_s"], 3),
                  "bare_test_commands_s": _sum(x["bare"][iid][k]["bare_s"] for iid in wanted for k in ("gold", "noop"))}
                 for x in rounds]
    for x in per_round:
        x["ratio"] = round(x["warm_validation_s"] / x["bare_test_commands_s"], 3) if x["bare_test_commands_s"] else None
    ratio = warm_s / bare_total if bare_total else None
    ctx.details["validation"] = {
        "sample": wanted,
        "cache": "named" if named else "scratch",
        "cache_was_new": was_new,
        "rounds": ROUNDS,
        "bare_repeats": BARE_REPEATS,
        "first_wall_s": round(first_s, 3),
        "warm_wall_s": round(warm_s, 3),
        "per_round": per_round,
        "bare_test_commands_s": bare_total,
        "warm_busy_s": _sum(sum(v["warm_busy_s"].values()) for v in tasks.values()),
        "warm_phases_s": _phases_of(tasks.values()),
        "by_repo": _by_repo(tasks),
        "tasks": tasks,
        "installs": {"first": first_doc.get("installs"), "warm": fastest["doc"].get("installs")},
    }
    ctx.log(f"  bare test commands {bare_total:.1f}s in all (each the fastest of {ROUNDS * BARE_REPEATS}); the "
            f"fastest warm validation {warm_s:.1f}s: {ratio:.2f}x; per round "
            + ", ".join(f"{x['ratio']:.2f}x" for x in per_round if x["ratio"]) if ratio else "  no bare time")
    first_label = "cold: the cache was new" if was_new else "the cache held this sample's environments already"
    return [
        Result("validation_warm_vs_bare", warm_s / n, "s/task", ratio, f"ratio <= {TARGET:g}",
               None if ratio is None else ratio <= TARGET,
               reference=f"the same {n} tasks' test commands run bare in the same environments and worktree states "
                         f"({bare_total:.1f} s: one with the gold patch, one with the no-op patch per task, "
                         f"unconfined, no results plugin, each the fastest of {ROUNDS * BARE_REPEATS} runs in "
                         f"{ROUNDS} rounds) against the fastest of {ROUNDS} warm `swecl validate` runs, one a round, "
                         "whole wall time (its gold, no-op and empty passes, start to exit); per round: "
                         + ", ".join(f"{x['ratio']:.2f}" for x in per_round if x["ratio"])),
        Result("validation_first_run", first_s / n, "s/task", first_s / bare_total if bare_total else None, None, None,
               reference=f"the same bare test commands ({bare_total:.1f} s); the validation before the measured ones "
                         f"({first_label})"),
    ]


def _task_rows(wanted: Sequence[str], bares: Sequence[dict[str, dict[str, Any]]],
               times: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per task: its bare times of every round (the fastest of each round's repeats), the
    grade's confined test time, and the measured validation's phases and busy time."""
    tasks: dict[str, Any] = {}
    for iid in wanted:
        t = times.get(iid, {"phases": {}, "busy_s": {}})
        tasks[iid] = {
            "repo": bares[0][iid]["repo"],
            "bare_test_command_s": {k: [b[iid][k]["bare_s"] for b in bares] for k in ("gold", "noop")},
            "bare_runs_s": {k: [b[iid][k]["bare_every_s"] for b in bares] for k in ("gold", "noop")},
            "bare_exit_code": {k: [b[iid][k]["exit_code"] for b in bares] for k in ("gold", "noop")},
            "reference_grade_confined_tests_s": {k: [b[iid][k]["grade_tests_s"] for b in bares]
                                                 for k in ("gold", "noop")},
            "warm_phases_s": t["phases"],
            "warm_busy_s": t["busy_s"],
        }
    return tasks


def _phases_of(items: Iterable[dict[str, Any]]) -> dict[str, float]:
    summed: dict[str, float] = {}
    for v in items:
        for phases in v["warm_phases_s"].values():
            for k, sec in phases.items():
                summed[k] = summed.get(k, 0.0) + sec
    return {k: round(sec, 3) for k, sec in sorted(summed.items())}


def _by_repo(tasks: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    by_repo = {}
    for repo in SAMPLE:
        mine = [v for v in tasks.values() if v["repo"] == repo]
        by_repo[repo] = {
            "tasks": len(mine),
            "bare_test_commands_s": _sum(min(v["bare_test_command_s"]["gold"]) + min(v["bare_test_command_s"]["noop"])
                                         for v in mine),
            "warm_busy_s": _sum(sum(v["warm_busy_s"].values()) for v in mine),
            "warm_phases_s": _phases_of(mine),
        }
    return by_repo
