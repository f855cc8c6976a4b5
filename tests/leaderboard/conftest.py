"""Real metrics for the leaderboard tests: `swecl metrics --json` of demo runs of the spans
sequence, built once per session. The shared plugin-blank run (every pass), and on a copy
of it a plugin-accum run (the same passes: ranked with it) and a base run (the initial pass
only: ranked apart); the metrics in both formulas (ranked apart too)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.processes import SPANS, swecl, swecl_json
from projections.leaderboard import BoardEntry
from tests.report.conftest import chromium  # noqa: F401 (a fixture: the report tests' headless Chromium)
from tests.shared_runs import copy_of, shared_once, shared_run

DATASET = "0f3c9e1d2b7a4c6e8d0f1a2b3c4d5e6f"  # what a bundle's manifest would carry: the dataset's content hash


@dataclass(frozen=True)
class DemoMetrics:
    """`swecl metrics --json` of one results dir, per formula."""

    documents: dict[str, dict[str, Any]]
    """formula -> the whole metrics document."""

    def version(self, stage: str, formula: str = "native") -> dict[str, Any]:
        (found,) = [v for v in self.documents[formula]["versions"] if v["stage"] == stage]
        return found


@pytest.fixture(scope="session")
def demo_metrics(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> DemoMetrics:
    """Built once per test session, whichever worker asks first (the runs cost some 20 s)."""
    formulas = ("native", "eval-v1")

    def build(folder: Path) -> None:
        results = copy_of(shared_run(tmp_path_factory, cache, "blank-spans"), folder / "results")
        for stage in ("plugin-accum", "base"):
            swecl(results, "run", "--stage", stage, "--sequence", SPANS, "--quiet", cache=cache)
        for f in formulas:
            (folder / f"{f}.json").write_text(json.dumps(swecl_json(results, "metrics", "--formula", f, cache=cache)))

    done = shared_once(tmp_path_factory, "leaderboard-metrics", build)
    return DemoMetrics({f: json.loads((done / f"{f}.json").read_text()) for f in formulas})


def entry(metrics: DemoMetrics, stage: str, *, formula: str = "native", bundle: str | None = None,
          **fields: Any) -> BoardEntry:
    """A board entry as `swecl leaderboard` would make it of one run of a bundle (checked,
    signed) unless `fields` say otherwise."""
    doc = metrics.documents[formula]
    values: dict[str, Any] = dict(
        bundle=bundle or f"{stage}.swecl", metrics=metrics.version(stage, formula), formula=doc["formula"],
        formula_version=doc["formula_version"], dataset=DATASET, dataset_name="swecl-demo", model=None,
        memory_system="none" if stage == "base" else "swecl memory", checked=True,
        check_note="hash chain, metrics re-derived", key="SHA256:" + "ab12" * 11,
        report_href=f"reports/{stage}/index.html", bundle_href=f"bundles/{stage}.swecl")
    values.update(fields)
    return BoardEntry(**values)
