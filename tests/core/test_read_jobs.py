"""The read jobs of `commands.Experiment`, called in-process: each document is what the
CLI prints for the same ledger (`--json` byte for byte where the command has it), and a
user's mistake is the same one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from bench.ledgers import LedgerBuilder
from commands import Experiment
from ledger import Ledger, SweclError
from ledger.events import TaskRef
from projections import event_record
from tests.inprocess import swecl
from tests.run.support import events
from tests.shared_runs import demo_run_copy

pytestmark = pytest.mark.slow  # the shared demo run (built once per session)


def encoded(doc: Any) -> str:
    """A document as `swecl ... --json` prints it (`echo_json`)."""
    return msgspec.json.encode(doc).decode() + "\n"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """A copy of the session's plugin-blank run of the textkit sequence (version 1)."""
    return demo_run_copy(tmp_path_factory, cache, "blank-textkit")


def cli(results: Path, cache: Path, *args: str) -> str:
    return swecl(results, *args, cache=cache).stdout


def an_attempt(results: Path) -> tuple[str, str]:
    """(version, instance_id) of an initial-pass attempt that did not resolve."""
    for _, _, _, p in events(results, "grade.finished"):
        if p["pass"] == "initial" and p["status"] == "unresolved":
            return "1", p["instance_id"]  # the demo run is version 1
    raise AssertionError("the demo run resolved every task: nothing unresolved to show")


def test_runs_is_swecl_runs_json(demo: Path, cache: Path) -> None:
    listing = Experiment(demo).runs()
    assert encoded(listing.document()) == cli(demo, cache, "runs", "--json")
    assert [row["version"] for row in listing.rows] == ["1"]


@pytest.mark.parametrize("args, kwargs", [
    ((), {}),
    (("--version", "1", "--as-of-order", "3"), {"versions": ["1"], "as_of_order": 3}),
    (("--formula", "eval-v1", "--lambda", "acc=2", "--all"),
     {"formula": "eval-v1", "lambdas": "acc=2", "include_failed": True}),
])
def test_metrics_document_is_swecl_metrics_json(demo: Path, cache: Path, args: tuple[str, ...],
                                                kwargs: dict[str, Any]) -> None:
    from commands.cli._common import parse_lambdas

    if "lambdas" in kwargs:
        kwargs = {**kwargs, "lambdas": parse_lambdas((kwargs["lambdas"],))}
    result = Experiment(demo).metrics(**kwargs)
    assert [vm.run.version for vm in result.found] == ["1"]
    assert result.leakage["1"] is not None and result.integrity["1"] is not None  # the audit, shown
    assert encoded(result.document()) == cli(demo, cache, "metrics", *args, "--json")


def test_metrics_tables_are_what_csv_writes(demo: Path, cache: Path, tmp_path: Path) -> None:
    exp = Experiment(demo)
    result = exp.metrics(audit=False)
    assert result.leakage == {} and result.integrity == {}
    assert result.csv() == cli(demo, cache, "metrics", "--csv", "-")
    exp.write_metrics_tables(result, csv=tmp_path / "m.csv", parquet=tmp_path / "m.parquet")
    assert (tmp_path / "m.csv").read_text() == result.csv()
    assert (tmp_path / "m.parquet").read_bytes()[:4] == b"PAR1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.csv", "m.parquet"]  # no temporary left


def test_show_is_swecl_show_json_and_writes_the_same_files(demo: Path, cache: Path, tmp_path: Path) -> None:
    version, task = an_attempt(demo)
    shown = Experiment(demo).show(version, task)
    assert shown.written == [] and shown.shown.resolved is False
    assert encoded(shown.document()) == cli(demo, cache, "show", version, task, "--json")
    written = Experiment(demo).show(version, task, files_dir=tmp_path / "a")
    cli(demo, cache, "show", version, task, "--files", str(tmp_path / "b"))
    assert written.written and {p.name for p in written.written} == {p.name for p in (tmp_path / "b").iterdir()}
    for path in written.written:
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes()


def test_show_task_is_swecl_show_task_json(cache: Path, tmp_path: Path) -> None:
    shown = Experiment(tmp_path / "none").show_task("swecl-demo__textkit-11")
    assert json.loads(encoded(shown.document())) == json.loads(cli(tmp_path / "none", cache, "show", "swecl-demo__textkit-11", "--json"))
    assert not (tmp_path / "none").exists()  # a benchmark task reads no results folder


@pytest.mark.parametrize("summary", [True, False])
def test_audit_is_swecl_audit_json(demo: Path, cache: Path, summary: bool) -> None:
    version, task = an_attempt(demo)
    exp = Experiment(demo)
    if summary:
        result, args = exp.audit(version, summary=True), ("--summary",)
    else:
        result, args = exp.audit(version, task, no_dataset=True), (task, "--no-dataset")
    printed = cli(demo, cache, "audit", version, *args, "--json")
    assert encoded(result.audit) == printed
    assert result.document() == json.loads(printed)


def test_log_and_verify_are_what_the_cli_prints(demo: Path, cache: Path) -> None:
    exp = Experiment(demo)
    records = [event_record(rec) for rec in exp.log(types=["run.started", "run.finished"])]
    lines = cli(demo, cache, "log", "--type", "run.started", "--type", "run.finished", "--json").splitlines()
    assert [r["type"] for r in records] == ["run.started", "run.finished"]
    assert [json.loads(line) for line in lines] == json.loads(json.dumps(records))
    checked = exp.verify()
    assert checked.ok and checked.events == len(events(demo))
    assert cli(demo, cache, "verify") == (f"ledger OK: {checked.events} events, {checked.blobs} blobs, "
                                          f"head hash {checked.head_hash}\n")


