"""Running the real `swecl` CLI against real ledgers, as users do.

The runner itself is `bench.processes` (the benchmarks use it too): a subprocess for
every command that runs or grades, in-process for those that only read a ledger
(`tests.inprocess`); this adds the shapes the run tests read events in."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import apsw

from bench.processes import INICONF, REPO_ROOT, SPANS, TEXTKIT, read_events
from tests.inprocess import swecl, swecl_json
from commands.inputs import demo_benchmark, find_sequence
from ledger import decode_blob

__all__ = ["INICONF", "REPO_ROOT", "SPANS", "TEXTKIT", "a_missing_cli_is_said_before_the_run", "recalled_lessons",
           "a_plugin_run_recalled_and_was_graded", "builtin_versions_recorded", "comparable", "decided_ids", "demo_tasks",
           "events", "finished_cells", "first_of", "first_tasks",
           "no_secret_in_the_ledger", "no_secret_in_the_results", "run_a_stage", "swecl", "swecl_json",
           "the_next_task_read_it"]


def first_tasks(sequence_id: str, n: int) -> list[str]:
    """The instance ids of a demo sequence's first `n` tasks, in order (for `--instance`)."""
    return [t.instance_id for t in find_sequence(demo_benchmark(materialise=False), sequence_id).tasks[:n]]


def first_of(n: int, *sequence_ids: str) -> tuple[str, ...]:
    """`--instance` options for the first `n` tasks of each sequence: a run of a prefix,
    for tests that need some tasks of a sequence, not all (each is a graded pytest run)."""
    return tuple(a for seq in sequence_ids for t in first_tasks(seq, n) for a in ("--instance", t))


def demo_tasks(sequence_id: str) -> int:
    """How many tasks a demo sequence has (read from the benchmark, not repeated in tests)."""
    return len(find_sequence(demo_benchmark(materialise=False), sequence_id).tasks)


def events(results: Path, *types: str) -> list[tuple[int, str, str, dict[str, Any]]]:
    """(seq, stream, type, payload) straight from the SQLite file, read-only."""
    return [
        (e["seq"], e["stream"], e["type"], e["payload"])
        for e in read_events(results)
        if not types or e["type"] in types
    ]


# An absolute path into a cache's environments: `<cache>/envs/<repo>/<version>/...`.
_IN_CACHE = re.compile(r"^/.*/envs/")


def comparable(results: Path) -> Counter[tuple[str, str, str]]:
    """(stream, type, payload) of every event, without what differs between any two runs
    (wall times and a grade's phase timings, the log blob that names the worktree slot, the
    command line, the cache folder in a test command's interpreter path: each test process
    has its cache, and a shared run was graded from its builder's) and the
    number of workers in the recorded options. (The same run with more workers, or on
    another executor, records this same multiset: only the order differs.)"""
    out: Counter[tuple[str, str, str]] = Counter()
    for e in read_events(results):
        payload: dict[str, Any] = dict(e["payload"])
        if e["type"] == "run.started":
            payload.pop("provenance")
            payload["config"] = {k: v for k, v in payload["config"].items() if k != "task_jobs"}
        for volatile in ("duration_s", "timings", "log"):
            payload.pop(volatile, None)
        if isinstance(payload.get("test_cmd"), list):
            payload["test_cmd"] = [_IN_CACHE.sub("<cache>/envs/", a) if isinstance(a, str) else a
                                   for a in payload["test_cmd"]]
        out[(e["stream"], e["type"], json.dumps(payload, sort_keys=True))] += 1
    return out


def decided_ids(results: Path) -> set[str]:
    """The ids of events made from deterministic ids (all but recalls and a run's
    start and end, which take fresh ones)."""
    return {e["event_id"] for e in read_events(results)
            if e["type"] not in ("memory.recalled", "run.started", "run.finished")}


