"""The two reference memory arms (issue 67): `oracle` (the memory written from each task's
gold patch, through the memory's own write path) and `full-history` (no recall; the earlier
tasks' own patches and outcomes in each prompt).

Real parts: the real `swecl run` on the demo textkit sequence's first four tasks (#30
brings #11's bug back, so a fix carried from #11 resolves it) with the demo agent, the
grader's pytest runs, real ledgers, git; the reference knowledge-graph memory server from
npm for the oracle's server arm.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from commands.inputs import demo_benchmark, find_sequence
from ledger import Ledger
from ledger.patches import is_test_path, patch_paths
from tests.agents.conftest import server_memory_bin  # noqa: F401  (the session fixture: npm-installed server)

from .support import TEXTKIT, events, first_of, first_tasks, swecl

TASKS = 4
FIRST = first_of(TASKS, TEXTKIT)
IDS = first_tasks(TEXTKIT, TASKS)
SMALL_BUDGET = 300  # tokens: the frame and one or two of these entries


def _of(results: Path, version: str, type_: str) -> list[dict[str, Any]]:
    return [p for _, stream, _, p in events(results, type_) if stream.startswith(f"run/{version}/")]


def _blob(results: Path, digest: str) -> str:
    with Ledger.open(results / "ledger.db", readonly=True) as led:
        return led.get_blob(digest).decode()


def _resolved(results: Path, version: str, pass_: str = "initial") -> dict[str, bool]:
    return {p["instance_id"]: bool(p["resolved"]) for p in _of(results, version, "task.finished") if p["pass"] == pass_}


def _gold() -> dict[str, Any]:
    return {t.instance_id: t for t in find_sequence(demo_benchmark(materialise=False), TEXTKIT).tasks[:TASKS]}


@pytest.fixture(scope="module")
def arms(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """One ledger: base, oracle, full-history (serial and --task-jobs 2, initial and
    re-test) and full-history with a small budget, each its own version."""
    results = tmp_path_factory.mktemp("arms")
    common = ("--sequence", TEXTKIT, *FIRST, "--quiet")
    swecl(results, "run", "--stage", "base", "--version", "b", *common, "--passes", "initial", cache=cache)
    swecl(results, "run", "--stage", "oracle", "--version", "o", *common, "--passes", "initial", cache=cache)
    for version, jobs in (("h", "1"), ("hj", "2")):
        swecl(results, "run", "--stage", "full-history", "--version", version, *common, "--passes", "initial,retest",
              "--task-jobs", jobs, cache=cache)
    swecl(results, "run", "--stage", "full-history", "--version", "hs", *common, "--passes", "initial",
          "--history-tokens", str(SMALL_BUDGET), cache=cache)
    swecl(results, "run", "--fork", "h@3", "--version", "hf", "--passes", "initial", "--quiet", cache=cache)
    return results


# -- oracle ---------------------------------------------------------------------------------


def test_the_oracle_writes_what_each_gold_patch_teaches(arms: Path) -> None:
    gold = _gold()
    written = _of(arms, "o", "memory.written")
    # One lesson per initial-pass task, labelled as the oracle's, all resolved.
    assert [w["source_instance"] for w in written] == IDS
    assert {w["extractor"] for w in written} == {"oracle-gold"} and {w["outcome"] for w in written} == {"resolved"}
    for item in written:
        task = gold[item["source_instance"]]
        assert item["files"] == sorted({p for p in patch_paths(task.patch) if not is_test_path(p)})
        assert patch_paths(_blob(arms, item["patch"])) == patch_paths(task.patch)
        # Nothing of the test patch in what was written.
        added = [line[1:].strip() for line in task.test_patch.splitlines()
                 if line.startswith("+") and not line.startswith("+++") and len(line[1:].strip()) >= 24]
        assert added
        text = item["title"] + item["body"] + _blob(arms, item["patch"]) + " ".join(item["tags"])
        assert not [line for line in added if line in text]
    assert not _of(arms, "o", "memory.rejected")
    (started,) = _of(arms, "o", "run.started") or [p for _, s, _, p in events(arms, "run.started") if s == "run/o"]
    assert started["memory_mode"] == "oracle"


def test_a_later_task_recalls_the_gold_lesson_and_the_oracle_beats_base(arms: Path) -> None:
    written = {w["source_instance"]: w["item_id"] for w in _of(arms, "o", "memory.written")}
    recalls = {r["instance_id"]: [h["item_id"] for h in r["results"]] for r in _of(arms, "o", "memory.recalled")}
    assert recalls[IDS[0]] == []  # a task never sees its own fix
    assert written[IDS[0]] in recalls[IDS[3]]  # #30 recalls #11's gold lesson
    assert written[IDS[3]] not in recalls[IDS[3]]
    oracle, base = _resolved(arms, "o"), _resolved(arms, "b")
    assert sum(oracle.values()) >= sum(base.values())
    assert oracle[IDS[3]] and not base[IDS[3]]


# -- full-history ---------------------------------------------------------------------------


def _histories(results: Path, version: str, pass_: str = "initial") -> dict[str, dict[str, Any]]:
    return {h["instance_id"]: h for h in _of(results, version, "memory.history") if h["pass"] == pass_}


def test_full_history_gives_the_earlier_tasks_most_recent_first(arms: Path) -> None:
    for pass_ in ("initial", "retest"):
        given = _histories(arms, "h", pass_)
        assert set(given) == set(IDS)
        for k, iid in enumerate(IDS):
            h = given[iid]
            assert h["entries"] == list(reversed(IDS[:k])) and h["dropped"] == 0 and h["budget"] == 8000
            if k == 0:
                assert h["text"] is None and h["tokens"] == 0
                continue
            text = _blob(arms, h["text"])
            assert text.startswith("<earlier_tasks>") and h["tokens"] == (len(text) + 3) // 4
            assert iid not in text  # never its own patch
    # The prompt-less demo agent reuses #11's own patch, which resolved, at #30.
    assert _resolved(arms, "h")[IDS[3]] and not _resolved(arms, "b")[IDS[3]]
    (finished,) = [p for p in _of(arms, "h", "agent.finished") if p["instance_id"] == IDS[3] and p["pass"] == "initial"]
    assert f"earlier task {IDS[0]}" in _blob(arms, finished["transcript"])
    assert not _of(arms, "h", "memory.recalled") and not _of(arms, "h", "memory.written")


def test_show_lists_the_earlier_tasks_a_prompt_carried(arms: Path, cache: Path) -> None:
    out = swecl(arms, "show", "h", IDS[3], cache=cache).stdout
    listed = out.split("== recalled memory", 1)[1].split("\n", 1)[1].split("\n== ", 1)[0]
    assert "the prompt carried 3 earlier task(s)" in listed and "(full-history)" in listed
    assert [line.strip() for line in listed.splitlines() if line.startswith("  ")] == list(reversed(IDS[:3]))


def test_a_small_budget_leaves_older_tasks_out_and_counts_them(arms: Path) -> None:
    given = _histories(arms, "hs")
    assert [len(given[i]["entries"]) + given[i]["dropped"] for i in IDS] == list(range(TASKS))
    assert sum(h["dropped"] for h in given.values()) > 0
    for k, iid in enumerate(IDS):
        h = given[iid]
        assert h["budget"] == SMALL_BUDGET and h["tokens"] <= SMALL_BUDGET
        order = list(reversed(IDS[:k]))
        assert h["entries"] == [e for e in order if e in h["entries"]]  # most recent first, a subsequence
    (started,) = [p for _, s, _, p in events(arms, "run.started") if s == "run/hs"]
    assert started["config"]["history_tokens"] == SMALL_BUDGET and started["memory_mode"] == "history"


def test_task_jobs_give_the_same_histories_as_a_serial_run(arms: Path) -> None:
    def entries(version: str) -> list[tuple[str, int, list[str], int]]:
        return sorted((h["pass"], h["order"], h["entries"], h["tokens"]) for h in _of(arms, version, "memory.history"))

    assert entries("hj") == entries("h")
    assert _resolved(arms, "hj", "retest") == _resolved(arms, "h", "retest")


def test_a_fork_gives_its_tasks_the_sources_history(arms: Path) -> None:
    """A fork's history splices the source's tasks before K (`read_run`), so task K's
    prompt is the source's."""
    fork, source = _histories(arms, "hf"), _histories(arms, "h")
    assert set(fork) == set(IDS[2:])
    assert all((fork[i]["entries"], fork[i]["text"]) == (source[i]["entries"], source[i]["text"]) for i in IDS[2:])


