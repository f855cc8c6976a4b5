"""`swecl run --repeat K` and the grouped views (`--group` on metrics, compare and report)
through the real CLI: a real demo sequence run twice per stage is recorded as one group per
stage and shown with n=2 and intervals; on crafted groups whose runs differ the numbers
match scipy and `swecl metrics --json`; bad input is one line; every new option has help
text and is in its command's section of docs/commands.md."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.stats

from bench.ledgers import LedgerBuilder
from bench.processes import SPANS
from ledger import Ledger
from ledger.events import RunStarted, TaskRef
from projections.compare import stratified_exact_p
from tests.cli.test_compare_cli import ok, run_cli
from tests.inprocess import swecl
from tests.run.support import first_of

# The spans sequence's first three tasks: repeats are grouped the same over any tasks,
# and each task is a graded pytest run, in every repeat.
FIRST3 = first_of(3, SPANS)

COMMANDS = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text()

SEQ = "django__django"
PLAN = {SEQ: [TaskRef(f"django__django-{11000 + k}", k, "django/django", 1 + k % 4) for k in range(1, 9)]}
# Runs 1-3: one `--repeat 3` of base; 4-5: one `--repeat 2` of plugin-blank; 6: base started alone.
BASE = {"1": [1, 0, 0, 1, 0, 0, 1, 0], "2": [1, 0, 1, 1, 0, 0, 0, 0], "3": [0, 0, 0, 1, 0, 1, 1, 0]}
BLANK = {"4": ([1, 1, 0, 1, 1, 1, 1, 0], [1, 1, 0, 1, 0, 1, 1, 0], [1, 0, 0, 1, 0, 0, 1, 0]),
         "5": ([1, 1, 1, 1, 0, 1, 0, 1], [1, 1, 1, 0, 0, 1, 0, 1], [0, 0, 1, 1, 0, 1, 0, 0])}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repeat") / "results"
    root.mkdir()
    b = LedgerBuilder(Ledger.open(root / "ledger.db", create=True))
    try:
        for k, (version, initial) in enumerate(BASE.items(), start=1):
            b.start_run(version, stage="base", plan=PLAN, repeat_group="1", repeat_index=k, repeat_count=3)
            b.run_pass(version, SEQ, "initial", initial)
            b.finish_run(version)
        for k, (version, (initial, retest, baseline)) in enumerate(BLANK.items(), start=1):
            b.start_run(version, stage="plugin-blank", plan=PLAN, repeat_group="4", repeat_index=k, repeat_count=2)
            b.run_pass(version, SEQ, "initial", initial)
            b.run_pass(version, SEQ, "retest", retest)
            b.run_pass(version, SEQ, "baseline", baseline)
            b.finish_run(version)
        b.start_run("6", stage="base", plan=PLAN)
        b.run_pass("6", SEQ, "initial", [1] * 8)
        b.finish_run("6")
    finally:
        b.close()
    return root


def test_metrics_group_is_mean_and_t_interval_of_the_runs_metrics(root: Path) -> None:
    per_run = json.loads(ok(root, "metrics", "--json"))["versions"]
    doc = json.loads(ok(root, "metrics", "--group", "--json"))
    groups = {g["label"]: g for g in doc["groups"]}
    assert list(groups) == ["base ×3 (v1, v2, v3)", "plugin-blank ×2 (v4, v5)", "v6 base"]
    for label, versions in (("base ×3 (v1, v2, v3)", ["1", "2", "3"]), ("plugin-blank ×2 (v4, v5)", ["4", "5"])):
        group = groups[label]
        assert group["versions"] == versions and group["recorded"] and group["n"] == len(versions)
        runs = [v for v in per_run if v["version"] in versions]
        for metric in ("ACC", "AULC", "CL-P"):
            values = [v["macro"][metric] for v in runs]
            got = group["macro"][metric]
            sem = scipy.stats.sem(values)
            # scipy gives nan for a zero scale; identical repeats make a zero-width interval.
            low, high = (scipy.stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=sem) if sem > 0
                         else (np.mean(values), np.mean(values)))
            assert got["n"] == len(values) and got["values"] == values
            assert got["mean"] == pytest.approx(np.mean(values), rel=1e-12)
            assert got["sd"] == pytest.approx(np.std(values, ddof=1), rel=1e-12)
            assert got["ci"] == pytest.approx([low, high], rel=1e-9, abs=1e-12)
        rates = [v["resolved"][SEQ]["resolved"] / v["resolved"][SEQ]["tasks"] for v in runs]
        assert group["sequences"][SEQ]["metrics"]["resolved_rate"]["mean"] == pytest.approx(np.mean(rates))
    # base measured no re-test: F is n/a with the reason, not an average of conventions.
    assert groups["base ×3 (v1, v2, v3)"]["macro"]["F"]["na"] == "not measured (no re-test pass)"
    # One run: a mean and no interval, and it says so.
    single = groups["v6 base"]["macro"]["ACC"]
    assert (single["n"], single["mean"], single["ci"]) == (1, 1.0, None) and single["na"].startswith("n=1")


def test_metrics_group_table_fits_100_columns_and_shows_n(root: Path) -> None:
    out = ok(root, "metrics", "--group")
    assert max(len(line) for line in out.splitlines()) <= 100, out
    macro = [line.split() for line in out.splitlines() if line.strip().startswith("macro")]
    assert [m[1] for m in macro] == ["3", "2", "1"]
    assert "±" in out and "n=1: one run, no interval" in out
    # --version V shows V's whole group.
    assert json.loads(ok(root, "metrics", "--group", "--version", "v2", "--json"))["groups"][0]["versions"] == ["1", "2", "3"]


def test_compare_group_averages_repeats_and_resamples_tasks(root: Path) -> None:
    doc = json.loads(ok(root, "compare", "--group", "2", "5", "--json"))
    assert (doc["a"]["runs"], doc["b"]["runs"]) == (["1", "2", "3"], ["4", "5"])
    assert doc["a"]["label"] == "base ×3 (v1, v2, v3)"
    flags_a = np.array(list(BASE.values()), dtype=float)
    flags_b = np.array([v[0] for v in BLANK.values()], dtype=float)
    rate = doc["macro"]["metrics"]["resolved_rate"]
    assert rate["a"] == pytest.approx(flags_a.mean()) and rate["b"] == pytest.approx(flags_b.mean())
    expected = scipy.stats.bootstrap(
        (flags_a.mean(axis=0), flags_b.mean(axis=0)), lambda x, y, axis=-1: y.mean(axis=axis) - x.mean(axis=axis),
        paired=True, vectorized=True, method="percentile", n_resamples=10_000, rng=np.random.default_rng(0),
    ).confidence_interval
    assert rate["ci"] == pytest.approx([expected.low, expected.high], abs=1e-12)
    test = doc["macro"]["mcnemar"]
    assert test["test"] == "stratified-exact"
    assert test["p_value"] == pytest.approx(stratified_exact_p(
        [int(c) for c in flags_a.sum(axis=0)], 3, [int(c) for c in flags_b.sum(axis=0)], 2), rel=1e-12)
    # Each side's ACC is the mean of its runs' `swecl metrics` ACC.
    per_run = {v["version"]: v for v in json.loads(ok(root, "metrics", "--json"))["versions"]}
    acc = doc["macro"]["metrics"]["ACC"]
    assert acc["a"] == pytest.approx(np.mean([per_run[v]["macro"]["ACC"] for v in ("1", "2", "3")]))
    assert acc["b"] == pytest.approx(np.mean([per_run[v]["macro"]["ACC"] for v in ("4", "5")]))
    table = ok(root, "compare", "--group", "v1", "v4")
    assert max(len(line) for line in table.splitlines()) <= 100, table
    assert "A: 1, 2, 3; B: 4, 5" in table


def test_report_group_compares_groups_and_shows_each_group(root: Path, tmp_path: Path) -> None:
    ok(root, "report", "--group", "--out", str(tmp_path / "r"))
    page = (tmp_path / "r" / "index.html").read_text()
    compare = page[page.index('<section id="compare">'):page.index("</section>", page.index('<section id="compare">'))]
    # The control is the first memory-off group (base ×3), against the plugin-blank group.
    assert "A = base ×3 (v1, v2, v3), B = plugin-blank ×2 (v4, v5)" in compare
    assert re.search(r"Macro resolved rate: B − A = \+0\.\d\d \[-?\d\.\d\d, \d\.\d\d\], exact stratified test p = ",
                     compare)
    assert 'data-compare="plugin-blank ×2 (v4, v5)" data-row="macro"' in compare
    assert 'data-group="1" data-row="macro"' in page and 'data-n="3"' in page
    # Without --group, each run is compared with the control run, McNemar named.
    ok(root, "report", "--out", str(tmp_path / "s"))
    single = (tmp_path / "s" / "index.html").read_text()
    assert "A = base v1, B = plugin-blank v4" in single and "McNemar p = " in single
    assert 'id="groups"' not in single


@pytest.mark.parametrize(("args", "said"), [
    (("compare", "--group", "1", "3"), "1 and 3 are repeats of one group (1, 2, 3): --group compares two groups"),
    (("compare", "--group", "1", "99"), "no run version '99'"),
    (("metrics", "--group", "--csv", "-"), "--group prints a table or --json"),
    (("run", "--stage", "base", "--repeat", "2", "--version", "x"), "--version names one run; --repeat 2 makes 2"),
    (("run", "--resume", "1", "--repeat", "2"), "--resume continues one run; --repeat starts new ones"),
])
def test_bad_input_is_one_line(root: Path, args: tuple[str, ...], said: str) -> None:
    proc = run_cli(root, *args)
    assert proc.returncode != 0 and said in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_repeat_must_be_a_positive_count(root: Path) -> None:
    proc = run_cli(root, "run", "--stage", "base", "--repeat", "0")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--repeat" in proc.stderr


def test_a_ledger_from_before_repeats_still_reads() -> None:
    """A run.started payload written before the repeat fields existed decodes with them None,
    at the same schema number (no upcaster: the fields have defaults)."""
    import msgspec

    from ledger._codec import decode_payload

    old = {"type": "run.started", "version": "1", "benchmark": "demo", "dataset_hash": "h", "sequences": ["s"],
           "stage": "base", "memory_mode": "off", "agent": "demo"}
    event = decode_payload("run.started", RunStarted.SCHEMA, msgspec.json.encode(old))
    assert isinstance(event, RunStarted)
    assert (event.repeat_group, event.repeat_index, event.repeat_count) == (None, None, None)


# --- the new options: help text and the command reference -------------------------------------

NEW_OPTIONS = [("run", "--repeat"), ("metrics", "--group"), ("compare", "--group"), ("report", "--group")]


def _section(command: str) -> str:
    return COMMANDS.split(f"### swecl {command}\n", 1)[1].split("\n### ", 1)[0]


@pytest.mark.parametrize(("command", "option"), NEW_OPTIONS)
def test_every_new_option_has_help_and_is_in_its_reference_section(command: str, option: str) -> None:
    from tests.cli.test_docs import command_of

    cmd = command_of(f"swecl {command}")
    param = next(p for p in cmd.params if option in getattr(p, "opts", ()))
    assert (getattr(param, "help", "") or "").strip(), f"swecl {command} {option} has no help text"
    assert f"`{option}" in _section(command), f"docs/commands.md's `swecl {command}` section does not document {option}"


# --- end to end: a real demo sequence, repeated ------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """The demo's spans sequence (its first three tasks), base twice (v1, v2) and
    plugin-blank twice (v3, v4)."""
    results = tmp_path_factory.mktemp("repeat-demo")
    swecl(results, "run", "--stage", "base", "--sequence", SPANS, *FIRST3, "--repeat", "2", "--quiet", cache=cache)
    swecl(results, "run", "--stage", "plugin-blank", "--sequence", SPANS, *FIRST3, "--repeat", "2", "--quiet",
          cache=cache)
    return results


def _started(results: Path) -> dict[str, RunStarted]:
    with Ledger.open(results / "ledger.db", readonly=True) as ledger:
        return {rec.event.version: rec.event for rec in ledger.read(types=["run.started"])}


@pytest.mark.slow
def test_repeat_2_on_a_real_demo_sequence_is_grouped_with_n_2(demo: Path, cache: Path) -> None:
    started = _started(demo)
    assert {v: (e.stage, e.repeat_group, e.repeat_index, e.repeat_count) for v, e in started.items()} == {
        "1": ("base", "1", 1, 2), "2": ("base", "1", 2, 2),
        "3": ("plugin-blank", "3", 1, 2), "4": ("plugin-blank", "3", 2, 2),
    }
    doc: dict[str, Any] = json.loads(swecl(demo, "metrics", "--group", "--json", cache=cache).stdout)
    assert [(g["label"], g["n"]) for g in doc["groups"]] == [("base ×2 (v1, v2)", 2), ("plugin-blank ×2 (v3, v4)", 2)]
    for group in doc["groups"]:
        for metric in ("resolved_rate", "ACC"):
            value = group["macro"][metric]
            assert value["n"] == 2 and value["ci"] is not None and value["ci"][0] <= value["mean"] <= value["ci"][1]
    table = swecl(demo, "metrics", "--group", cache=cache, env={"COLUMNS": "100"}).stdout
    assert "base ×2" in table and max(len(line) for line in table.splitlines()) <= 100
    compared = json.loads(swecl(demo, "compare", "--group", "1", "3", "--json", cache=cache).stdout)
    assert (compared["a"]["runs"], compared["b"]["runs"]) == (["1", "2"], ["3", "4"])
    rate = compared["macro"]["metrics"]["resolved_rate"]
    assert rate["ci"] is not None and rate["ci"][0] <= rate["diff"] <= rate["ci"][1]
    out = demo / "report"
    swecl(demo, "report", "--group", "--out", str(out), cache=cache)
    page = (out / "index.html").read_text()
    assert "A = base ×2 (v1, v2), B = plugin-blank ×2 (v3, v4)" in page
    assert page.count('data-n="2"') >= 2 and 'data-low="' in page


@pytest.mark.slow
def test_the_run_summary_shows_the_groups(tmp_path: Path, cache: Path) -> None:
    done = swecl(tmp_path, "run", "--stage", "base", "--sequence", SPANS, *FIRST3, "--repeat", "2", "--quiet", "--json",
                 cache=cache)
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["event"] == "summary" and [v["version"] for v in summary["versions"]] == ["1", "2"]
    assert summary["grouped"]["groups"][0]["versions"] == ["1", "2"]
    assert summary["grouped"]["groups"][0]["macro"]["ACC"]["n"] == 2
