"""Resource faults: a results dir that cannot be written, a full disk, a test that hangs,
an agent that never exits. Each gives a clear one-line error or a recorded timeout, the
ledger always verifies, and an interrupted run resumes to the same metrics."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw
import pytest

from bench.crashkit import live_memory, metrics_doc, run_invariants
from bench.processes import REPO_ROOT, SPANS, live_processes, read_events, swecl_argv, swecl_env
from tests.inprocess import swecl

from .conftest import INITIAL_ARGS
from .support import (
    CALC_FILES,
    CALC_GOLD,
    DemoCurriculum,
    assert_clean_refusal,
    calc_curriculum,
    ledger_state,
    make_repo,
    write_predictions,
)

pytestmark = pytest.mark.slow



def _namespace_prefix() -> list[str] | None:
    """How to get a private mount namespace here: `unshare -m` as root, `unshare -rm`
    (a user namespace) otherwise; None when neither works."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    for prefix in ([unshare, "-m"], [unshare, "-rm"]) if os.geteuid() == 0 else ([unshare, "-rm"],):
        probe = subprocess.run([*prefix, "true"], capture_output=True)
        if probe.returncode == 0:
            return prefix
    return None


def _scenario(name: str, spec: dict, tmp_path: Path, cache: Path, module: str = "scenarios") -> dict:
    prefix = _namespace_prefix()
    if prefix is None:
        pytest.skip("no private mount namespace here (unshare -m / -rm unavailable)")
    spec = {**spec, "cache": str(cache), "report": str(tmp_path / f"{name}.json")}
    (tmp_path / f"{name}-spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        [*prefix, sys.executable, "-m", f"tests.reliability.{module}", name, str(tmp_path / f"{name}-spec.json")],
        cwd=REPO_ROOT, env=swecl_env(cache), capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp_path / f"{name}.json").read_text())


class _Done:
    """A scenario's recorded command, shaped for `assert_clean_refusal`."""

    def __init__(self, raw: dict) -> None:
        self.returncode, self.stdout, self.stderr = raw["code"], raw["stdout"], raw["stderr"]


# -- a results directory that cannot be written -----------------------------------------------


@contextmanager
def _immutable(path: Path) -> Iterator[bool]:
    """chattr +i (root) or chmod a-w; yields False when neither makes `path` read-only."""
    if os.geteuid() == 0:
        ok = shutil.which("chattr") and subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0
        try:
            yield bool(ok)
        finally:
            if ok:
                subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        mode = path.stat().st_mode
        path.chmod(0o555)
        try:
            yield True
        finally:
            path.chmod(mode)


def _settle(results: Path) -> None:
    """Leave the ledger as swecl leaves it after its last writer closes: checkpointed,
    no -wal/-shm files beside it (what an archived experiment looks like)."""
    conn = apsw.Connection(str(results / "ledger.db"))
    conn.pragma("wal_checkpoint", "TRUNCATE")
    conn.close()
    assert not (results / "ledger.db-wal").exists()


@pytest.fixture
def finished(tmp_path: Path, cache: Path, reference_initial: Path) -> Path:
    """A results dir holding one finished run (a copy of the reference), settled."""
    results = tmp_path / "results"
    shutil.copytree(reference_initial, results)
    _settle(results)
    return results


@pytest.mark.parametrize("wal_files", [False, True], ids=["settled", "wal-files-present"])
def test_a_run_into_a_read_only_results_dir_is_refused_and_writes_nothing(
    wal_files: bool, finished: Path, cache: Path
) -> None:
    before = read_events(finished)  # a read-only reader leaves -wal/-shm files behind...
    if wal_files:
        assert (finished / "ledger.db-wal").exists()  # ...through which SQLite can still write
    else:
        _settle(finished)
    with _immutable(finished) as ok:
        if not ok:
            pytest.skip("cannot make a directory read-only here")
        done = swecl(finished, "run", *INITIAL_ARGS, "--version", "new", "--quiet", cache=cache, check=False)
        assert_clean_refusal(done)
    assert read_events(finished) == before
    assert ledger_state(finished) == []
    # writable again: the same command runs
    assert swecl(finished, "run", *INITIAL_ARGS, "--version", "new", "--quiet", cache=cache, check=False).returncode == 0


