"""SWE-bench rows: reading them (JSON, JSONL, parquet, the Hub) and what they fill in.

A row is one task as SWE-bench publishes it (`princeton-nlp/SWE-bench_Verified`):
instance_id, repo, base_commit, patch, test_patch, problem_statement, hints_text,
created_at, version, FAIL_TO_PASS, PASS_TO_PASS (JSON strings there), difficulty.
Rows complete a manifest that has only ids and order, or, given alone, become a
curriculum by SWE-Bench-CL's own construction rule (`sequences_from_rows`).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graders import MAX_PARQUET_BYTES, check_input_file
from ledger.errors import SweclError

from ._model import DIFFICULTY_LABELS
from ._validate import describe_validation_error, parse_json, read_text

if TYPE_CHECKING:
    from ._schemas import SwebenchRow

__all__ = [
    "load_hf",
    "modified_files_of",
    "read_rows",
    "row_fields",
    "rows_from_records",
    "sequences_from_rows",
]

# SWE-Bench-CL's construction rule (scripts/SWE-Bench-CL_dataset_construction): repos
# with at least this many Verified tasks become sequences, each cut to this length.
MIN_TASKS_PER_SEQUENCE = 15
MAX_SEQUENCE_LENGTH = 50

_DIFF_FILE = re.compile(r"^diff --git a/(.*?) b/", re.MULTILINE)


def modified_files_of(patch: str | None) -> list[str]:
    """Files a patch touches, as SWE-Bench-CL derives `modified_files`."""
    return _DIFF_FILE.findall(patch) if patch else []


def _validate_row(record: Any, place: str) -> SwebenchRow:
    if not isinstance(record, dict):
        raise SweclError(f"{place}: expected an object with SWE-bench columns, got {type(record).__name__}")
    instance = record.get("instance_id")
    if isinstance(instance, str):
        place += f" ({instance!r})"
    from ._schemas import SwebenchRow, ValidationError  # pydantic off the start-up path (see _schemas)

    try:
        return SwebenchRow.model_validate(record)
    except ValidationError as exc:
        raise SweclError(f"{place}: {describe_validation_error(exc)}") from None


def _refuse_duplicates(rows: list[SwebenchRow], numbers: list[int], label: str, where: str) -> None:
    seen: dict[str, int] = {}
    for row, number in zip(rows, numbers):
        if row.instance_id in seen:
            raise SweclError(
                f"{label}: {where} {number} ({row.instance_id!r}): instance_id: "
                f"duplicate of {where} {seen[row.instance_id]}"
            )
        seen[row.instance_id] = number


def rows_from_records(records: list[Any], label: str) -> list[SwebenchRow]:
    """Validate records (errors name the 1-based row); duplicate instance ids refused."""
    rows = [_validate_row(record, f"{label}: row {n}") for n, record in enumerate(records, start=1)]
    _refuse_duplicates(rows, list(range(1, len(rows) + 1)), label, "row")
    return rows


def _read_jsonl(path: Path, label: str) -> list[SwebenchRow]:
    rows: list[SwebenchRow] = []
    numbers: list[int] = []
    for number, line in enumerate(read_text(path, label).splitlines(), start=1):
        if not line.strip():
            continue
        record = parse_json(line, f"{label}: line {number}")
        rows.append(_validate_row(record, f"{label}: line {number}"))
        numbers.append(number)
    _refuse_duplicates(rows, numbers, label, "line")
    return rows


def _read_parquet(path: Path, label: str) -> list[SwebenchRow]:
    try:
        import polars as pl
    except ImportError:  # pragma: no cover - polars is a dependency
        raise SweclError(f"{label}: reading parquet needs the polars package") from None
    check_input_file(path, label, MAX_PARQUET_BYTES)  # polars opens it: refuse devices, FIFOs, huge files first
    try:
        records = pl.read_parquet(path).to_dicts()
    except Exception as exc:  # polars raises many kinds; all mean "not readable parquet"
        raise SweclError(f"{label}: not a readable parquet file: {_first_line(exc)}") from None
    return rows_from_records(records, label)


def read_rows(source: str) -> tuple[list[SwebenchRow], str]:
    """Rows from `hf:NAME[:SPLIT]` or a JSON list / JSONL / parquet file, and their label."""
    if source.startswith("hf:"):
        loaded = load_hf(source)
        if isinstance(loaded, dict):
            raise SweclError(f"{source}: holds a curriculum, not SWE-bench rows; pass it as --dataset")
        return rows_from_records(loaded, source), source
    path = Path(source)
    if path.is_dir():
        raise SweclError(f"{source}: is a directory; --rows takes a JSON, JSONL or parquet file of SWE-bench rows")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _read_parquet(path, source), source
    if suffix in (".jsonl", ".ndjson"):
        return _read_jsonl(path, source), source
    document = parse_json(read_text(path, source), source)
    if isinstance(document, list):
        return rows_from_records(document, source), source
    if isinstance(document, dict) and "sequences" in document:
        raise SweclError(f"{source}: is a curriculum, not SWE-bench rows; pass it as --dataset")
    raise SweclError(f"{source}: expected a JSON list of SWE-bench rows (or JSONL / parquet), got {type(document).__name__}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def load_hf(source: str) -> list[dict[str, Any]] | dict[str, Any]:
    """Records of a Hugging Face dataset (`hf:NAME[:SPLIT]`), or its one curriculum object.

    A curriculum published as one JSON document (SWE-Bench-CL) arrives as a single row
    with a `sequences` column; that row is returned as the document itself.
    """
    spec = source[len("hf:"):]
    name, _, split = spec.partition(":")
    if not name or name.count("/") != 1:
        raise SweclError(f"{source}: expected hf:OWNER/NAME or hf:OWNER/NAME:SPLIT")
    offline = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("HF_DATASETS_OFFLINE")
    try:
        import datasets
    except ImportError:  # pragma: no cover - datasets is a dependency
        raise SweclError(f"{source}: loading from the Hub needs the `datasets` package") from None
    try:
        loaded = datasets.load_dataset(name, split=split or None)
    except Exception as exc:  # network, auth, missing repo: all end the same way for users
        hint = (
            f"HF_HUB_OFFLINE={offline} and it is not in the local cache"
            if offline
            else "this machine may not reach the Hugging Face Hub"
        )
        raise SweclError(
            f"{source}: cannot load the dataset ({hint}; {_first_line(exc)}); download it on a "
            "machine that reaches the Hub and pass the file instead"
        ) from None
    if isinstance(loaded, datasets.DatasetDict):
        splits = list(loaded)
        chosen = "test" if "test" in loaded else (splits[0] if len(splits) == 1 else None)
        if chosen is None:
            raise SweclError(f"{source}: has splits {', '.join(splits)}; name one as hf:{name}:SPLIT")
        loaded = loaded[chosen]
    records = loaded.to_list()
    if len(records) == 1 and isinstance(records[0], dict) and "sequences" in records[0]:
        return records[0]
    return records


def _created_key(row: SwebenchRow) -> tuple[int, Any]:
    # Upstream sorts pandas datetimes; ISO strings of mixed precision sort alike once parsed.
    text = row.created_at
    if text is None:
        return (1, "")
    try:
        stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=dt.timezone.utc)
        return (0, stamp.timestamp())
    except ValueError:
        return (1, text)


def sequences_from_rows(rows: list[SwebenchRow], label: str) -> list[dict[str, Any]]:
    """Draft sequences built from rows by SWE-Bench-CL's construction rule.

    Repos with at least 15 tasks, most tasks first (ties in repo name order); within a
    repo, tasks grouped by difficulty 1..4 (unknown -> 2, as upstream), each group by
    created_at, concatenated and cut to 50. Dependencies: earlier-created tasks of the
    same repo that modified one of the same files.
    """
    by_repo: dict[str, list[SwebenchRow]] = {}
    for row in rows:
        by_repo.setdefault(row.repo, []).append(row)
    repos = sorted((r for r in by_repo if len(by_repo[r]) >= MIN_TASKS_PER_SEQUENCE))
    repos.sort(key=lambda r: len(by_repo[r]), reverse=True)
    if not repos:
        raise SweclError(
            f"{label}: no repository has {MIN_TASKS_PER_SEQUENCE} or more rows, so no "
            "SWE-Bench-CL sequence can be built; pass a curriculum or manifest as --dataset "
            "and these rows as --rows"
        )
    sequences = []
    for repo in repos:
        issues = sorted(by_repo[repo], key=_created_key)
        files = {row.instance_id: modified_files_of(row.patch) for row in issues}
        groups: dict[int, list[SwebenchRow]] = {1: [], 2: [], 3: [], 4: []}
        for row in issues:
            groups[DIFFICULTY_LABELS.get(row.difficulty or "", 2)].append(row)
        ordered = [row for level in (1, 2, 3, 4) for row in groups[level]][:MAX_SEQUENCE_LENGTH]
        tasks = []
        for position, row in enumerate(ordered, start=1):
            earlier = {
                other.instance_id
                for other in issues
                if other.instance_id != row.instance_id
                and _created_key(other) < _created_key(row)
                and set(files[other.instance_id]) & set(files[row.instance_id])
            }
            task = row_fields(row)
            task.update(
                order=position,
                difficulty=DIFFICULTY_LABELS.get(row.difficulty or "", 2),
                dependencies=sorted(earlier),
                modified_files=files[row.instance_id],
            )
            tasks.append(task)
        sequences.append(
            {"id": f"{repo.replace('/', '_')}_sequence", "repo": repo, "environment": None, "tasks": tasks}
        )
    return sequences


def row_fields(row: SwebenchRow) -> dict[str, Any]:
    """The row's values under `Task` field names (None where the row has none)."""
    return {
        "instance_id": row.instance_id,
        "repo": row.repo,
        "base_commit": row.base_commit,
        "difficulty_label": row.difficulty,
        "version": row.version,
        "created_at": row.created_at,
        "problem_statement": row.problem_statement,
        "hints_text": row.hints_text,
        "patch": row.patch,
        "test_patch": row.test_patch,
        "fail_to_pass": row.FAIL_TO_PASS,
        "pass_to_pass": row.PASS_TO_PASS,
        "environment_setup_commit": row.environment_setup_commit,
    }
