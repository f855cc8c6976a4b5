"""`swecl check --regrade`: every patch a bundle's runs recorded, graded again on this host.

The patch of each task's attempt in force, per run and pass (what the metrics count), is
graded by `swecl grade` into a scratch results folder, from the task rows the bundle
carries, in environments built afresh (a scratch cache unless `--cache-dir` names one)
and repositories from `--repo-source`, else their usual source (the demo's own, built on
the spot; GitHub for SWE-bench's). A patch recorded for several runs or passes is graded
once. Each task then agrees (the same verdict), disagrees (another verdict: the
recorded grade or this host is wrong, and the check fails) or is infrastructure (this
host could not grade it, or the recorded grade was not a verdict: never counted against
the bundle).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger import SweclError


@dataclass(frozen=True)
class TaskAgreement:
    run: str
    pass_: str
    instance_id: str
    recorded: str
    regraded: str
    agreement: str  # same | different | infrastructure | not graded


@dataclass
class Regraded:
    tasks: list[TaskAgreement] = field(default_factory=list)
    grades: int = 0  # grades run (distinct patches)
    # env_key -> "same lock" | "another lock" | "not rebuilt here": each recorded lock
    # against the environment this host built for the regrade
    environments: dict[str, str] = field(default_factory=dict)

    @property
    def agrees(self) -> bool:
        return not any(t.agreement == "different" for t in self.tasks)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tasks:
            out[t.agreement] = out.get(t.agreement, 0) + 1
        return out

    def document(self) -> dict[str, Any]:
        return {"agrees": self.agrees, "grades": self.grades, "counts": self.counts(),
                "tasks": [{"run": t.run, "pass": t.pass_, "instance_id": t.instance_id, "recorded": t.recorded,
                           "regraded": t.regraded, "agreement": t.agreement} for t in self.tasks],
                "environments": self.environments}


def _agreement(recorded: str, regraded: str) -> str:
    from ledger.events import GradeStatus

    def status(s: str) -> GradeStatus | None:
        try:
            return GradeStatus(s)
        except ValueError:
            return None

    before, now = status(recorded), status(regraded)
    if before is None or not before.scored:
        return "not graded" if before in (GradeStatus.AGENT_ERROR, GradeStatus.UNGRADED, None) else "infrastructure"
    if now is None or not now.scored:
        return "infrastructure"
    return "same" if before.resolved == now.resolved else "different"


def _graded(recorded: str) -> bool:
    """Whether a recorded status stands for a grade worth making again: not an attempt
    the agent never finished (agent_error, ungraded, missing)."""
    return _agreement(recorded, recorded) != "not graded"


def _demo_sources(rows: Sequence[tuple[dict[str, Any], Path]], scratch: Path) -> dict[str, str]:
    """The demo's repositories, built on the spot, when a bundled dataset is the demo."""
    from .inputs import demo_benchmark

    if not any(part.get("name") == "demo" for part, _ in rows):
        return {}
    return dict(demo_benchmark(scratch / "demo-repos").repo_sources)


def _rounds(patches: dict[str, list[str]]) -> list[dict[str, str]]:
    """Predictions files that grade each distinct patch of an instance once: round k holds
    each instance's k-th distinct patch."""
    depth = max((len(p) for p in patches.values()), default=0)
    return [{iid: ps[k] for iid, ps in patches.items() if k < len(ps)} for k in range(depth)]


def regrade_bundle(folder_of: Callable[[Path], Any], bundle_dir: Path, runs: Sequence[str], rows: Sequence[tuple[dict[str, Any], Path]], *,
                   repo_sources: Mapping[str, str], cache_dir: str | None, jobs: int,
                   python_paths: Mapping[str, str], locks: Mapping[str, bytes] | None = None,
                   say: Callable[[str], object] = lambda line: None) -> Regraded:
    """Grade again every bundled run's patches (see the module doc). `bundle_dir` holds the
    bundle as its ledger.db; `rows` are the checked task rows, one file per dataset."""
    from projections import pass_statuses, predictions
    from projections import runs as list_runs

    source = folder_of(bundle_dir)
    wanted: list[tuple[str, str, str, str, str]] = []  # run, pass, instance, recorded status, patch
    with source.reading() as r:
        known = list_runs(r.ledger, r.projector)
        for v in runs:
            for p in known[v].passes:
                statuses = pass_statuses(r.ledger, r.projector, v, p)
                found, _ = predictions(r.ledger, v, p)
                for row in found:
                    wanted.append((v, p, row["instance_id"], statuses.get(row["instance_id"], "missing"),
                                   row["model_patch"]))
    dataset_of = {v: path for part, path in rows for v in part.get("runs", [])}
    name_of = {path: str(part.get("name")) for part, path in rows}
    result = Regraded()
    with tempfile.TemporaryDirectory(prefix="swecl-regrade-") as tmp:
        scratch = Path(tmp)
        sources = {**_demo_sources(rows, scratch), **repo_sources}
        cache = cache_dir or str(scratch / "cache")
        grader = folder_of(scratch / "results")
        verdicts: dict[tuple[Path, str, str], str] = {}
        for dataset in sorted({dataset_of[v] for v in runs}):
            patches: dict[str, list[str]] = {}
            for v, _, iid, recorded, patch in wanted:
                if dataset_of[v] == dataset and _graded(recorded):
                    patches.setdefault(iid, [])
                    if patch not in patches[iid]:
                        patches[iid].append(patch)
            rounds = _rounds(patches)
            for k, round_ in enumerate(rounds):
                say(f"grading {len(round_)} patch{'es' if len(round_) != 1 else ''} again (round {k + 1} of "
                    f"{len(rounds)}, {name_of[dataset]})")
                preds = scratch / f"predictions-{dataset.stem}-{k}.jsonl"
                preds.write_text("".join(json.dumps({"instance_id": iid, "model_name_or_path": "bundle",
                                                     "model_patch": patch}) + "\n" for iid, patch in round_.items()))
                graded = grader.grade(predictions=preds, dataset=str(dataset), repo_sources=sources,
                                      cache_dir=cache, python_paths=python_paths, jobs=jobs,
                                      version=f"regrade-{dataset.stem}-{k + 1}")
                result.grades += len(round_)
                for iid, status in graded.statuses.items():
                    verdicts[(dataset, iid, round_[iid])] = status
        for key, lock in (locks or {}).items():
            try:
                here = (Path(cache) / "envs" / key / "lock.txt").read_bytes()
            except OSError:
                result.environments[key] = "not rebuilt here"
                continue
            result.environments[key] = "same lock" if here == lock else "another lock"
        for v, p, iid, recorded, patch in wanted:
            now = verdicts.get((dataset_of[v], iid, patch), "not graded")
            agreement = _agreement(recorded, now) if now != "not graded" else "not graded"
            result.tasks.append(TaskAgreement(v, p, iid, recorded, now, agreement))
    if not result.tasks:
        raise SweclError("the bundle's runs recorded no patch to grade again")
    return result