def finished_cells(results: Path, version: str) -> list[tuple[str, str, int]]:
    """(sequence, pass, order) of every task.finished of a run, with repeats kept."""
    prefix = f"run/{version}/"
    return [
        (p["sequence_id"], p["pass"], p["order"])
        for _, stream, _, p in events(results, "task.finished")
        if stream.startswith(prefix)
    ]


# The tasks a real agent CLI's run takes: the spans sequence's first three. Three show
# what more would (a task recalling what earlier ones wrote, a file carried twice), and
# each task starts the CLI (a Node program: seconds of CPU apiece).
AGENT_RUN_TASKS = 3


def run_a_stage(results: Path, cache: Path, stage: str, agent: str, model: str, env: dict[str, str],
                version: str | None = None) -> None:
    """`swecl run` of one stage of `agent` on the initial pass of the spans sequence's
    first `AGENT_RUN_TASKS` tasks, quietly."""
    swecl(results, "run", "--stage", stage, *(["--version", version] if version else []), "--agent", agent,
          "--model", model, "--sequence", SPANS, *first_of(AGENT_RUN_TASKS, SPANS),
          "--passes", "initial", "--quiet", cache=cache, env=env, timeout=900)


def no_secret_in_the_ledger(path: Path, secret: str) -> None:
    """`secret` is in no event payload and no blob (compressed or not) of the ledger at `path`."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        for (payload,) in conn.execute("SELECT payload FROM events"):
            assert secret.encode() not in bytes(payload)
        for encoding, data in conn.execute("SELECT encoding, data FROM blobs"):
            assert secret.encode() not in decode_blob(encoding, data)
    finally:
        conn.close()


def no_secret_in_the_results(results: Path, secret: str) -> None:
    """`secret` is nowhere under the results dir: not in the ledger (events, blobs
    decompressed) and not in any other file a run left there (logs, memory folders)."""
    no_secret_in_the_ledger(results / "ledger.db", secret)
    files = [p for p in results.rglob("*") if p.is_file() and not p.is_symlink()]
    assert files
    for path in files:
        assert secret.encode() not in path.read_bytes(), f"the key is in {path}"


def a_missing_cli_is_said_before_the_run(tmp_path: Path, cache: Path, agent: str, env_var: str) -> None:
    """`swecl run --agent AGENT` with its CLI missing: one line, exit 2, no run recorded."""
    env = {env_var: str(tmp_path / f"no-such-{agent}"), "PATH": "/usr/bin:/bin"}
    proc = swecl(tmp_path / "r", "run", "--stage", "base", "--agent", agent, "--sequence", SPANS,
                 cache=cache, env=env, check=False)
    assert proc.returncode == 2 and agent in proc.stderr and proc.stderr.count("\n") == 1
    assert not (tmp_path / "r" / "ledger.db").exists() or events(tmp_path / "r") == []


def builtin_versions_recorded(results: Path, cache: Path, title: str, versions: list[str]) -> list[dict[str, Any]]:
    """A finished builtin run `b1` whose native memory file `title` was recorded once a
    task, as `memory.written` with the file's text after that task (`versions`, one a
    task, at least two), each superseding the one before. Returns the written payloads."""
    (run,) = swecl_json(results, "runs", cache=cache)
    assert (run["version"], run["stage"], run["status"]) == ("b1", "builtin", "finished")
    tasks = len([p for _, _, _, p in events(results, "task.finished")])
    assert tasks >= 2 and len(versions) == tasks
    written = [p for _, _, _, p in events(results, "memory.written")]
    assert [(w["kind"], w["title"]) for w in written] == [("builtin-file", title)] * tasks
    assert [w["body"] for w in written] == versions
    assert [w["source_order"] for w in written] == list(range(1, tasks + 1))
    superseded = [p for _, _, _, p in events(results, "memory.superseded")]
    assert [(s["item_id"], s["by"]) for s in superseded] == [
        (written[n]["item_id"], written[n + 1]["item_id"]) for n in range(tasks - 1)
    ]
    kept = results / "vb1" / "_builtin" / SPANS / "auto-memory" / title
    assert kept.read_text() == versions[-1]  # the folder the next task would start from
    return written


def the_next_task_read_it(first_requests: list[Any], note: str) -> None:
    """The CLI loaded the carried memory file: the first model request of task 2 holds
    task 1's `note`, task 1's did not."""
    assert note in json.dumps(first_requests[1]) and note not in json.dumps(first_requests[0])


def a_plugin_run_recalled_and_was_graded(results: Path, cache: Path, agent: str, model: str, *, turns: int,
                                         tools: list[str], patch_line: str, final_message: str,
                                         priced: bool = False) -> None:
    """A finished plugin run of `agent` on at least two tasks: each completed in `turns`
    model calls with these `tools`, recalled through the real MCP server (the recall
    events of the run's own ledger, later tasks finding what earlier ones left), had its
    patch graded (run against the tests, not excused), and task 1 shows `patch_line` and
    `final_message`; `priced`: the CLI reports a cost, which `swecl show` shows."""
    (run,) = swecl_json(results, "runs", cache=cache)
    assert (run["agent"], run["status"]) == (agent, "finished")
    agents = [p for _, _, _, p in events(results, "agent.finished")]
    tasks = len(agents)
    assert tasks >= 2 and {a["exit"] for a in agents} == {"completed"}, [a.get("error") for a in agents]
    recalls = [p for _, _, _, p in events(results, "memory.recalled")]
    assert len(recalls) == tasks and {r["via"] for r in recalls} == {"mcp"}
    assert sorted(r["order"] for r in recalls) == sorted(a["order"] for a in agents)
    assert any(r["results"] for r in recalls)  # later tasks find what the daydream wrote
    assert all(a["turns"] == turns and (a["cost_usd"] > 0 if priced else a["cost_usd"] is None)
               and a["tokens"]["input"] > 0 for a in agents)
    assert all([c["name"] for c in a["tool_calls"]] == tools for a in agents)
    assert all(a["transcript"] and a["session_id"] and a["model"] == model for a in agents)
    grades = [p for _, _, _, p in events(results, "grade.finished")]
    assert len(grades) == tasks and not {g["status"] for g in grades} & {"empty_patch", "agent_error", "infra_error"}
    shown = swecl_json(results, "show", run["version"], "1", cache=cache)
    assert patch_line in shown["patch"]
    assert shown["final_message"] == final_message

def as_of(results: Path, order: int) -> tuple[Any, ...]:
    """Run 1 before initial task `order` started: its cells, both formula sets' metrics, its
    leakage, and the replayed substrate's items with their recall counts."""
    from projections import Results, outcomes, replay_state
    from projections.audit import leakage_of
    from projections.metrics import FORMULAS, compute

    res = Results(results)
    with res.open_ledger(readonly=True) as ledger:
        state = outcomes(ledger, res.projector(ledger), "1", as_of_order=order)
        cells = {(s, p, o): (c.instance_id, c.status, c.resolved, c.done)
                 for s, seq in state.sequences.items() for p, cs in seq.passes.items() for o, c in cs.items()}
        inputs = state.to_metric_inputs()
        metrics = {name: compute(inputs, name) for name in sorted(FORMULAS)}
        replayed = replay_state(ledger, "1", order)
        items = {i: (item.status, item.recall_count) for i, item in replayed.memory.items.items()}
        return cells, repr(metrics), leakage_of(ledger, "1", order), items, repr(replayed.metrics)


def recalled_lessons(recall: Any) -> list[Any]:
    """The lines of an audited server recall (`ProviderRecall`) that are swecl lessons, each
    checked to be attributed to the task whose lesson it is."""
    lessons = [line for line in recall.lines if line.text.startswith("swecl-lesson ")]
    assert all(json.loads(line.text.split(" ", 1)[1])["instance_id"] == line.instance_id for line in lessons)
    return lessons