def test_a_read_only_results_dir_can_still_be_verified_and_read(finished: Path, cache: Path) -> None:
    """An archived experiment (read-only directory, no -wal/-shm files beside the ledger)."""
    with _immutable(finished) as ok:
        if not ok:
            pytest.skip("cannot make a directory read-only here")
        for args in (("verify",), ("runs", "--json"), ("log", "--type", "run.started"), ("metrics", "--json")):
            done = swecl(finished, *args, cache=cache, check=False)
            assert done.returncode == 0, f"swecl {' '.join(args)}: {done.stderr.strip()}"


def test_a_read_only_bind_mount_refuses_runs(finished: Path, tmp_path: Path, cache: Path) -> None:
    report = _scenario("read_only", {
        "results": str(finished),
        "commands": {
            "run": ["run", *INITIAL_ARGS, "--version", "new", "--quiet"],
        },
    }, tmp_path, cache)
    assert_clean_refusal(_Done(report["run"]))
    assert ledger_state(finished) == [] and [e["stream"] for e in read_events(finished) if "new" in e["stream"]] == []


# -- a full disk ----------------------------------------------------------------------------------


def _assert_resumed_like_reference(results: Path, reference: Path, cache: Path, version: str) -> None:
    assert run_invariants(results, version) == []
    assert metrics_doc(results, version, cache) == metrics_doc(reference, "ref", cache)
    assert live_memory(results, version) == live_memory(reference, "ref")
    assert ledger_state(results) == []


def test_a_full_disk_stops_the_run_cleanly_and_it_resumes(
    tmp_path: Path, cache: Path, reference_initial: Path
) -> None:
    mountpoint = tmp_path / "small-disk"
    mountpoint.mkdir()
    keep = tmp_path / "kept"
    report = _scenario("disk_full", {
        "mountpoint": str(mountpoint), "size": "4m", "leave": 320_000, "start_args": list(INITIAL_ARGS),
        "version": "full", "keep": str(keep),
    }, tmp_path, cache)
    err = assert_clean_refusal(_Done(report["full_run"]))
    assert "disk is full" in err or "disk full" in err, err
    assert report["verify_while_full"]["code"] == 0, report["verify_while_full"]["stderr"]
    assert report["resume"]["code"] == 0, report["resume"]["stderr"]
    assert report["verify_final"]["code"] == 0
    events = read_events(keep, prefix="run/full")
    # run.finished "failed" when it still fit on the disk; the resume's "finished" last
    assert [e["payload"]["status"] for e in events if e["type"] == "run.finished"] in (["failed", "finished"], ["finished"])
    _assert_resumed_like_reference(keep, reference_initial, cache, "full")


def test_a_file_size_limit_stops_the_run_cleanly_and_it_resumes(
    tmp_path: Path, cache: Path, reference_initial: Path
) -> None:
    """The same fault without a mount namespace: RLIMIT_FSIZE makes every write past the
    limit fail (EFBIG, SIGXFSZ ignored) as a full disk would."""
    results = tmp_path / "results"
    swecl(results, "init", cache=cache)
    limit = (results / "ledger.db").stat().st_size + 90_000

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    full = subprocess.run(swecl_argv(results, "run", *INITIAL_ARGS, "--version", "big", "--quiet"), cwd=REPO_ROOT,
                          env=swecl_env(cache), capture_output=True, text=True, timeout=600, preexec_fn=limited)
    assert_clean_refusal(full)
    assert ledger_state(results) == []
    resumed = swecl(results, "run", "--resume", "big", "--quiet", cache=cache, check=False)
    assert resumed.returncode == 0, resumed.stderr
    _assert_resumed_like_reference(results, reference_initial, cache, "big")