def test_the_prompt_carries_the_history_before_the_issue(tmp_path: Path) -> None:
    from agents import AgentInput, HistoryEntry, TaskHistory
    from agents._claude import build_prompt
    from agents._command import issue_text

    history = TaskHistory(entries=(HistoryEntry("i-1", 1, "t", "", "resolved"),),
                          text="<earlier_tasks>\nx\n</earlier_tasks>\n")
    for style in ("plain", "recall", "natural"):
        inp = AgentInput(instance_id="i-2", repo="o/r", issue="the bug", worktree=tmp_path, scratch_dir=tmp_path,
                         prompt_style=style, history=history)  # type: ignore[arg-type]
        prompt = build_prompt(inp)
        assert prompt.index("<earlier_tasks>") < prompt.index("<issue>")
        assert issue_text(inp).startswith("<earlier_tasks>") and issue_text(inp).endswith("the bug")
    bare = AgentInput(instance_id="i-2", repo="o/r", issue="the bug", worktree=tmp_path, scratch_dir=tmp_path)
    assert "<earlier_tasks>" not in build_prompt(bare) and issue_text(bare) == "the bug"


# -- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "says"), [
    (("--stage", "plugin-blank", "--history-tokens", "100"), "--history-tokens is for the full-history stage"),
    (("--stage", "full-history", "--memory-server", "srv"), "--memory-server is for the memory stages"),
    (("--stage", "full-history", "--history-tokens", "0"), "--history-tokens 0: give a positive number"),
])
def test_misplaced_options_are_refused_in_one_line(tmp_path: Path, cache: Path, args: tuple[str, ...],
                                                   says: str) -> None:
    done = swecl(tmp_path / "r", "run", *args, "--sequence", TEXTKIT, cache=cache, check=False)
    assert done.returncode != 0 and says in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "r" / "ledger.db").exists() or not events(tmp_path / "r", "run.started")


