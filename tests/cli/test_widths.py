"""Every table fits 100 columns, and a task has one name (issue 71, parts 3 and 4).

One real demo ledger for the module: a base run and a plugin-blank run (initial pass) of
the first four tasks of two sequences, so a task's short order is ambiguous and its
`SEQ#ORDER` is not. Each command is rendered at COLUMNS=80, 100 and 160."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.processes import INICONF, SPANS
from ledger import SweclError
from tests.inprocess import swecl
from tests.run.support import first_of

WIDTHS = (80, 100, 160)
TASKS = 4  # of each sequence: enough for recalls, four graded tasks a sequence and run


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    results = tmp_path_factory.mktemp("widths") / "results"
    tasks = ("--sequence", SPANS, "--sequence", INICONF, *first_of(TASKS, SPANS, INICONF), "--passes", "initial")
    swecl(results, "run", "--stage", "base", *tasks, "--version", "1", "--quiet", cache=cache)
    swecl(results, "run", "--stage", "plugin-blank", *tasks, "--version", "2", "--quiet", cache=cache)
    return results


COMMANDS: dict[str, tuple[str, ...]] = {
    "runs": ("runs",),
    "metrics": ("metrics",),
    "compare": ("compare", "1", "2"),
    "audit": ("audit", "2", "--summary", "--no-dataset"),
    "audit-all": ("audit", "2", "--summary", "--all", "--no-dataset"),
    "funnel": ("funnel", "2"),
    "agents": ("agents",),
    "show": ("show", "2", "spans#2", "--tail", "0"),
    "memory-servers": ("memory", "servers"),
}


def _render(results: Path, cache: Path, args: tuple[str, ...], columns: int) -> list[str]:
    out = swecl(results, *args, cache=cache, env={"COLUMNS": str(columns)}).stdout
    lines = out.splitlines()
    if args[0] == "show":  # up to the patch: the diff and the test log are the files' own lines
        lines = lines[:next(i for i, line in enumerate(lines) if line.startswith("== what the sandbox"))]
    # The verdict lines opening metrics/compare are never wrapped (tests/cli/test_metrics_honesty.py).
    return [line for line in lines if not re.match(r"v\d+ \S+ vs v\d+ ", line)]


@pytest.fixture(scope="module")
def rendered(ledger: Path, cache: Path) -> dict[tuple[str, int], list[str]]:
    return {(name, c): _render(ledger, cache, args, c) for name, args in COMMANDS.items() for c in WIDTHS}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_line_fits_100_columns_at_80_and_100(rendered: dict[tuple[str, int], list[str]], name: str) -> None:
    for columns in (80, 100):
        long = [line for line in rendered[name, columns] if len(line) > 100]
        assert not long, f"{name} at {columns} columns:\n" + "\n".join(long)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_nothing_cut_at_160_that_100_shows_whole(rendered: dict[tuple[str, int], list[str]], name: str) -> None:
    wide = "\n".join(rendered[name, 160])
    assert "…" not in wide
    words_100 = {w for line in rendered[name, 100] for w in line.split() if "…" not in w}
    for stage in ("base", "plugin-blank"):
        if stage in words_100:
            assert stage in wide.split()


@pytest.mark.parametrize("name", ["runs", "metrics", "compare", "audit", "funnel"])
def test_tables_at_80_keep_their_header_words(rendered: dict[tuple[str, int], list[str]], name: str) -> None:
    text = "\n".join(rendered[name, 80])
    assert "…" not in text
    headers = {
        "runs": ["stage", "agent", "status", "sequences", "resolved", "leaks", "cost", "from"],
        "metrics": ["run / sequence", "ACC↑", "CL-Score↑", "solved", "miss"],
        "compare": ["sequence", "metric", "B - A", "McNemar"],
        "audit": ["audit of v2"],
        "funnel": ["sequence", "tasks", "retrieved", "gaps S/R/U/N"],
    }[name]
    for word in headers:
        assert word in text, f"{word!r} broken or missing in {name} at 80 columns:\n{text}"
    if name == "runs":
        assert "plugin-blank" in text and "i=" in text


def test_audit_summary_is_a_summary_and_all_lists_every_task(rendered: dict[tuple[str, int], list[str]]) -> None:
    summary, every = rendered["audit", 100], rendered["audit-all", 100]
    assert len(summary) <= 20
    assert len(every) >= len(summary)


# -- one way to name a task ---------------------------------------------------------------


class _Ref:
    def __init__(self, instance_id: str, order: int) -> None:
        self.instance_id, self.order = instance_id, order


PLANS = {f"swecl-demo_{name}_sequence": [_Ref(f"swecl-demo__{name}-{10 * k}", k) for k in (1, 2, 3)]
         for name in ("spans", "iniconf")}


@pytest.mark.parametrize("text", ["swecl-demo__spans-20", "spans#2", "swecl-demo_spans_sequence#2",
                                  "swecl-demo_spans#2", "SPANS#2", " spans#2 "])
def test_every_form_names_the_task(text: str) -> None:
    from projections._task_names import resolve_task_name

    seq, ref = resolve_task_name(PLANS, text, where="the plan of v1")
    assert (seq, ref.instance_id) == ("swecl-demo_spans_sequence", "swecl-demo__spans-20")


def test_a_short_order_names_the_task_of_one_sequence_only() -> None:
    from projections._task_names import resolve_task_name

    one = {"swecl-demo_spans_sequence": PLANS["swecl-demo_spans_sequence"]}
    for text in ("2", "#2"):
        assert resolve_task_name(one, text, where="v1")[1].order == 2
        with pytest.raises(SweclError) as bad:
            resolve_task_name(PLANS, text, where="the plan of v1")
        assert "\n" not in str(bad.value) and "spans#2" in str(bad.value) and "iniconf#2" in str(bad.value)


@pytest.mark.parametrize(("text", "says"), [("nope#2", "no sequence 'nope'"), ("spans#9", "no task 9"),
                                            ("foo", "not in the plan of v1")])
def test_an_unknown_name_is_one_line(text: str, says: str) -> None:
    from projections._task_names import resolve_task_name

    with pytest.raises(SweclError) as bad:
        resolve_task_name(PLANS, text, where="the plan of v1")
    assert says in str(bad.value) and "\n" not in str(bad.value)


def test_an_ambiguous_sequence_lists_the_forms() -> None:
    from projections._task_names import resolve_task_name

    plans = {"a_x_sequence": PLANS["swecl-demo_spans_sequence"], "b_x_sequence": PLANS["swecl-demo_iniconf_sequence"]}
    with pytest.raises(SweclError, match="a_x#2, b_x#2"):
        resolve_task_name(plans, "x#2", where="v1")


def test_every_command_takes_seq_order(ledger: Path, cache: Path) -> None:
    shown = swecl(ledger, "show", "2", "spans#2", "--tail", "0", cache=cache).stdout
    assert shown.splitlines()[0].startswith("spans#2 swecl-demo__spans-")
    audit = swecl(ledger, "audit", "2", "spans#2", "--no-dataset", cache=cache).stdout
    assert "audit of spans#2 swecl-demo__spans-" in audit
    task = swecl(ledger, "show", "iniconf#3", cache=cache).stdout
    assert task.splitlines()[0].startswith("iniconf#3 swecl-demo__iniconf-")
    short = swecl(ledger, "show", "2", "2", cache=cache, check=False)
    assert short.returncode != 0 and "spans#2" in short.stderr and len(short.stderr.strip().splitlines()) == 1
    refused = swecl(ledger, "counterfactual", "2", "nope#2", "--without-recalled", cache=cache, check=False)
    assert refused.returncode != 0 and "no sequence 'nope'" in refused.stderr