# -- every writer on a full disk or a read-only mount ------------------------------------------

# Each writer's command; `{m}` is the small disk's mountpoint, the results dir is {m}/results.
# Outputs go into folders that do not exist yet, so a refused write must remove them again.
WRITERS: dict[str, list[str]] = {
    "export-predictions": ["export", "ref", "--format", "predictions", "--out", "{m}/out/p/preds.jsonl"],
    "export-events": ["export", "ref", "--format", "events", "--out", "{m}/out/e/events.jsonl"],
    "export-events-blobs": ["export", "ref", "--format", "events", "--with-blobs", "--out", "{m}/out/b/events.jsonl"],
    "export-parquet": ["export", "ref", "--format", "parquet", "--out", "{m}/out/q/events.parquet"],
    "replay": ["replay", "ref", "--upto-order", "4", "--out", "{m}/replay"],
    "memory-export": ["memory", "export", "ref", "--out", "{m}/memexp/_memory"],
    "memory-materialise": ["memory", "materialise", "ref"],
    "report": ["report", "--out", "{m}/report"],
    "metrics-csv": ["metrics", "--csv", "{m}/tables/m.csv"],
    "metrics-parquet": ["metrics", "--parquet", "{m}/tables/m.parquet"],
}


def _assert_refused_cleanly(name: str, outcome: dict, reason: str) -> None:
    err = assert_clean_refusal(_Done(outcome))
    assert reason in err, f"{name}: {err}"
    assert outcome["after"] == outcome["before"], f"{name} left {sorted(set(outcome['after']) - set(outcome['before']))}"


@pytest.mark.parametrize("leave", [0, 48_000], ids=["no-space", "48k-left"])
def test_every_writer_on_a_full_disk_says_so_in_one_line_and_leaves_nothing(
    leave: int, tmp_path: Path, cache: Path, reference_initial: Path
) -> None:
    """With no space, each writer is refused in one line and the disk holds exactly the
    files it held before (no temporary file, no half-written file, no new folder). With
    a little space, the small outputs fit and the rest are refused just as cleanly."""
    mountpoint = tmp_path / "small-disk"
    mountpoint.mkdir()
    report = _scenario("disk_full_writers", {
        "mountpoint": str(mountpoint), "size": "3m", "leave": leave, "results": str(reference_initial),
        "version": "ref", "commands": WRITERS,
    }, tmp_path, cache, module="scenarios_writers")
    refused = []
    for name, outcome in report.items():
        if leave == 0 or outcome["code"] != 0:
            _assert_refused_cleanly(name, outcome, "the disk is full")
            refused.append(name)
    if leave == 0:
        assert refused == list(WRITERS)
    else:
        assert "report" in refused and len(refused) < len(WRITERS), refused  # the PNGs never fit; predictions do


def test_every_writer_into_a_read_only_mount_says_so_in_one_line(
    finished: Path, tmp_path: Path, cache: Path
) -> None:
    """The results dir bind-mounted read-only (EROFS): the same one line, nothing written."""
    commands = {name: [a.replace("{m}", str(finished)) for a in args] for name, args in WRITERS.items()}
    shutil.rmtree(finished / "vref" / "_memory", ignore_errors=True)
    before = sorted(str(p.relative_to(finished)) for p in finished.rglob("*") if not p.name.endswith(("-wal", "-shm")))
    report = _scenario("read_only", {"results": str(finished), "commands": commands}, tmp_path, cache)
    after = sorted(str(p.relative_to(finished)) for p in finished.rglob("*") if not p.name.endswith(("-wal", "-shm")))
    for name in WRITERS:
        err = assert_clean_refusal(_Done(report[name]))
        assert "read-only" in err, f"{name}: {err}"
    assert after == before


