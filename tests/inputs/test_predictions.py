"""Predictions files (SWE-bench convention)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commands.inputs import Prediction, load_predictions
from ledger.errors import SweclError


def _jsonl(path: Path, *records: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def test_loads_predictions_with_empty_and_null_patches(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "preds.jsonl",
        {"instance_id": "a__a-1", "model_name_or_path": "m", "model_patch": "diff --git a/x b/x\n"},
        "",
        {"instance_id": "a__a-2", "model_name_or_path": "m", "model_patch": None},
        {"instance_id": "a__a-3", "model_name_or_path": "m", "model_patch": "", "extra": 1},
    )
    predictions = load_predictions(path)
    assert list(predictions) == ["a__a-1", "a__a-2", "a__a-3"]
    assert predictions["a__a-1"] == Prediction("a__a-1", "diff --git a/x b/x\n", "m", line=1)
    assert predictions["a__a-2"].model_patch == "" and predictions["a__a-2"].line == 3
    assert predictions["a__a-3"].model_patch == ""


def test_json_list_form(tmp_path: Path) -> None:
    path = tmp_path / "preds.json"
    path.write_text(json.dumps([{"instance_id": "a__a-1", "model_patch": "p"}]), encoding="utf-8")
    assert load_predictions(path)["a__a-1"].model_name_or_path is None


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            [{"instance_id": "a__a-1", "model_patch": "p"}, {"instance_id": "a__a-1", "model_patch": "q"}],
            "line 2 ('a__a-1'): instance_id: duplicate of line 1; keep one prediction per task",
        ),
        ([{"model_patch": "p"}], "line 1: instance_id: field required"),
        ([{"instance_id": "a__a-1", "patch": "p"}], "line 1 ('a__a-1'): model_patch: field required"),
        ([{"instance_id": "a__a-1", "model_patch": 3}], "line 1 ('a__a-1'): model_patch: input should be a valid string (got 3)"),
        ([{"instance_id": "a__a-1", "model_patch": "p"}, "{oops"], "line 2: not valid JSON"),
        (["[1, 2]"], "item 1: expected an object with instance_id and model_patch, got int"),
    ],
)
def test_bad_predictions_name_file_and_line(lines: list[object], expected: str, tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "preds.jsonl", *lines)
    with pytest.raises(SweclError) as caught:
        load_predictions(path)
    assert str(caught.value).startswith(f"{path}: {expected}"), str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_empty_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(SweclError, match="no such file"):
        load_predictions(tmp_path / "absent.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(SweclError, match="holds no predictions"):
        load_predictions(tmp_path / "empty.jsonl")
    (tmp_path / "binary.jsonl").write_bytes(b"\xff\xfe{}")
    with pytest.raises(SweclError, match="not UTF-8"):
        load_predictions(tmp_path / "binary.jsonl")
