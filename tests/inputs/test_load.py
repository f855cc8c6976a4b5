"""Loading benchmarks: the shared manifest, curricula, rows joins, and every way to fail."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from commands.inputs import (
    Benchmark,
    dump_curriculum,
    find_sequence,
    find_task,
    list_sequences,
    load_benchmark,
    write_curriculum,
)
from ledger.errors import SweclError

from ..conftest import REPO_ROOT

MANIFEST = "data/SWE-Bench-CL-order-manifest.reconstructed.json"
PATCH = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
TEST_PATCH = "diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n@@ -1 +1 @@\n-a\n+b\n"


def _task(instance_id: str, position: int, score: int = 1, **evaluation: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "instance_id": instance_id,
            "repo": "acme/calc",
            "base_commit": "a" * 40,
            "created_at": "2023-05-01T10:00:00Z",
            "difficulty": "<15 min fix",
        },
        "task": {"problem_statement": f"{instance_id} is broken", "hints_text": ""},
        "evaluation": {
            "patch": PATCH,
            "test_patch": TEST_PATCH,
            "FAIL_TO_PASS": ["tests/test_ops.py::test_fixed"],
            "PASS_TO_PASS": ["tests/test_ops.py::test_add"],
            **evaluation,
        },
        "continual_learning": {
            "sequence_position": position,
            "difficulty_score": score,
            "dependencies": [],
            "modified_files": ["calc/ops.py"],
        },
    }


def _curriculum() -> dict[str, Any]:
    return {
        "metadata": {"name": "tiny"},
        "sequences": [
            {
                "id": "acme_calc_sequence",
                "repo": "acme/calc",
                "num_tasks": 3,
                "tasks": [_task("acme__calc-1", 1), _task("acme__calc-2", 2, 2), _task("acme__calc-3", 3, 3)],
            },
            {
                "id": "acme_io_sequence",
                "repo": "acme/io",
                "num_tasks": 1,
                "tasks": [
                    {**_task("acme__io-7", 1), "metadata": {**_task("acme__io-7", 1)["metadata"], "repo": "acme/io"}}
                ],
            },
        ],
    }


def _write(path: Path, document: Any) -> str:
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


# --- the shared manifest ----------------------------------------------------------------


def test_shared_manifest_loads_with_its_counts(shared: Path) -> None:
    benchmark = load_benchmark(str(shared / MANIFEST))
    listed = list_sequences(benchmark)
    assert [(s["repo"], s["num_tasks"]) for s in listed] == [
        ("django/django", 50),
        ("sympy/sympy", 50),
        ("sphinx-doc/sphinx", 44),
        ("matplotlib/matplotlib", 34),
        ("scikit-learn/scikit-learn", 32),
        ("astropy/astropy", 22),
        ("pydata/xarray", 22),
        ("pytest-dev/pytest", 19),
    ]
    assert sum(s["num_tasks"] for s in listed) == 273
    assert listed[0]["id"] == "django_django_sequence"
    assert listed[0]["difficulty"] == {"1": 50}
    assert listed[2]["difficulty"] == {"1": 22, "2": 17, "3": 4, "4": 1}
    for entry in listed:
        assert sum(entry["difficulty"].values()) == entry["num_tasks"]
    sequence, task = find_task(benchmark, "django__django-9296")
    assert sequence.id == "django_django_sequence"
    assert (task.order, task.difficulty, task.version) == (1, 1, "3.1")
    assert task.base_commit == "84322a29ce9b0940335f8ab3d60e55192bef1e50"
    assert [t.order for t in sequence.tasks] == list(range(1, 51))


def test_manifest_task_says_what_it_lacks_and_how_to_supply_it(shared: Path) -> None:
    benchmark = load_benchmark(str(shared / MANIFEST))
    _, task = find_task(benchmark, "sympy__sympy-12096")
    assert task.missing() == ["problem_statement", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS"]
    with pytest.raises(SweclError) as caught:
        task.require_runnable()
    message = str(caught.value)
    assert "\n" not in message
    assert "'sympy__sympy-12096'" in message
    assert "problem_statement, patch, test_patch, FAIL_TO_PASS, PASS_TO_PASS" in message
    assert "--rows FILE" in message and "hf:princeton-nlp/SWE-bench_Verified" in message
    with pytest.raises(SweclError, match="50 of 50 tasks cannot run"):
        find_sequence(benchmark, "sympy/sympy").require_runnable()


def _verified_rows(benchmark: Benchmark, ids: list[str], json_strings: bool) -> list[dict[str, Any]]:
    rows = []
    for instance_id in ids:
        _, task = find_task(benchmark, instance_id)
        f2p = [f"tests/test_{instance_id}.py::test_bug"]
        p2p = [f"tests/test_{instance_id}.py::test_ok"]
        rows.append(
            {
                "repo": task.repo,
                "instance_id": instance_id,
                "base_commit": task.base_commit,
                "patch": PATCH,
                "test_patch": TEST_PATCH,
                "problem_statement": f"Issue text of {instance_id}",
                "hints_text": "",
                "created_at": "2019-01-01T00:00:00Z",
                "version": task.version,
                "FAIL_TO_PASS": json.dumps(f2p) if json_strings else f2p,
                "PASS_TO_PASS": json.dumps(p2p) if json_strings else p2p,
                "environment_setup_commit": "b" * 40,
                "difficulty": "<15 min fix",
            }
        )
    return rows


@pytest.mark.parametrize("form", ["jsonl", "json", "parquet"])
def test_rows_fill_a_manifest(shared: Path, tmp_path: Path, form: str) -> None:
    manifest = str(shared / MANIFEST)
    ids = ["django__django-9296", "pytest-dev__pytest-5262"]
    rows = _verified_rows(load_benchmark(manifest), ids, json_strings=True)
    path = tmp_path / f"rows.{form}"
    if form == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif form == "json":
        path.write_text(json.dumps(rows), encoding="utf-8")
    else:
        import polars as pl

        pl.DataFrame(rows).write_parquet(path)
    joined = load_benchmark(manifest, rows=str(path))
    for instance_id in ids:
        _, task = find_task(joined, instance_id)
        assert task.missing() == []
        task.require_runnable()
        assert task.problem_statement == f"Issue text of {instance_id}"
        assert task.fail_to_pass == (f"tests/test_{instance_id}.py::test_bug",)
        assert task.pass_to_pass == (f"tests/test_{instance_id}.py::test_ok",)
        assert task.modified_files == ("calc/ops.py",)  # derived from the patch, as upstream
        assert task.created_at == "2019-01-01T00:00:00Z"
    _, untouched = find_task(joined, "django__django-10097")
    assert untouched.missing() != []
    assert joined.content_hash != load_benchmark(manifest).content_hash


def test_rows_that_describe_other_tasks_are_refused(shared: Path, tmp_path: Path) -> None:
    manifest = str(shared / MANIFEST)
    rows = _verified_rows(load_benchmark(manifest), ["django__django-9296"], json_strings=False)
    rows[0]["base_commit"] = "f" * 40
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(SweclError, match=r"rows.json: instance 'django__django-9296': base_commit .* differs"):
        load_benchmark(manifest, rows=str(path))
    stranger = [{**rows[0], "instance_id": "acme__calc-1", "base_commit": "a" * 40}]
    path.write_text(json.dumps(stranger), encoding="utf-8")
    with pytest.raises(SweclError, match="none of its 1 rows is one of the 273 tasks"):
        load_benchmark(manifest, rows=str(path))


def test_bad_rows_name_the_line_and_field(tmp_path: Path, shared: Path) -> None:
    path = tmp_path / "rows.jsonl"
    good = {"instance_id": "x__y-1", "repo": "x/y", "base_commit": "c" * 40, "FAIL_TO_PASS": "[]"}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "instance_id": "x__y-2", "FAIL_TO_PASS": "[oops"}) + "\n")
    with pytest.raises(SweclError) as caught:
        load_benchmark(str(shared / MANIFEST), rows=str(path))
    assert str(caught.value) == f"{path}: line 3 ('x__y-2'): FAIL_TO_PASS: not a JSON-encoded list of test ids"


# --- FAIL_TO_PASS forms and the content hash -----------------------------------------------


def test_fail_to_pass_as_json_string_or_list_is_the_same_benchmark(tmp_path: Path) -> None:
    as_lists = _curriculum()
    as_strings = copy.deepcopy(as_lists)
    for sequence in as_strings["sequences"]:
        for task in sequence["tasks"]:
            for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
                task["evaluation"][key] = json.dumps(task["evaluation"][key])
    one = load_benchmark(_write(tmp_path / "lists.json", as_lists))
    two = load_benchmark(_write(tmp_path / "strings.json", as_strings))
    assert one.tasks()[0].fail_to_pass == ("tests/test_ops.py::test_fixed",)
    assert one.content_hash == two.content_hash
    assert one.sequences == two.sequences


def _reverse_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reverse_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reverse_keys(v) for v in value]
    return value


def test_content_hash_ignores_key_order_name_and_format(tmp_path: Path) -> None:
    document = _curriculum()
    original = load_benchmark(_write(tmp_path / "a.json", document))
    reordered = load_benchmark(_write(tmp_path / "b.json", _reverse_keys(document)))
    assert reordered.content_hash == original.content_hash
    renamed = copy.deepcopy(document)
    renamed["metadata"]["name"] = "another name"
    assert load_benchmark(_write(tmp_path / "c.json", renamed)).content_hash == original.content_hash
    rewritten = load_benchmark(str(write_curriculum(original, tmp_path / "d.json")))
    assert rewritten.content_hash == original.content_hash
    assert rewritten.sequences == original.sequences
    changed = copy.deepcopy(document)
    changed["sequences"][0]["tasks"][0]["evaluation"]["patch"] += "+y = 3\n"
    assert load_benchmark(_write(tmp_path / "e.json", changed)).content_hash != original.content_hash


def test_environment_applies_to_tasks_without_their_own(tmp_path: Path) -> None:
    document = _curriculum()
    sequence = document["sequences"][0]
    sequence["environment"] = {"python": "3.11", "pip_packages": ["pytest"], "test_cmd": "pytest -rA"}
    sequence["tasks"][1]["environment"] = {"python": None, "install": "pip install -e .", "log_parser": "pytest"}
    benchmark = load_benchmark(_write(tmp_path / "env.json", document))
    tasks = benchmark.sequences[0].tasks
    assert tasks[0].environment == {"python": "3.11", "pip_packages": ["pytest"], "test_cmd": "pytest -rA"}
    assert tasks[1].environment == {"python": None, "install": "pip install -e .", "log_parser": "pytest"}
    assert benchmark.sequences[1].tasks[0].environment is None
    again = load_benchmark(str(write_curriculum(benchmark, tmp_path / "again.json")))
    assert again.content_hash == benchmark.content_hash
    assert "environment" not in dump_curriculum(benchmark)["sequences"][0]["tasks"][0]


def test_tasks_are_ordered_by_sequence_position(tmp_path: Path) -> None:
    document = _curriculum()
    document["sequences"][0]["tasks"].reverse()
    benchmark = load_benchmark(_write(tmp_path / "shuffled.json", document))
    assert [t.instance_id for t in benchmark.sequences[0].tasks] == ["acme__calc-1", "acme__calc-2", "acme__calc-3"]


# --- malformed inputs: one line naming file, sequence, task and field -----------------------


def _drop(*path: str) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        node = document["sequences"][0]["tasks"][1]
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return edit


def _set(value: Any, *path: str) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        node = document["sequences"][0]["tasks"][1]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


def _empty_sequence(document: dict[str, Any]) -> None:
    document["sequences"][0]["tasks"] = []
    document["sequences"][0]["num_tasks"] = 0


def _gap(document: dict[str, Any]) -> None:
    document["sequences"][0]["tasks"][2]["continual_learning"]["sequence_position"] = 4


def _duplicate_id(document: dict[str, Any]) -> None:
    document["sequences"][1]["tasks"][0]["metadata"]["instance_id"] = "acme__calc-2"


SEQ = "bad.json: sequence 'acme_calc_sequence'"
TASK = f"{SEQ}, task 'acme__calc-2'"

MALFORMED = {
    "missing field": (_drop("metadata", "base_commit"), f"{TASK}: metadata.base_commit: field required"),
    "missing position": (
        _drop("continual_learning", "sequence_position"),
        f"{TASK}: continual_learning.sequence_position: field required",
    ),
    "wrong type": (
        _set("2", "continual_learning", "sequence_position"),
        f"{TASK}: continual_learning.sequence_position: input should be a valid integer (got '2')",
    ),
    "wrong type in list": (
        _set(["ok", 5], "evaluation", "FAIL_TO_PASS"),
        f"{TASK}: evaluation.FAIL_TO_PASS[1]: input should be a valid string (got 5)",
    ),
    "bad JSON string": (
        _set("not json", "evaluation", "PASS_TO_PASS"),
        f"{TASK}: evaluation.PASS_TO_PASS: not a JSON-encoded list of test ids",
    ),
    "difficulty out of range": (
        _set(5, "continual_learning", "difficulty_score"),
        f"{TASK}: continual_learning.difficulty_score: input should be less than or equal to 4 (got 5)",
    ),
    "duplicate position": (
        _set(1, "continual_learning", "sequence_position"),
        f"{TASK}: continual_learning.sequence_position: duplicate value 1 (also task 'acme__calc-1')",
    ),
    "gap in positions": (_gap, f"{SEQ}: continual_learning.sequence_position: no task at position 3 (positions must run 1..3)"),
    "empty sequence": (_empty_sequence, f"{SEQ}: tasks: empty (a sequence needs at least one task)"),
    "repo mismatch": (
        _set("acme/other", "metadata", "repo"),
        f"{TASK}: metadata.repo: 'acme/other' differs from the sequence's repo 'acme/calc'",
    ),
    "unknown environment key": (
        _set({"test_command": "pytest"}, "environment"),
        f"{TASK}: environment.test_command: unknown field",
    ),
    "duplicate instance": (
        _duplicate_id,
        "bad.json: sequence 'acme_io_sequence', task 'acme__calc-2': metadata.instance_id: duplicate (also in sequence 'acme_calc_sequence')",
    ),
    "task not an object": (_set(None, "metadata"), f"{SEQ}, task #2: metadata: input should be a valid dictionary (got None)"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_curriculum_is_one_precise_line(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edit, expected = MALFORMED[case]
    document = _curriculum()
    edit(document)
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "bad.json", document)
    with pytest.raises(SweclError) as caught:
        load_benchmark("bad.json")
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(expected), str(caught.value)


def test_num_tasks_must_match(tmp_path: Path) -> None:
    document = _curriculum()
    document["sequences"][0]["num_tasks"] = 4
    with pytest.raises(SweclError, match=r"sequence 'acme_calc_sequence': num_tasks: says 4 but the sequence holds 3 tasks"):
        load_benchmark(_write(tmp_path / "bad.json", document))


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"sequences": [', "not valid JSON: Expecting value at line 1 column 16"),
        (b'{"metadata": {"name": "caf\xe9"}, "sequences": []}', "not UTF-8 text (byte 0xe9 at offset 26)"),
        (b'{"sequences": []}', "sequences: empty"),
        (b'{"metadata": {}}', "neither a SWE-Bench-CL curriculum"),
        (b'"a string"', "expected a curriculum object with 'sequences', got str"),
        (b'{"sequences": [7]}', "sequence #1: expected an object, got int"),
    ],
)
def test_unreadable_files_are_one_line(content: bytes, expected: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(SweclError) as caught:
        load_benchmark(str(path))
    assert str(caught.value).startswith(f"{path}: {expected}"), str(caught.value)
    assert "\n" not in str(caught.value)


def test_unknown_paths(tmp_path: Path) -> None:
    with pytest.raises(SweclError, match=r"nope.json: no such file"):
        load_benchmark(str(tmp_path / "nope.json"))
    with pytest.raises(SweclError, match=r"is a directory"):
        load_benchmark(str(tmp_path))
    good = _write(tmp_path / "good.json", _curriculum())
    with pytest.raises(SweclError, match=r"missing.jsonl: no such file"):
        load_benchmark(good, rows=str(tmp_path / "missing.jsonl"))
    with pytest.raises(SweclError, match="is a curriculum, not SWE-bench rows"):
        load_benchmark(good, rows=good)


# --- rows as a dataset: SWE-Bench-CL's construction rule --------------------------------------


def test_rows_alone_become_sequences_by_the_upstream_rule(tmp_path: Path) -> None:
    labels = ["<15 min fix", "15 min - 1 hour", "1-4 hours", ">4 hours"]
    rows = []
    for n in range(55):  # one repo beyond the 50-task cut
        rows.append(
            {
                "instance_id": f"big__big-{n}",
                "repo": "big/big",
                "base_commit": f"{n:040x}",
                "created_at": f"2020-01-{(n % 28) + 1:02d}T{n % 24:02d}:00:00Z",
                "difficulty": labels[n % 4],
                "patch": f"diff --git a/f{n % 3}.py b/f{n % 3}.py\n",
                "FAIL_TO_PASS": "[]",
                "PASS_TO_PASS": "[]",
            }
        )
    rows += [{**rows[0], "instance_id": f"mid__mid-{n}", "repo": "mid/mid"} for n in range(16)]
    rows += [{**rows[0], "instance_id": f"small__small-{n}", "repo": "small/small"} for n in range(14)]
    benchmark = load_benchmark(_write(tmp_path / "verified.json", rows))
    assert [(s["id"], s["num_tasks"]) for s in list_sequences(benchmark)] == [
        ("big_big_sequence", 50),
        ("mid_mid_sequence", 16),
    ]
    tasks = benchmark.sequences[0].tasks
    assert [t.difficulty for t in tasks] == sorted(t.difficulty for t in tasks)
    for earlier, later in zip(tasks, tasks[1:]):
        if earlier.difficulty == later.difficulty:
            assert earlier.created_at <= later.created_at
    with_dependencies = [t for t in tasks if t.dependencies]
    assert with_dependencies and all(t.instance_id not in t.dependencies for t in with_dependencies)


# --- the Hub, unreachable here -----------------------------------------------------------------


def test_hub_unreachable_is_one_line(tmp_path: Path) -> None:
    script = (
        "from commands.inputs import load_benchmark\n"
        "from ledger.errors import SweclError\n"
        "try:\n"
        "    load_benchmark('hf:princeton-nlp/SWE-bench_Verified')\n"
        "except SweclError as exc:\n"
        "    print('ERROR', exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"), PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, cwd=REPO_ROOT)
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR hf:princeton-nlp/SWE-bench_Verified: cannot load the dataset")
    assert "HF_HUB_OFFLINE=1" in lines[0]


def test_malformed_hub_names(tmp_path: Path) -> None:
    with pytest.raises(SweclError, match="expected hf:OWNER/NAME"):
        load_benchmark("hf:just-a-name")


# --- lookups and the demo default ------------------------------------------------------------


def test_find_task_and_sequence_errors(tmp_path: Path) -> None:
    benchmark = load_benchmark(_write(tmp_path / "tiny.json", _curriculum()))
    assert find_sequence(benchmark, "acme/io").id == "acme_io_sequence"
    with pytest.raises(SweclError, match=r"task 'acme__calc-9' is not in benchmark 'tiny' .*did you mean"):
        find_task(benchmark, "acme__calc-9")
    with pytest.raises(SweclError, match=r"sequence 'acme_cal_sequence' is not in benchmark 'tiny'"):
        find_sequence(benchmark, "acme_cal_sequence")


def test_no_dataset_means_the_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWECL_DEMO_REPOS", str(tmp_path / "repos"))
    benchmark = load_benchmark(None)
    assert benchmark.name == "demo"
    assert set(benchmark.repo_sources) == {"swecl-demo/textkit", "swecl-demo/iniconf", "swecl-demo/spans"}
    assert all(Path(p).is_dir() for p in benchmark.repo_sources.values())
    with pytest.raises(SweclError, match="the built-in demo needs no rows"):
        load_benchmark(None, rows="rows.jsonl")
