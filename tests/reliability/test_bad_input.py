"""Bad input never costs a ledger: datasets, predictions and patches that are malformed
give one clear line and exit 2 (no traceback), or a recorded verdict such as
`patch_failed`; either way the ledger verifies and no run is left half-written."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bench.processes import INICONF, SPANS, read_events
from tests.inprocess import swecl

from .support import (
    DemoCurriculum,
    assert_clean_refusal,
    cli,
    git,
    ledger_state,
    new_file_patch,
    one_sequence_curriculum,
    write_predictions,
)

FIRST = "swecl-demo__spans-8"
RUN_ARGS = ("--stage", "base", "--agent", "oracle", "--grader", "none", "--quiet")


@pytest.fixture(scope="module")
def small(curriculum: DemoCurriculum, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-task curriculum (spans-8), repositories by absolute path."""
    return one_sequence_curriculum(curriculum, tmp_path_factory.mktemp("small"), [FIRST])


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    elif delete and isinstance(parent, list):
        parent.pop(path[-1])
    else:
        parent[path[-1]] = value
    return doc


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**15) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12) | st.sampled_from(["", "../..", "/etc/passwd", "a/b", "0" * 40, "$(touch x)", "\r\n"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=5,
)


def _check(results: Path, result: Any) -> None:
    event(f"exit {result.code}")
    assert result.code in (0, 2), f"exit {result.code}: {result.stderr[-3000:]}"
    if result.code == 2:
        assert_clean_refusal(result)
    assert ledger_state(results) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_malformed_datasets_are_refused_in_one_line_or_run_cleanly(
    data: st.DataObject, small: Path, tmp_path: Path, cache: Path
) -> None:
    document = json.loads(small.read_text(encoding="utf-8"))
    how = data.draw(st.sampled_from(["replace", "delete", "bytes", "truncate"]), label="how")
    if how in ("replace", "delete"):
        path = data.draw(st.sampled_from(_paths(document)), label="path")
        value = data.draw(JSON_VALUES, label="value") if how == "replace" else None
        document = _set(document, path, value, delete=how == "delete" and bool(path))
        raw = json.dumps(document).encode()
    elif how == "bytes":
        raw = data.draw(st.binary(max_size=200), label="bytes")
    else:
        text = small.read_bytes()
        raw = text[: data.draw(st.integers(0, len(text) - 1), label="cut")]
    bad = tmp_path / f"dataset-{len(list(tmp_path.glob('dataset-*')))}.json"
    bad.write_bytes(raw)
    results = tmp_path / "results"
    _check(results, cli(results, "run", "--dataset", str(bad), *RUN_ARGS, cache=cache))


@pytest.mark.parametrize(
    "name, content",
    [
        ("latin-1", "{\"sequences\": [\"caf\xe9\"]}".encode("latin-1")),
        ("empty", b""),
        ("png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))),
        ("array", b"[1, 2, 3]"),
        ("null", b"null"),
        ("truncated", b'{"sequences": [{"id": "x", "repo": "a/b", "tasks": [{"metadata":'),
        ("no-sequences", b"{\"sequences\": []}"),
    ],
)
def test_hand_picked_bad_datasets_are_one_line_errors(name: str, content: bytes, tmp_path: Path, cache: Path) -> None:
    bad = tmp_path / f"{name}.json"
    bad.write_bytes(content)
    results = tmp_path / "results"
    err = assert_clean_refusal(cli(results, "run", "--dataset", str(bad), *RUN_ARGS, cache=cache))
    assert str(bad) in err  # the message names the file
    assert ledger_state(results) == []
    assert not (results / "ledger.db").exists() or read_events(results) == []


def test_a_dataset_that_is_a_directory_or_missing_is_a_one_line_error(tmp_path: Path, cache: Path) -> None:
    results = tmp_path / "results"
    assert_clean_refusal(cli(results, "run", "--dataset", str(tmp_path), *RUN_ARGS, cache=cache))
    assert_clean_refusal(cli(results, "run", "--dataset", str(tmp_path / "nope.json"), *RUN_ARGS, cache=cache))


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["crlf", "bom+crlf"])
def test_a_crlf_dataset_with_or_without_a_bom_runs_like_the_original(
    bom: bytes, small: Path, tmp_path: Path, cache: Path
) -> None:
    """What an editor on another system makes of a good dataset is still that dataset."""
    copy = tmp_path / "copy.json"
    copy.write_bytes(bom + small.read_bytes().replace(b"\n", b"\r\n"))
    results = tmp_path / "results"
    done = cli(results, "run", "--dataset", str(copy), *RUN_ARGS, cache=cache)
    assert done.code == 0, done.stderr
    assert ledger_state(results) == []
    finished = [e["payload"]["instance_id"] for e in read_events(results) if e["type"] == "task.finished"]
    assert finished == [FIRST]


# -- predictions ---------------------------------------------------------------------------

PREDICTION_LINES = st.one_of(
    st.builds(
        lambda iid, patch, extra: json.dumps({"instance_id": iid, "model_name_or_path": "m", "model_patch": patch, **extra}),
        st.sampled_from([FIRST, "", "nope__x-1", "swecl-demo__spans-8 "]),
        st.one_of(st.none(), st.text(max_size=40), st.just("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")),
        st.dictionaries(st.sampled_from(["patch", "instance_id", "model_patch"]), JSON_VALUES, max_size=2),
    ),
    JSON_VALUES.map(json.dumps),
    st.text(max_size=30),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(lines=st.lists(PREDICTION_LINES, max_size=4), newline=st.sampled_from(["\n", "\r\n"]),
       junk=st.one_of(st.none(), st.binary(min_size=1, max_size=40)))
def test_malformed_predictions_are_refused_in_one_line_or_graded(
    lines: list[str], newline: str, junk: bytes | None, small: Path, tmp_path: Path, cache: Path
) -> None:
    bad = tmp_path / f"pred-{len(list(tmp_path.glob('pred-*')))}.jsonl"
    bad.write_bytes(newline.join(lines).encode() + (junk or b""))
    results = tmp_path / "results"
    _check(results, cli(results, "grade", "--dataset", str(small), "--predictions", str(bad), "--grader", "none",
                        cache=cache))


def test_predictions_that_are_not_utf8_are_a_one_line_error(small: Path, tmp_path: Path, cache: Path) -> None:
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(json.dumps({"instance_id": FIRST, "model_patch": "x"}).encode().replace(b'"x"', b'"caf\xe9"'))
    results = tmp_path / "results"
    err = assert_clean_refusal(cli(results, "grade", "--dataset", str(small), "--predictions", str(bad), cache=cache))
    assert str(bad) in err
    assert ledger_state(results) == []


# -- patches, graded for real ----------------------------------------------------------------


def _binary_patch(tmp_path: Path) -> str:
    """A `git diff --binary` patch adding a file of raw bytes (NULs included)."""
    repo = tmp_path / "binrepo"
    repo.mkdir()
    git(["init", "-q"], repo)
    (repo / "assets").mkdir()
    (repo / "assets" / "blob.bin").write_bytes(bytes(range(256)) * 8)
    git(["add", "-A"], repo)
    return git(["diff", "--cached", "--binary"], repo).stdout


@pytest.mark.slow
def test_malformed_patches_get_recorded_verdicts(curriculum: DemoCurriculum, tmp_path: Path, cache: Path) -> None:
    spans = curriculum.instance_ids(SPANS)
    ini = curriculum.instance_ids(INICONF)
    gold = curriculum.gold
    big_lines = [f"line {i} " + "x" * 70 for i in range(70_000)]  # ~5 MB
    truncated = gold(ini[0])[: len(gold(ini[0])) * 2 // 3]
    touched = next(line[len("+++ b/"):] for line in gold(ini[1]).splitlines() if line.startswith("+++ b/"))
    missing = gold(ini[1]).replace(touched, touched.replace("/", "/missing_", 1))
    cases = {
        spans[0]: (gold(spans[0]).replace("\n", "\r\n"), "resolved"),  # CRLF transport damage
        spans[1]: (gold(spans[1]).rstrip("\n"), "resolved"),  # no final newline
        spans[2]: ("", "empty_patch"),
        spans[3]: ("this is not a diff\n", "patch_failed"),
        spans[4]: (gold(spans[4]) + _binary_patch(tmp_path), "resolved"),  # binary file + the fix
        spans[5]: (gold(spans[5]) + new_file_patch("notes/huge.txt", big_lines), "resolved"),  # 5 MB
        ini[0]: (truncated, "patch_failed"),
        ini[1]: (missing, "patch_failed"),  # a file the repository does not have
        ini[2]: ("  \n\t\n", "empty_patch"),
    }
    predictions = write_predictions(tmp_path / "pred.jsonl", {iid: patch for iid, (patch, _) in cases.items()})
    results = tmp_path / "results"
    done = swecl(results, "grade", "--dataset", str(curriculum.path), "--predictions", str(predictions), "--json",
                 cache=cache, check=False, timeout=900)
    assert done.returncode == 0, done.stderr
    statuses = json.loads(done.stdout)["statuses"]
    assert statuses == {iid: want for iid, (_, want) in cases.items()}
    assert ledger_state(results) == []
    assert swecl(results, "verify", cache=cache).stdout.startswith("ledger OK")


def test_a_patch_with_bytes_that_are_not_utf8_is_refused_in_one_line(
    curriculum: DemoCurriculum, tmp_path: Path, cache: Path
) -> None:
    """A JSON `\\udcXX` escape in model_patch is how non-UTF-8 bytes reach a predictions
    file (and how `git diff` output of a latin-1 file decodes with surrogateescape): the
    grade must be recorded, or the file refused in one line, never a crash mid-run."""
    patch = curriculum.gold(FIRST) + new_file_patch("latin.txt", ["caf\udce9"])
    predictions = tmp_path / "pred.jsonl"
    predictions.write_text(
        json.dumps({"instance_id": FIRST, "model_name_or_path": "m", "model_patch": patch}) + "\n", encoding="ascii"
    )
    results = tmp_path / "results"
    done = swecl(results, "grade", "--dataset", str(curriculum.path), "--predictions", str(predictions),
                 cache=cache, check=False)
    assert done.returncode in (0, 2), done.stderr
    if done.returncode == 2:
        assert_clean_refusal(done)
    # Today the loader refuses it, naming where: the refusal branch above is the one taken.
    assert done.returncode == 2 and "holds an unpaired surrogate escape" in done.stderr, done.stderr
    assert ledger_state(results) == []


def test_an_agent_that_writes_bytes_that_are_not_utf8_is_graded_not_a_crash(
    curriculum: DemoCurriculum, tmp_path: Path, cache: Path
) -> None:
    """The everyday way to get there: an agent saves a latin-1 file in its worktree."""
    agent = tmp_path / "agent.py"
    agent.write_text("import pathlib, sys\npathlib.Path(sys.argv[1], 'latin.txt').write_bytes(b'caf\\xe9\\n')\n")
    results = tmp_path / "results"
    done = swecl(results, "run", "--dataset", str(curriculum.path), "--sequence", SPANS, "--instance", FIRST,
                 "--stage", "base", "--agent", "command", "--command", f"{sys.executable} {agent} {{workdir}}",
                 "--quiet", cache=cache, check=False)
    assert done.returncode == 0, done.stderr
    assert ledger_state(results) == []
    (finished,) = [e["payload"] for e in read_events(results) if e["type"] == "task.finished"]
    assert finished["status"] == "unresolved"


def test_an_issue_text_with_a_lone_surrogate_is_refused_in_one_line(
    curriculum: DemoCurriculum, tmp_path: Path, cache: Path
) -> None:
    """Valid JSON (`"\\udce9"`) that is not valid Unicode, in a task's problem statement."""

    def edit(task: dict[str, Any]) -> None:
        task["task"]["problem_statement"] += " caf\udce9"

    dataset = one_sequence_curriculum(curriculum, tmp_path / "ds", [FIRST], edit=edit)
    results = tmp_path / "results"
    done = swecl(results, "run", "--dataset", str(dataset), "--stage", "plugin-blank", "--agent", "oracle",
                 "--grader", "none", "--passes", "initial", "--quiet", cache=cache, check=False)
    assert done.returncode in (0, 2), done.stderr
    if done.returncode == 2:
        assert_clean_refusal(done)
    # Today the loader refuses it, naming where: the refusal branch above is the one taken.
    assert done.returncode == 2 and "holds an unpaired surrogate escape" in done.stderr, done.stderr
    assert ledger_state(results) == []


def test_grading_one_task_from_the_middle_of_a_sequence_grades_it(
    curriculum: DemoCurriculum, tmp_path: Path, cache: Path
) -> None:
    """`swecl grade` of a prediction for task 2 of a sequence (or `run --instance`): the
    task is planned, so it must be graded, not silently skipped."""
    second = curriculum.instance_ids(SPANS)[1]
    predictions = write_predictions(tmp_path / "pred.jsonl", {second: curriculum.gold(second)})
    results = tmp_path / "results"
    done = swecl(results, "grade", "--dataset", str(curriculum.path), "--predictions", str(predictions), "--json",
                 cache=cache, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["statuses"] == {second: "resolved"}, report
    assert [e["payload"]["instance_id"] for e in read_events(results) if e["type"] == "task.finished"] == [second]


def test_a_dataset_refused_mid_command_leaves_earlier_runs_intact(
    small: Path, tmp_path: Path, cache: Path
) -> None:
    results = tmp_path / "results"
    assert cli(results, "run", "--dataset", str(small), *RUN_ARGS, cache=cache).code == 0
    before = read_events(results)
    bad = tmp_path / "bad.json"
    bad.write_text('{"sequences": 7}', encoding="utf-8")
    assert_clean_refusal(cli(results, "run", "--dataset", str(bad), *RUN_ARGS, cache=cache))
    assert read_events(results) == before


# -- inputs too deep, with huge numbers, or not regular files at all ----------------------------
#
# Every reader of a user's file: the dataset (curriculum JSON, rows as a dataset), --rows
# (JSON list, JSONL, parquet), --predictions (grade and run), verdict --input and the logs
# it names, metrics --vectors, memory import. Each refuses in one line and exit 2.

DEPTH_CAP = 64
DIGITS_CAP = sys.get_int_max_str_digits()
GOOD_LOG_LINE = {"instance_id": "a__b-1", "repo": "pydata/xarray", "log_path": "log.txt", "FAIL_TO_PASS": [],
                 "PASS_TO_PASS": []}
MEMORY_EXPORT = {"format": "swecl-memory", "format_version": 1, "version": "x", "as_of_seq": 0, "items": []}
_BAD = "__BAD__"


def _dataset_text(small: Path) -> str:
    document = json.loads(small.read_text(encoding="utf-8"))
    document["metadata"]["extra"] = _BAD
    return json.dumps(document)


def _row(small: Path) -> dict[str, Any]:
    task = json.loads(small.read_text(encoding="utf-8"))["sequences"][0]["tasks"][0]
    return {"instance_id": task["metadata"]["instance_id"], "repo": task["metadata"]["repo"],
            "base_commit": task["metadata"]["base_commit"], "extra": _BAD}


# reader -> (file name, text with the _BAD placeholder, depth at which the placeholder sits,
#            the command line reading the file)
def _content_readers(small: Path) -> dict[str, tuple[str, str, int, list[str]]]:
    prediction = {"instance_id": FIRST, "model_name_or_path": "m", "model_patch": "", "extra": _BAD}
    grade = ["grade", "--dataset", str(small), "--grader", "none", "--predictions"]
    return {
        "dataset": ("dataset.json", _dataset_text(small), 2, ["sequences", "--dataset"]),
        "rows-json": ("rows.json", json.dumps([_row(small)]), 2, ["sequences", "--dataset", str(small), "--rows"]),
        "rows-jsonl": ("rows.jsonl", json.dumps(_row(small)), 1, ["sequences", "--dataset", str(small), "--rows"]),
        "predictions-jsonl": ("pred.jsonl", json.dumps(prediction), 1, grade),
        "predictions-json": ("pred.json", json.dumps([prediction]), 2, grade),
        "verdict": ("in.jsonl", json.dumps({**GOOD_LOG_LINE, "extra": _BAD}), 1, ["verdict", "--input"]),
        "vectors": ("vectors.json", json.dumps({"sequences": {}, "extra": _BAD}), 1, ["metrics", "--vectors"]),
    }


def _nested(depth: int, digits: int) -> str:
    return "[" * depth + "9" * digits + "]" * depth


def _write_bad(folder: Path, name: str, template: str, depth: int, digits: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "log.txt").write_text("PASSED t.py::test_a\n")  # for the verdict reader
    path = folder / name
    path.write_text(template.replace(json.dumps(_BAD), _nested(depth, digits)), encoding="utf-8")
    return path


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data(),
       depth=st.one_of(st.integers(0, 70), st.integers(60, 3000)),
       digits=st.one_of(st.integers(1, 30), st.integers(DIGITS_CAP - 5, DIGITS_CAP + 5), st.integers(1, 20_000)))
def test_deep_json_and_huge_integers_are_refused_in_one_line_by_every_reader(
    data: st.DataObject, depth: int, digits: int, small: Path, tmp_path: Path, cache: Path
) -> None:
    readers = _content_readers(small)
    reader = data.draw(st.sampled_from(sorted(readers)), label="reader")
    name, template, base, argv = readers[reader]
    folder = tmp_path / f"case-{len(list(tmp_path.glob('case-*')))}"
    bad = _write_bad(folder, name, template, depth, digits)
    too_deep, too_long = base + depth > DEPTH_CAP, digits > DIGITS_CAP
    event(f"{reader}: {'deep' if too_deep else ''}{'+' if too_deep and too_long else ''}{'long' if too_long else ''}")
    results = folder / "results"
    result = cli(results, *argv, str(bad), cache=cache)
    _check(results, result)
    if too_deep or too_long:
        err = assert_clean_refusal(result)
        assert str(bad) in err, err
        deep_said, long_said = f"nested deeper than {DEPTH_CAP} levels" in err, f"more than {DIGITS_CAP} digits" in err
        if too_deep and not too_long:
            assert deep_said, err
        elif too_long and not too_deep:
            assert long_said, err
        else:
            assert deep_said or long_said, err


@pytest.mark.parametrize("reader", ["dataset", "rows-json", "rows-jsonl", "predictions-jsonl", "predictions-json",
                                    "verdict", "vectors"])
@pytest.mark.parametrize("case", ["100k-brackets", "5000-digits"])
def test_hand_picked_deep_or_huge_inputs_are_one_line_errors(
    reader: str, case: str, small: Path, tmp_path: Path, cache: Path
) -> None:
    name, template, _, argv = _content_readers(small)[reader]
    if case == "100k-brackets":  # unclosed, as the adversary sent it
        bad = tmp_path / name
        bad.write_text(template.replace(json.dumps(_BAD), "[" * 100_000), encoding="utf-8")
        want = "nested deeper than"
    else:
        bad = _write_bad(tmp_path, name, template, 0, 5000)
        want = f"more than {DIGITS_CAP} digits"
    results = tmp_path / "results"
    err = assert_clean_refusal(cli(results, *argv, str(bad), cache=cache))
    assert str(bad) in err and want in err, err
    assert ledger_state(results) == [] and (not (results / "ledger.db").exists() or read_events(results) == [])


@pytest.fixture(scope="module")
def populated(small: Path, tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """A results dir holding one finished run (v`kept`), whose ledger must not change."""
    results = tmp_path_factory.mktemp("populated")
    swecl(results, "run", "--dataset", str(small), *RUN_ARGS, "--version", "kept", cache=cache)
    return results


# reader -> (file name, the command line reading the file)
SPECIAL_READERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "dataset": ("dataset.json", ("sequences", "--dataset")),
    "dataset-parquet": ("rows.parquet", ("sequences", "--dataset")),
    "rows-jsonl": ("rows.jsonl", ("sequences", "--dataset", "{small}", "--rows")),
    "grade-predictions": ("pred.jsonl", ("grade", "--dataset", "{small}", "--grader", "none", "--predictions")),
    "run-predictions": ("pred.jsonl", ("run", "--dataset", "{small}", "--stage", "base", "--agent", "predictions",
                                       "--grader", "none", "--quiet", "--predictions")),
    "verdict": ("in.jsonl", ("verdict", "--input")),
    "vectors": ("vectors.json", ("metrics", "--vectors")),
    "memory-import": ("items.json", ("memory", "import", "--into", "kept")),
}
SPECIAL_KINDS = ["dev-zero", "fifo", "directory", "sparse-over-cap"]


def _special_file(kind: str, folder: Path, name: str) -> Path:
    if kind == "dev-zero":
        return Path("/dev/zero")
    path = folder / name
    if kind == "fifo":
        os.mkfifo(path)  # nobody ever writes: a reader that opens it blocking hangs
    elif kind == "directory":
        path.mkdir()
    else:  # sparse: no disk used, but its size is over every cap (2 GiB for parquet, less for JSON)
        with open(path, "wb") as fh:
            fh.truncate(2 * 1024**3 + 1)
    return path


@pytest.mark.parametrize("kind", SPECIAL_KINDS)
@pytest.mark.parametrize("reader", sorted(SPECIAL_READERS))
def test_devices_fifos_directories_and_huge_files_are_refused_in_one_line(
    reader: str, kind: str, small: Path, populated: Path, tmp_path: Path, cache: Path
) -> None:
    """Through a real `swecl` process with a time limit: a reader that blocks on a FIFO
    or reads /dev/zero to the end fails here by timing out, not by hanging the suite."""
    name, argv = SPECIAL_READERS[reader]
    path = _special_file(kind, tmp_path, name)
    before = read_events(populated)
    args = [a.replace("{small}", str(small)) for a in argv]
    if reader == "memory-import":
        args = [*args[:2], str(path), *args[2:]]
    else:
        args.append(str(path))
    started = time.monotonic()
    done = swecl(populated, *args, cache=cache, check=False, timeout=120)
    err = assert_clean_refusal(done)
    assert str(path) in err, err
    assert time.monotonic() - started < 60
    assert read_events(populated) == before
    assert ledger_state(populated) == []


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory", "sparse-over-cap"])
def test_a_verdict_log_that_is_not_a_regular_file_is_refused_in_one_line(
    kind: str, tmp_path: Path, cache: Path
) -> None:
    log = _special_file(kind, tmp_path, "log.txt")
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({**GOOD_LOG_LINE, "log_path": str(log)}) + "\n", encoding="utf-8")
    done = swecl(tmp_path / "results", "verdict", "--input", str(source), cache=cache, check=False, timeout=120)
    err = assert_clean_refusal(done)
    assert f"{source}:1: field 'log_path'" in err, err


def test_the_size_cap_can_be_lowered_and_raised(small: Path, tmp_path: Path, cache: Path) -> None:
    """SWECL_MAX_INPUT_BYTES moves every cap: under it a file is refused by its size,
    over it the same file loads; a value that is not a size is refused in one line."""
    size = small.stat().st_size
    results = tmp_path / "results"
    over = swecl(results, "sequences", "--dataset", str(small), cache=cache, check=False,
                 env={"SWECL_MAX_INPUT_BYTES": str(size - 1)})
    assert "SWECL_MAX_INPUT_BYTES" in assert_clean_refusal(over)
    fits = swecl(results, "sequences", "--dataset", str(small), cache=cache, check=False,
                 env={"SWECL_MAX_INPUT_BYTES": "1M"})
    assert fits.returncode == 0, fits.stderr
    junk = swecl(results, "sequences", "--dataset", str(small), cache=cache, check=False,
                 env={"SWECL_MAX_INPUT_BYTES": "lots"})
    assert "SWECL_MAX_INPUT_BYTES='lots'" in assert_clean_refusal(junk)
