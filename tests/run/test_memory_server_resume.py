"""A `--memory-server` run that its server fails: the next task on a fresh server, the
resume with the mapped values given again, and plugin-dreamed through the server's own
consolidation tool.

Real parts: `swecl run` on the demo spans sequence with the demo agent, the real grader,
bubblewrap, a real ledger, and a small stdio server written with the MCP SDK (given
inline: a confined server sees no file under /tmp, where the test's files are).
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from commands import Experiment
from ledger import Ledger

from .support import SPANS, events, first_of, first_tasks, swecl

# DIE=N: the server exits on its N-th call, counted in its data directory (so a server
# restarted on a snapshot counts on from it and dies on the same call again); DIE=0
# never. DIE_ON=TEXT: it exits on a search for TEXT, once per start. `consolidate` (the
# dream) marks each note as dreamed.
SERVER = textwrap.dedent('''
    import os
    from pathlib import Path
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("notes", log_level="WARNING")
    calls = Path("calls")

    def count() -> None:
        n = int(calls.read_text()) + 1 if calls.exists() else 1
        calls.write_text(str(n))
        if n == int(os.environ.get("DIE", "0")):
            os._exit(3)

    async def search(query: str) -> str:
        count()
        if os.environ.get("DIE_ON") and query == os.environ["DIE_ON"]:
            os._exit(4)
        return Path("notes").read_text() if Path("notes").exists() else ""

    async def remember(text: str) -> str:
        count()
        with open("notes", "a") as fh:
            fh.write(text + "\\n")
        return "ok"

    async def consolidate(scope: str) -> str:
        notes = Path("notes").read_text().splitlines() if Path("notes").exists() else []
        Path("notes").write_text("".join(f"{line} dreamed-{scope}\\n" for line in notes))
        return f"consolidated {len(notes)}"

    server.add_tool(search, name="search", description="find notes", structured_output=False)
    server.add_tool(remember, name="remember", description="keep a note", structured_output=False)
    server.add_tool(consolidate, name="consolidate", description="merge notes", structured_output=False)
    server.run("stdio")
''')
SPEC = f"{sys.executable} -c {shlex.quote(SERVER)}"
POLICY = ("--memory-recall-tool", "search", "--memory-recall-args", '{"query": "{instance_id}"}',
          "--memory-write-tool", "remember", "--memory-write-args", '{"text": "{lesson}"}')
TASKS = 2


def _payloads(results: Path, type_: str, prefix: str = "run/") -> list[dict[str, Any]]:
    return [p for _, stream, _, p in events(results, type_) if stream.startswith(prefix)]


def _final(results: Path, version: str) -> dict[tuple[str, str], tuple[int, str]]:
    """(pass, instance) -> (attempt, status) of each task's last grade in run `version`."""
    last: dict[tuple[str, str], tuple[int, str]] = {}
    for p in _payloads(results, "grade.finished", f"run/{version}/"):
        key = (p["pass"], p["instance_id"])
        if key not in last or p["attempt"] > last[key][0]:
            last[key] = (p["attempt"], p["status"])
    return last


def _run(results: Path, cache: Path, *args: str, check: bool = True) -> Any:
    return swecl(results, "run", "--sequence", SPANS, *args, "--quiet", cache=cache, timeout=600, check=check)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """v1: the server never fails (the uninterrupted run); v2: it dies on the second task's
    recall, and again on each restart (the run records infrastructure); then v2 resumed."""
    results = tmp_path_factory.mktemp("provider-resume")
    common = ("--stage", "plugin-blank", *first_of(TASKS, SPANS), "--passes", "initial,retest",
              "--memory-server", SPEC, *POLICY)
    _run(results, cache, *common, "--memory-env", "DIE=0")
    _run(results, cache, *common, "--memory-env", "DIE=3")
    return results


