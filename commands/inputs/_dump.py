"""Writing a benchmark back out as a SWE-Bench-CL curriculum that `load_benchmark` reads
back: below the loader, so the demo benchmark (which the loader returns) can write its
own curriculum file without importing the loader."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .._files import write_output
from ._model import Benchmark, Sequence, Task

__all__ = ["dump_curriculum", "write_curriculum"]


def _statistics(sequence: Sequence) -> dict[str, Any]:
    with_dependencies = sum(1 for t in sequence.tasks if t.dependencies)
    return {
        "difficulty_distribution": sequence.difficulty_counts(),
        "tasks_with_dependencies": with_dependencies,
        "dependency_rate": round(100.0 * with_dependencies / len(sequence.tasks), 2),
    }


def _task_document(task: Task, sequence_env: dict[str, Any] | None) -> dict[str, Any]:
    document: dict[str, Any] = {
        "metadata": {
            "instance_id": task.instance_id,
            "repo": task.repo,
            "base_commit": task.base_commit,
            "created_at": task.created_at,
            "difficulty": task.difficulty_label,
            "version": task.version,
            **({"environment_setup_commit": task.environment_setup_commit} if task.environment_setup_commit else {}),
        },
        "task": {"problem_statement": task.problem_statement, "hints_text": task.hints_text},
        "evaluation": {
            "patch": task.patch,
            "test_patch": task.test_patch,
            "FAIL_TO_PASS": None if task.fail_to_pass is None else list(task.fail_to_pass),
            "PASS_TO_PASS": None if task.pass_to_pass is None else list(task.pass_to_pass),
        },
        "continual_learning": {
            "sequence_position": task.order,
            "difficulty_score": task.difficulty,
            "dependencies": list(task.dependencies),
            "modified_files": list(task.modified_files),
        },
    }
    if task.environment != sequence_env:
        document["environment"] = task.environment
    return document


def dump_curriculum(benchmark: Benchmark, *, repo_sources: dict[str, str] | None = None) -> dict[str, Any]:
    """The benchmark as a SWE-Bench-CL curriculum object that `load_benchmark` reads back.

    repo_sources: what to record under metadata.repo_sources (default: the benchmark's).
    """
    sources = benchmark.repo_sources if repo_sources is None else repo_sources
    metadata: dict[str, Any] = {
        "name": benchmark.name,
        "description": benchmark.source,
        "num_sequences": len(benchmark.sequences),
        "total_tasks": len(benchmark.tasks()),
        "repositories": [s.repo for s in benchmark.sequences],
    }
    if sources:
        metadata["repo_sources"] = dict(sorted(sources.items()))
    sequences = []
    for sequence in benchmark.sequences:
        entry: dict[str, Any] = {
            "id": sequence.id,
            "repo": sequence.repo,
            "num_tasks": len(sequence.tasks),
            "statistics": _statistics(sequence),
        }
        if sequence.environment is not None:
            entry["environment"] = sequence.environment
        entry["tasks"] = [_task_document(t, sequence.environment) for t in sequence.tasks]
        sequences.append(entry)
    return {"metadata": metadata, "sequences": sequences}


def write_curriculum(benchmark: Benchmark, path: str | os.PathLike[str], *, repo_sources: dict[str, str] | None = None) -> Path:
    """Write `dump_curriculum` as indented UTF-8 JSON (same content -> same bytes)."""
    target = Path(path)
    text = json.dumps(dump_curriculum(benchmark, repo_sources=repo_sources), indent=2, ensure_ascii=False) + "\n"
    write_output(target, text.encode("utf-8"))  # atomic; a full disk is one line and leaves nothing
    return target
