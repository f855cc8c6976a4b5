"""Predictions files in the SWE-bench convention: one object per line with
`instance_id`, `model_name_or_path` and `model_patch`.

A null or empty `model_patch` is the empty patch (the model produced nothing), which is
a legitimate prediction to grade; a *missing* `model_patch` key is refused because it
usually means a misspelt column (`patch`, `prediction`). A JSON list of such objects
(SWE-bench's `predictions.json`) is read as well.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ledger.errors import SweclError

from ._model import Prediction
from ._validate import describe_validation_error, parse_json, read_text

__all__ = ["load_predictions"]


def _prediction(record: Any, place: str, number: int) -> Prediction:
    if not isinstance(record, dict):
        raise SweclError(f"{place}: expected an object with instance_id and model_patch, got {type(record).__name__}")
    instance = record.get("instance_id")
    if isinstance(instance, str) and instance:
        place += f" ({instance!r})"
    from ._schemas import PredictionIn, ValidationError  # pydantic off the start-up path (see _schemas)

    try:
        parsed = PredictionIn.model_validate(record)
    except ValidationError as exc:
        raise SweclError(f"{place}: {describe_validation_error(exc)}") from None
    return Prediction(
        instance_id=parsed.instance_id,
        model_patch=parsed.model_patch or "",
        model_name_or_path=parsed.model_name_or_path,
        line=number,
    )


def load_predictions(path: str | os.PathLike[str]) -> dict[str, Prediction]:
    """instance_id -> Prediction, in file order; errors name the file and line."""
    label = os.fspath(path)
    text = read_text(Path(path), label)
    entries: list[tuple[Any, str, int]] = []
    if text.lstrip().startswith("["):
        document = parse_json(text, label)
        entries = [(record, f"{label}: item {n}", n) for n, record in enumerate(document, start=1)]
        unit = "item"
    else:
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                place = f"{label}: line {number}"
                entries.append((parse_json(line, place), place, number))
        unit = "line"
    if not entries:
        raise SweclError(f"{label}: holds no predictions (expected one JSON object per line)")
    predictions: dict[str, Prediction] = {}
    for record, place, number in entries:
        prediction = _prediction(record, place, number)
        earlier = predictions.get(prediction.instance_id)
        if earlier is not None:
            raise SweclError(
                f"{place} ({prediction.instance_id!r}): instance_id: duplicate of {unit} {earlier.line}; "
                "keep one prediction per task"
            )
        predictions[prediction.instance_id] = prediction
    return predictions