def test_a_server_that_dies_makes_its_tasks_infrastructure_and_each_next_task_starts_a_fresh_server(
    runs: Path,
) -> None:
    first, second = first_tasks(SPANS, TASKS)
    before = _final(runs, "2")
    assert before[("initial", first)][1] != "infra_error"
    # The second task's recall killed it; its restart for the re-test pass, on the first
    # task's snapshot, dies on the same call: never the agent's 0.
    assert before[("initial", second)] == (1, "infra_error")
    calls = _payloads(runs, "memory.provider.called", "run/2/")
    assert [(c["pass"], c["instance_id"], c["via"], c["failure"]) for c in calls[:3]] == [
        ("initial", first, "recall", None), ("initial", first, "write", None), ("initial", second, "recall", "crashed")]
    # A fresh server per failure (never "unavailable" for a later task): one started per host.
    assert {c["failure"] for c in calls} == {None, "crashed"}
    # The failing task left no snapshot: the memory goes on from the first task's.
    assert [s["instance_id"] for s in _payloads(runs, "memory.provider.snapshot", "run/2/")] == [first]


@pytest.fixture(scope="module")
def resumed(runs: Path, tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """A copy of `runs` with v2 resumed on the fixed server: the other tests read `runs` as
    the failures left it, whatever order they run in."""
    results = tmp_path_factory.mktemp("provider-resumed") / "results"
    shutil.copytree(runs, results, symlinks=True)
    failed_before = {k for k, (_, status) in _final(results, "2").items() if status == "infra_error"}
    assert ("initial", first_tasks(SPANS, TASKS)[1]) in failed_before
    proc = swecl(results, "run", "--resume", "2", "--memory-env", "DIE=0", "--quiet", cache=cache, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return results


def test_resume_with_the_fixed_server_redoes_the_failed_tasks_and_matches_the_uninterrupted_run(
    resumed: Path, cache: Path
) -> None:
    first, second = first_tasks(SPANS, TASKS)
    runs = resumed
    after = _final(runs, "2")
    assert {k: s for k, (_, s) in after.items()} == {k: s for k, (_, s) in _final(runs, "1").items()}
    assert after[("initial", second)][0] == 2  # the next attempt; the failed one stays recorded
    grades = [(p["attempt"], p["status"]) for p in _payloads(runs, "grade.finished", "run/2/")
              if (p["pass"], p["instance_id"]) == ("initial", second)]
    assert grades == [(1, "infra_error"), (2, after[("initial", second)][1])]
    assert after[("initial", first)][0] == 1  # a task that finished with a working server is not run again
    # The redo recalled the memory as it stood before it: the first task's lesson only.
    (recall,) = [c for c in _payloads(runs, "memory.provider.called", "run/2/")
                 if (c["instance_id"], c["attempt"], c["via"], c["pass"]) == (second, 2, "recall", "initial")]
    with Ledger.open(runs / "ledger.db", readonly=True) as led:
        answer = led.get_blob(recall["result"]).decode()
    assert first in answer and second not in answer and recall["failure"] is None
    assert [s["instance_id"] for s in _payloads(runs, "memory.provider.snapshot", "run/2/")] == [first, second]
    (finished, *_rest) = reversed(_payloads(runs, "run.finished", "run/2"))
    assert finished["status"] == "finished"
    assert swecl(runs, "verify", cache=cache).returncode == 0


@pytest.mark.parametrize(("args", "says"), [
    ([], "give --memory-env DIE=VALUE again"),
    (["--memory-env", "DIE=0", "--memory-env", "TOKEN=x"], "drop --memory-env TOKEN"),
    (["--memory-env", "DIE=0", "--memory-server", "other-server --flag"], "is not run 1's server"),
])
def test_a_resume_without_the_recorded_variables_or_with_another_server_is_one_line(
    runs: Path, cache: Path, args: list[str], says: str
) -> None:
    head = len(events(runs))
    proc = swecl(runs, "run", "--resume", "1", *args, cache=cache, check=False)
    assert proc.returncode != 0 and says in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert len(events(runs)) == head


def test_a_run_without_a_server_refuses_memory_env_on_resume(tmp_path: Path, cache: Path) -> None:
    results = tmp_path / "r"
    _run(results, cache, "--stage", "base", *first_of(1, SPANS), "--passes", "initial", "--grader", "none")
    proc = swecl(results, "run", "--resume", "1", "--memory-env", "A=b", cache=cache, check=False)
    assert proc.returncode != 0 and "used no --memory-server: drop --memory-env" in proc.stderr


def test_the_next_task_after_a_crash_recalls_from_a_fresh_server_on_the_last_snapshot(
    tmp_path: Path, cache: Path
) -> None:
    first, second, third = first_tasks(SPANS, 3)
    results = tmp_path / "r"
    _run(results, cache, "--stage", "plugin-blank", *first_of(3, SPANS), "--passes", "initial", "--grader", "none",
         "--memory-server", SPEC, *POLICY, "--memory-env", f"DIE_ON={second}")
    grades = {p["instance_id"]: p["status"] for p in _payloads(results, "grade.finished")}
    assert grades[second] == "infra_error" and grades[first] != "infra_error" and grades[third] != "infra_error"
    calls = _payloads(results, "memory.provider.called")
    assert [(c["instance_id"], c["via"], c["call"], c["failure"]) for c in calls] == [
        (first, "recall", 1, None), (first, "write", 2, None), (second, "recall", 3, "crashed"),
        (third, "recall", 1, None), (third, "write", 2, None)]  # a new host numbers its calls anew
    assert len(_payloads(results, "memory.provider.started")) == 2
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        answer = led.get_blob(calls[3]["result"]).decode()
    assert first in answer and second not in answer
    assert [s["instance_id"] for s in _payloads(results, "memory.provider.snapshot")] == [first, third]
    # Finished, not resumed: a failed task followed by a finished one is not run again.
    swecl(results, "run", "--resume", "1", "--memory-env", f"DIE_ON={second}", "--quiet", cache=cache, timeout=600)
    assert len(_payloads(results, "task.started")) == 3


def test_plugin_dreamed_calls_the_servers_consolidation_tool_once_before_the_initial_pass(
    runs: Path, cache: Path, tmp_path: Path
) -> None:
    first, second = first_tasks(SPANS, TASKS)
    proc = _run(runs, cache, "--stage", "plugin-dreamed", "--source-memory", "1", *first_of(1, SPANS), "--passes",
                "initial", "--grader", "none", "--memory-server", SPEC, *POLICY, "--memory-env", "DIE=0",
                "--memory-dream-tool", "consolidate", "--memory-dream-args", '{"scope": "{sequence_id}"}')
    assert proc.returncode == 0, proc.stderr
    version = str(max(int(p["version"]) for p in _payloads(runs, "run.started")))
    calls = _payloads(runs, "memory.provider.called", f"run/{version}/")
    assert [(c["via"], c["tool"], c["instance_id"]) for c in calls] == [
        ("dream", "consolidate", ""), ("recall", "search", first), ("write", "remember", first)]
    with Ledger.open(runs / "ledger.db", readonly=True) as led:
        assert json.loads(led.get_blob(calls[0]["arguments"])) == {"scope": SPANS}
        assert led.get_blob(calls[0]["result"]).decode() == "consolidated 2"
        answer = led.get_blob(calls[1]["result"]).decode()
    # The first task recalled the dreamed seed: the source run's lessons, consolidated.
    assert answer.count(f"dreamed-{SPANS}") == 2 and first in answer and second in answer
    snaps = _payloads(runs, "memory.provider.snapshot", f"run/{version}/")
    assert [(s["instance_id"], s["order"]) for s in snaps] == [(None, 0), (first, 1)]
    assert not _payloads(runs, "dream.finished", f"run/{version}")  # swecl's own dream does not run
    # Replayed before its first task: the dreamed data, which a resume would start on too.
    report = Experiment(runs).replay(version=version, upto_order=1, out_dir=tmp_path / "replay")
    assert any("after the dream pass" in line for line in report.lines())
    notes = (tmp_path / "replay" / "provider" / SPANS / "data" / "notes").read_text().splitlines()
    assert len(notes) == 2 and all(line.endswith(f"dreamed-{SPANS}") for line in notes)
    assert swecl(runs, "verify", cache=cache).returncode == 0


def test_plugin_dreamed_with_a_server_and_no_dream_tool_is_refused_in_one_line(tmp_path: Path, cache: Path) -> None:
    proc = _run(tmp_path / "r", cache, "--stage", "plugin-dreamed", "--source-memory", "1", "--memory-server", SPEC,
                check=False)
    assert proc.returncode != 0 and "--memory-dream-tool NAME" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "r" / "ledger.db").exists()
    proc = _run(tmp_path / "r", cache, "--stage", "plugin-blank", "--memory-server", SPEC,
                "--memory-dream-tool", "consolidate", check=False)
    assert proc.returncode != 0 and "--memory-dream-tool is for plugin-dreamed" in proc.stderr


@pytest.fixture(scope="module")
def dreamed_source(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """v1: plugin-blank with the server over the first two tasks; v2: plugin-dreamed seeded
    from it over the same two, its dream pass through `consolidate` (no grading: the
    server's data is what is looked at)."""
    results = tmp_path_factory.mktemp("dreamed-fork")
    _run(results, cache, "--stage", "plugin-blank", *first_of(TASKS, SPANS), "--passes", "initial", "--grader",
         "none", "--memory-server", SPEC, *POLICY, "--memory-env", "DIE=0")
    _run(results, cache, "--stage", "plugin-dreamed", "--source-memory", "1", *first_of(TASKS, SPANS), "--passes",
         "initial", "--grader", "none", "--memory-server", SPEC, *POLICY, "--memory-env", "DIE=0",
         "--memory-dream-tool", "consolidate", "--memory-dream-args", '{"scope": "{sequence_id}"}')
    return results


@pytest.mark.parametrize("dream_at_fork", [False, True], ids=["as-it-stood", "dream-at-fork"])
def test_a_fork_of_a_dreamed_server_run_starts_on_its_snapshot_before_k(
    dreamed_source: Path, cache: Path, tmp_path: Path, dream_at_fork: bool
) -> None:
    import shutil

    first, second = first_tasks(SPANS, TASKS)
    results = tmp_path / "results"
    shutil.copytree(dreamed_source, results)
    source_calls = _payloads(results, "memory.provider.called", "run/2/")
    (source_snapshot,) = [(seq, p) for seq, stream, _, p in events(results, "memory.provider.snapshot")
                          if stream.startswith("run/2/") and p["instance_id"] == first]
    proc = swecl(results, "run", "--fork", f"2@{TASKS}", "--memory-server", SPEC, "--memory-env", "DIE=0",
                 *(["--dream-at-fork"] if dream_at_fork else []), "--quiet", cache=cache, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (seeded,) = _payloads(results, "memory.seeded", "run/3")
    assert (seeded["chosen"], seeded["provider_snapshots"]) == ("fork", {SPANS: source_snapshot[0]})
    calls = _payloads(results, "memory.provider.called", "run/3/")
    dream = [("dream", "consolidate", "")] if dream_at_fork else []
    assert [(c["via"], c["tool"], c["instance_id"]) for c in calls] == [
        *dream, ("recall", "search", second), ("write", "remember", second)]
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        recalled = led.get_blob(calls[len(dream)]["result"]).decode()
        source_recall = next(c for c in source_calls if c["via"] == "recall" and c["instance_id"] == second)
        before = led.get_blob(source_recall["result"]).decode()
    if dream_at_fork:
        # The dream ran once more at K, over what v2's server held before its task K.
        assert recalled == "".join(f"{line} dreamed-{SPANS}\n" for line in before.splitlines())
    else:
        assert recalled == before  # task K recalled exactly what v2's task K did
    # Replay across the fork point: before K the source's data, at K what the fork's server started on.
    exp = Experiment(results)
    for order, expected in ((TASKS - 1, None), (TASKS, recalled)):
        exp.replay(version="3", upto_order=order, out_dir=tmp_path / f"replay-{order}")
        notes = (tmp_path / f"replay-{order}" / "provider" / SPANS / "data" / "notes").read_text()
        exp.replay(version="2", upto_order=order, out_dir=tmp_path / f"source-{order}")
        if expected is None:
            assert notes == (tmp_path / f"source-{order}" / "provider" / SPANS / "data" / "notes").read_text()
        else:
            assert notes == expected
    assert swecl(results, "verify", cache=cache).returncode == 0