# -- a test that hangs, an agent that never exits ------------------------------------------------


def test_a_hung_test_is_a_recorded_timeout_and_its_processes_are_gone(tmp_path: Path, cache: Path) -> None:
    marker = "1000.4242"
    hang = CALC_GOLD.replace(
        "+    return a + b\n",
        f"+    import subprocess, time; subprocess.Popen(['sleep', '{marker}']); time.sleep(1000)\n"
        "+    return a + b\n",
    ).replace("@@ -1,2 +1,2 @@", "@@ -1,2 +1,3 @@")
    repo_dir = tmp_path / "repo"
    base = make_repo(repo_dir, CALC_FILES)
    dataset = calc_curriculum(tmp_path / "ds", base=base, repo_dir=repo_dir, repo="acme/calc-hang")
    predictions = write_predictions(tmp_path / "pred.jsonl", {"acme__calc-1": hang})
    results = tmp_path / "results"
    started = time.monotonic()
    done = swecl(results, "grade", "--dataset", str(dataset), "--predictions", str(predictions), "--json",
                 "--test-timeout", "3", cache=cache, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60
    assert json.loads(done.stdout)["statuses"] == {"acme__calc-1": "timeout"}
    (grade,) = [e["payload"] for e in read_events(results) if e["type"] == "grade.finished"]
    assert grade["resolved"] is False and "3.0s" in grade["error"]
    assert live_processes(cmdline=marker) == []
    assert ledger_state(results) == []


@pytest.mark.parametrize(
    "command, what",
    [
        ("sleep 1000.{n}", "a plain sleeper"),
        ("sh -c 'trap \"\" TERM; sleep 1000.{n}; sleep 1000.{n}'", "one that ignores SIGTERM"),
    ],
)
def test_an_agent_that_never_exits_is_a_recorded_timeout(
    command: str, what: str, curriculum: DemoCurriculum, tmp_path: Path, cache: Path
) -> None:
    n = str(os.getpid()) + str(len(what))
    first = curriculum.instance_ids(SPANS)[0]
    results = tmp_path / "results"
    started = time.monotonic()
    done = swecl(results, "run", "--dataset", str(curriculum.path), "--sequence", SPANS, "--instance", first,
                 "--stage", "base", "--agent", "command", "--command", command.format(n=n), "--agent-timeout", "2",
                 "--quiet", cache=cache, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60
    (agent,) = [e["payload"] for e in read_events(results) if e["type"] == "agent.finished"]
    assert agent["exit"] == "timeout" and "2.0s" in agent["error"]
    (finished,) = [e["payload"] for e in read_events(results) if e["type"] == "task.finished"]
    assert finished["status"] == "empty_patch"
    assert live_processes(cmdline=f"1000.{n}") == []
    assert ledger_state(results) == []


def test_an_agents_detached_descendants_end_with_it(curriculum: DemoCurriculum, tmp_path: Path, cache: Path) -> None:
    """A child that starts its own session (`setsid`, Node's `detached: true`) leaves the
    agent's process group; it must not outlive the task either."""
    n = str(os.getpid()) + "77"
    first = curriculum.instance_ids(SPANS)[0]
    results = tmp_path / "results"
    script = tmp_path / "agent.sh"
    script.write_text(f"#!/bin/sh\nsetsid sleep 1000.{n} &\nsleep 1000.{n}0\n")
    script.chmod(0o755)
    try:
        done = swecl(results, "run", "--dataset", str(curriculum.path), "--sequence", SPANS, "--instance", first,
                     "--stage", "base", "--agent", "command", "--command", str(script), "--agent-timeout", "2",
                     "--quiet", cache=cache, check=False, timeout=300)
        assert done.returncode == 0, done.stderr
        assert live_processes(cmdline=f"1000.{n}") == []
    finally:
        for pid in live_processes(cmdline=f"1000.{n}"):
            os.kill(pid, signal.SIGKILL)