def test_a_bad_log_filter_is_refused_before_any_event(demo: Path, cache: Path) -> None:
    with pytest.raises(SweclError, match=r"^--type 'run.strated': no such event type; did you mean 'run.started'"):
        next(Experiment(demo).log(types=["run.strated"]))
    with pytest.raises(SweclError, match=r"^--stream 'rnu/1': no such stream in "):
        next(Experiment(demo).log(streams=["rnu/1"]))


def test_init_then_an_empty_ledger_has_no_metrics(tmp_path: Path, cache: Path) -> None:
    exp = Experiment(tmp_path / "results")
    made = exp.init()
    assert made.created and made.events == 0 and made.path == exp.ledger_path
    again = exp.init()
    assert not again.created and again.events == made.events
    assert exp.runs().document() == []
    with pytest.raises(SweclError) as raised:
        exp.metrics()
    proc = swecl(exp.root, "metrics", cache=cache, check=False)
    assert proc.returncode == raised.value.exit_code and proc.stderr == f"swecl: error: {raised.value}\n"
    assert str(raised.value) == f"no runs in {exp.ledger_path} yet: start one with `swecl run`"


def test_verify_refuses_a_file_that_is_no_ledger_as_the_cli_does(tmp_path: Path, cache: Path) -> None:
    exp = Experiment(tmp_path / "results")
    exp.init()
    exp.ledger_path.write_bytes(b"not a database, " * 512)
    with pytest.raises(SweclError) as raised:
        exp.verify()
    proc = swecl(exp.root, "verify", cache=cache, check=False)
    assert proc.returncode == raised.value.exit_code and proc.stderr == f"swecl: error: {raised.value}\n"


# --- compare and the grouped views, over crafted runs (two groups of repeats) ----------

SEQ = "django__django"
PLAN = {SEQ: [TaskRef(f"django__django-{11000 + k}", k, "django/django", 1 + k % 4) for k in range(1, 9)]}


@pytest.fixture(scope="module")
def crafted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs 1 and 2 base (initial only), 3 and 4 plugin-blank (every pass): two groups."""
    root = tmp_path_factory.mktemp("crafted") / "results"
    root.mkdir()
    b = LedgerBuilder(Ledger.open(root / "ledger.db", create=True))
    try:
        for version, initial in (("1", [1, 0, 0, 1, 0, 0, 1, 0]), ("2", [1, 0, 1, 1, 0, 0, 0, 0])):
            b.start_run(version, stage="base", plan=PLAN, passes=["initial"])
            b.run_pass(version, SEQ, "initial", initial)
            b.finish_run(version)
        for version, initial in (("3", [1, 1, 0, 1, 1, 1, 1, 0]), ("4", [1, 1, 1, 1, 0, 1, 1, 1])):
            b.start_run(version, stage="plugin-blank", plan=PLAN)
            b.run_pass(version, SEQ, "initial", initial)
            b.run_pass(version, SEQ, "retest", [v if k % 3 else 0 for k, v in enumerate(initial)])
            b.run_pass(version, SEQ, "baseline", [1, 0, 0, 1, 0, 0, 1, 0])
            b.finish_run(version)
    finally:
        b.close()
    return root


def test_compare_is_swecl_compare_json(crafted: Path, cache: Path) -> None:
    result = Experiment(crafted).compare("1", "3", resamples=500, seed=7)
    assert encoded(result.document()) == cli(crafted, cache, "compare", "1", "3", "--resamples", "500", "--seed", "7",
                                             "--json")
    grouped = Experiment(crafted).compare("1", "3", grouped=True)
    assert grouped.comparison.runs_a == ("1", "2") and grouped.comparison.runs_b == ("3", "4")
    assert encoded(grouped.document()) == cli(crafted, cache, "compare", "1", "3", "--group", "--json")


def test_compare_refuses_one_group_in_the_cli_s_words(crafted: Path, cache: Path) -> None:
    with pytest.raises(SweclError) as raised:
        Experiment(crafted).compare("3", "4", grouped=True)
    proc = swecl(crafted, "compare", "3", "4", "--group", cache=cache, check=False)
    assert proc.returncode == raised.value.exit_code and proc.stderr == f"swecl: error: {raised.value}\n"


def test_grouped_metrics_are_swecl_metrics_group_json(crafted: Path, cache: Path) -> None:
    every = Experiment(crafted).metrics(grouped=True)
    assert [g.group.versions for g in every.groups] == [("1", "2"), ("3", "4")]
    assert encoded(every.grouped_document()) == cli(crafted, cache, "metrics", "--group", "--json")
    # --version V shows V's whole group
    one = Experiment(crafted).metrics(versions=["4"], grouped=True)
    assert [vm.run.version for vm in one.found] == ["3", "4"]
    assert encoded(one.grouped_document()) == cli(crafted, cache, "metrics", "--group", "--version", "4", "--json")
    with pytest.raises(SweclError, match=r"^no run version '9' \(versions: 1, 2, 3, 4\)$"):
        Experiment(crafted).metrics(versions=["9"], grouped=True)