def test_counterfactual_refuses_a_full_history_run_in_one_line(arms: Path, cache: Path) -> None:
    done = swecl(arms, "counterfactual", "h", IDS[3], "--without", "x", cache=cache, check=False)
    assert done.returncode != 0 and "full-history run" in done.stderr and done.stderr.count("\n") == 1


# -- the oracle with a user's memory server ---------------------------------------------------


def test_the_oracle_server_arm_writes_the_gold_patch(tmp_path: Path, cache: Path, server_memory_bin: str) -> None:
    results = tmp_path / "server"
    server = ("--memory-server", server_memory_bin, "--memory-env", "MEMORY_FILE_PATH={data}/memory.jsonl",
              "--memory-recall-tool", "search_nodes", "--memory-recall-args", '{"query": "{repo}"}',
              "--memory-write-tool", "create_entities")
    plan = ("--sequence", TEXTKIT, *first_of(3, TEXTKIT), "--passes", "initial", "--quiet")
    swecl(results, "run", "--stage", "oracle", *plan, *server, cache=cache, timeout=600)
    gold = _gold()
    writes = [c for c in _of(results, "1", "memory.provider.called") if c["via"] == "write"]
    assert [w["instance_id"] for w in writes] == IDS[:3]
    for call in writes:
        (entity,) = json.loads(_blob(results, call["arguments"]))["entities"]
        (lesson,) = [o for o in entity["observations"] if o.startswith("swecl-lesson ")]
        record = json.loads(lesson.removeprefix("swecl-lesson "))
        task = gold[call["instance_id"]]
        assert record["outcome"] == "resolved" and "outcome resolved" in entity["observations"]
        assert record["files"] == [p for p in patch_paths(task.patch) if not is_test_path(p)]
        assert patch_paths(record["patch"]) == patch_paths(task.patch)
    # #23's own attempt does not resolve it; the server was told what the real fix was.
    assert not _resolved(results, "1")[IDS[2]]
    (started,) = [p for _, s, _, p in events(results, "run.started")]
    assert started["memory_mode"] == "oracle"

    # The server as the memory under test, scored against its own oracle arm (run 1), with a
    # substrate oracle beside it (run 4) that a server run's efficiency must not take.
    swecl(results, "run", "--stage", "base", *plan, cache=cache)
    swecl(results, "run", "--stage", "plugin-blank", *plan, *server, cache=cache, timeout=600)
    swecl(results, "run", "--stage", "oracle", *plan, cache=cache)
    doc = json.loads(swecl(results, "metrics", "--version", "3", "--json", cache=cache).stdout)
    (seq,) = doc["versions"][0]["memory_efficiency"]["sequences"].values()
    assert (seq["base_version"], seq["oracle_version"]) == ("2", "1")
    funnel = json.loads(swecl(results, "funnel", "3", "--json", cache=cache).stdout)
    assert funnel["na"] is None and funnel["memory"].startswith("server ")
