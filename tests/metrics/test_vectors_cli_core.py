"""The `swecl metrics --vectors FILE` contract, minus click: document in, nine metrics out.

Also the validation of `SequenceOutcomes` itself: every bad input is one `SweclError` line
naming the sequence and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.errors import SweclError
from projections.metrics import METRIC_NAMES, SequenceOutcomes, metrics_from_vectors_document

DESIGN_DOCUMENT: dict[str, Any] = {
    "sequences": {
        "A": {"initial": [1, 0, 1, 1], "final": [0, 0, 1, 1], "baseline": [1, 0, 0, 1]},
        "B": {"initial": [1], "final": [1], "baseline": [0]},
        "C": {"initial": [0, 1, 1], "final": None, "baseline": [0, 0, 1], "difficulty": [1, 2, 2]},
    }
}

# docs/design.md section 7 table (BWT = -F).
TABLE = {
    "A": [0.5, 0.333333, -0.333333, 0.333333, 0.729167, 0.75, 0.666667, 0.705882, 0.895833],
    "B": [1, 0, 0, 0, 1, 1, 1, 1, 2.0],
    "C": [0.666667, 0, 0, 0.5, 0.388889, 0.666667, 1, 0.8, 1.555556],
}


def _write_and_read(tmp_path: Path, doc: object) -> Any:
    # The CLI reads FILE with json; go through a real file so the contract is JSON's, not Python's.
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps(doc))
    return json.loads(path.read_text())


@pytest.mark.parametrize("formula", ["native", "eval-v1"])
def test_document_gives_exactly_nine_metrics_per_sequence_and_macro(tmp_path: Path, formula: str) -> None:
    out = metrics_from_vectors_document(_write_and_read(tmp_path, DESIGN_DOCUMENT), formula)
    assert set(out) == {"sequences", "macro"}
    assert list(out["sequences"]) == ["A", "B", "C"]
    for name, metrics in [*out["sequences"].items(), ("macro", out["macro"])]:
        assert list(metrics) == list(METRIC_NAMES), name
        assert all(type(value) is float for value in metrics.values()), name
    for case, row in TABLE.items():
        want = dict(zip(METRIC_NAMES, row, strict=True))
        if formula == "eval-v1" and case == "A":
            # eval-v1: ACC = passes / recorded memory-on (in-order) results = 3/4.
            want["ACC"], want["CL-Score"] = 0.75, 0.895833 + 0.25
        for metric, value in want.items():
            assert abs(out["sequences"][case][metric] - value) <= 1e-6, (case, metric)
    acc = [0.5 if formula == "native" else 0.75, 1.0, 2 / 3]
    assert out["macro"]["ACC"] == pytest.approx(sum(acc) / 3, abs=1e-12)
    # Full precision, not the table's 6 decimals.
    assert out["sequences"]["A"]["F"] == 1 / 3
    json.loads(json.dumps(out, allow_nan=False))


def test_document_accepts_null_outcomes_as_missing_and_reports_none(tmp_path: Path) -> None:
    doc = {"sequences": {"s": {"initial": [None, None], "final": None, "baseline": None},
                         "t": {"initial": [1, None, 0], "baseline": [0, 0, None]}}}
    out = metrics_from_vectors_document(_write_and_read(tmp_path, doc), "native")
    assert out["sequences"]["s"]["ACC"] is None
    assert out["sequences"]["s"]["FWT"] == 0.0  # no baseline: 0 by definition, computable
    assert out["sequences"]["t"]["ACC"] == 0.5
    assert out["macro"]["ACC"] == 0.5  # s is not computable and left out of the mean
    text = json.dumps(out, allow_nan=False)
    assert '"ACC": null' in text


def test_document_is_not_mutated(tmp_path: Path) -> None:
    doc = _write_and_read(tmp_path, DESIGN_DOCUMENT)
    snapshot = json.dumps(doc, sort_keys=True)
    metrics_from_vectors_document(doc, "native")
    assert json.dumps(doc, sort_keys=True) == snapshot


BAD_DOCUMENTS: list[tuple[str, object, str]] = [
    ("not an object", [1, 0], "vectors document: must be a JSON object"),
    ("string", "A", "vectors document: must be a JSON object"),
    ("no sequences", {}, "vectors document: field 'sequences' is missing"),
    ("unknown top-level", {"sequences": {"A": {"initial": [1]}}, "seqs": {}}, "unknown top-level field 'seqs'"),
    ("sequences a list", {"sequences": [{"initial": [1]}]}, "field 'sequences' must be an object"),
    ("empty sequences", {"sequences": {}}, "field 'sequences' is empty"),
    ("entry not object", {"sequences": {"A": [1, 0]}}, "sequence 'A': must be an object"),
    ("missing initial", {"sequences": {"A": {"final": [1]}}}, "sequence 'A': field 'initial' is missing"),
    ("null initial", {"sequences": {"A": {"initial": None}}}, "sequence 'A': field 'initial' is missing"),
    ("empty initial", {"sequences": {"A": {"initial": []}}}, "sequence 'A': field 'initial' must be a non-empty list"),
    ("initial not list", {"sequences": {"A": {"initial": "1011"}}}, "sequence 'A': field 'initial' must be a list"),
    ("value 2", {"sequences": {"A": {"initial": [1, 2]}}}, "sequence 'A': field 'initial' entry 1 is 2"),
    ("value true", {"sequences": {"A": {"initial": [True, 0]}}}, "sequence 'A': field 'initial' entry 0 is True"),
    ("value 1.0", {"sequences": {"A": {"initial": [1.0]}}}, "sequence 'A': field 'initial' entry 0 is 1.0"),
    ("value '1'", {"sequences": {"A": {"initial": ["1"]}}}, "sequence 'A': field 'initial' entry 0 is '1'"),
    ("bad final", {"sequences": {"A": {"initial": [1, 0], "final": [0, -1]}}},
     "sequence 'A': field 'final' entry 1 is -1"),
    ("bad baseline", {"sequences": {"A": {"initial": [1], "baseline": [0.5]}}},
     "sequence 'A': field 'baseline' entry 0 is 0.5"),
    ("final length", {"sequences": {"A": {"initial": [1, 0], "final": [1]}}},
     "sequence 'A': field 'final' has 1 entries but 'initial' has 2"),
    ("baseline length", {"sequences": {"B": {"initial": [1], "baseline": [1, 0, 0]}}},
     "sequence 'B': field 'baseline' has 3 entries but 'initial' has 1"),
    ("difficulty length", {"sequences": {"A": {"initial": [1, 0], "difficulty": [1]}}},
     "sequence 'A': field 'difficulty' has 1 entries but 'initial' has 2"),
    ("difficulty range", {"sequences": {"A": {"initial": [1, 0], "difficulty": [1, 5]}}},
     "sequence 'A': field 'difficulty' entry 1 (task t2) is 5"),
    ("unknown field", {"sequences": {"A": {"initial": [1], "basline": [0]}}}, "sequence 'A': unknown field 'basline'"),
    ("second sequence bad", {"sequences": {"ok": {"initial": [1]}, "bad": {"initial": [1], "final": [1, 1]}}},
     "sequence 'bad': field 'final' has 2 entries"),
]


@pytest.mark.parametrize(("label", "doc", "message"), BAD_DOCUMENTS, ids=[case[0] for case in BAD_DOCUMENTS])
def test_malformed_documents_raise_one_line_swecl_errors(label: str, doc: object, message: str) -> None:
    with pytest.raises(SweclError) as caught:
        metrics_from_vectors_document(doc, "native")  # type: ignore[arg-type]
    text = str(caught.value)
    assert message in text, text
    assert "\n" not in text
    assert caught.value.exit_code == 2


def test_unknown_formula_is_refused_before_reading_the_document() -> None:
    with pytest.raises(SweclError, match="unknown metric formula set 'eval-v2'; choose one of: eval-v1, native"):
        metrics_from_vectors_document(DESIGN_DOCUMENT, "eval-v2")
    with pytest.raises(SweclError, match="unknown metric formula set"):
        metrics_from_vectors_document({"not": "read"}, "")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"initial": [1, 0], "final": [1, 0, 1]}, "sequence 'run-7': field 'final' has 3 entries but 'initial' has 2"),
        ({"initial": [1, 0], "steps": [3]}, "sequence 'run-7': field 'steps' has 1 entries"),
        ({"initial": [1, 0], "steps": [3, -1]}, "sequence 'run-7': field 'steps' entry 1 (task t2) is -1"),
        ({"initial": [1, 0], "difficulty": [0, 1]}, "sequence 'run-7': field 'difficulty' entry 0 (task t1) is 0"),
        ({"initial": [1, 3]}, "sequence 'run-7': field 'initial' entry 1 is 3"),
        ({"initial": []}, "sequence 'run-7': field 'initial' must be a non-empty list"),
        ({"initial": (1, 0)}, "sequence 'run-7': field 'initial' must be a non-empty list"),
        ({"initial": [1], "rows": {1: [2]}}, "sequence 'run-7': field 'rows[1]' entry 0 is 2"),
    ],
)
def test_sequence_outcomes_validates_on_construction(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SweclError) as caught:
        SequenceOutcomes(name="run-7", **kwargs)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_sequence_outcomes_accepts_bool_outcomes_and_needs_a_name() -> None:
    # Projections fold `resolved` flags, which are bools: True/False are 1/0.
    seq = SequenceOutcomes(name="b", initial=[True, False, None], steps=[1, 0, None])
    assert seq.n_tasks == 3 and seq.final_or_initial is seq.initial
    with pytest.raises(SweclError, match="sequence name ''"):
        SequenceOutcomes(name="", initial=[1])
