"""`swecl export`: a run's results in formats other tools read.

- `predictions`: SWE-bench predictions JSONL (`instance_id`, `model_name_or_path`,
  `model_patch`), one line per task of one pass (default initial) in plan order, the
  patch of the attempt in force (the latest attempt: the one the a(i,j) cell scores).
  `model_name_or_path` is `swecl/{agent}/{model}/v{V}` (`default` when the run recorded
  no model). A task that never got as far as an agent result is left out and counted
  as missing; an agent that produced no patch gives `""`, the empty prediction.
- `events`: the run's events (`run/{V}` and every `run/{V}/{sequence}` stream; a fork's
  tasks before K from its source's streams, as `read_run` splices them) as JSON lines,
  each exactly what `swecl log --json` prints. Blobs are not inlined by default
  (payloads carry their sha256); with `with_blobs` each line gains `"blobs": {sha256:
  {"size", "text"}}` (or `"base64"` for bytes that are not UTF-8) for the blobs it refers to.
- `parquet`: the same events as one table, one row per event (see `EVENT_COLUMNS`):
  the envelope columns, the common payload keys promoted to typed columns (sequence_id,
  instance_id, order, pass, attempt: null where an event has none) so per-task analysis
  is a `filter`/`group_by` away, and the whole payload as JSON text for anything else
  (`pl.col("payload").str.json_path_match("$.status")`).

`--pass P` keeps, for events and parquet, only events of that pass (events without one,
like run.started, are dropped); for predictions it picks the pass.

- `atif`: one ATIF trajectory per attempt, written to a directory (`projections.atif`).
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from ledger import Ledger, Recorded, SweclError, blob_refs_of

from ._fork import read_run
from ._outcomes import outcome_projection
from ._runs import run_started_record
from ._runner import Projector

FORMATS = ("predictions", "events", "parquet", "atif")

# The typed columns of the parquet table, in order (polars dtype names).
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("seq", "Int64"),
    ("event_id", "String"),
    ("stream", "String"),
    ("stream_version", "Int64"),
    ("type", "String"),
    ("schema", "Int64"),
    ("time", "Datetime(us, UTC)"),
    ("run", "String"),
    ("sequence_id", "String"),
    ("instance_id", "String"),
    ("order", "Int64"),
    ("pass", "String"),
    ("attempt", "Int64"),
    ("payload", "String"),
    ("hash", "String"),
)


@dataclass(frozen=True)
class ExportReport:
    version: str
    format: str
    out: str
    rows: int
    missing: tuple[str, ...] = ()  # predictions: tasks of the plan with no agent result

    def lines(self) -> list[str]:
        what = {"predictions": "prediction(s)", "events": "event(s)", "parquet": "row(s)",
                "atif": "trajectory file(s)"}[self.format]
        head = f"exported {self.rows} {what} of v{self.version} to {self.out}"
        if self.missing:
            more = f" and {len(self.missing) - 3} more" if len(self.missing) > 3 else ""
            head += f"; missing {len(self.missing)} task(s) with no agent result ({', '.join(self.missing[:3])}{more})"
        return [head]


# -- predictions ---------------------------------------------------------------------------


def model_name_or_path(agent: str, model: str | None, version: str) -> str:
    return f"swecl/{agent}/{model or 'default'}/v{version}"


def predictions(ledger: Ledger, version: str, pass_: str = "initial") -> tuple[list[dict[str, str]], list[str]]:
    """(predictions in plan order, instance ids of the plan that have none)."""
    started = run_started_record(ledger, version, doing="export").event
    state = Projector(ledger).run(outcome_projection(ledger, version)).state
    # The agent result of each (sequence, order, attempt) of the pass.
    patches: dict[tuple[str, int, int], str | None] = {}
    for rec in read_run(ledger, version, ["agent.finished"]):  # a fork's tasks before K: its source's
        ev = rec.event
        if ev.pass_ == pass_:
            patches[(ev.sequence_id, ev.order, ev.attempt)] = ev.patch
    name = model_name_or_path(started.agent, started.model, version)
    out: list[dict[str, str]] = []
    missing: list[str] = []
    seen: dict[str, str] = {}
    for sequence_id, cells in state.sequences.items():
        for task in cells.plan:
            cell = cells.passes.get(pass_, {}).get(task.order)
            key = (sequence_id, task.order, cell.attempt) if cell is not None else None
            if key is None or key not in patches:
                missing.append(task.instance_id)
                continue
            if task.instance_id in seen:
                raise SweclError(
                    f"task {task.instance_id!r} is in sequences {seen[task.instance_id]!r} and {sequence_id!r} of "
                    f"v{version}; a predictions file holds one patch per instance_id"
                )
            seen[task.instance_id] = sequence_id
            digest = patches[key]
            text = ledger.get_blob(digest).decode("utf-8", errors="replace") if digest else ""
            out.append({"instance_id": task.instance_id, "model_name_or_path": name, "model_patch": text})
    return out, missing


# -- events --------------------------------------------------------------------------------


def event_record(rec: Recorded) -> dict[str, Any]:
    """One event as `swecl log --json` prints it."""
    payload = msgspec.to_builtins(rec.event)
    if isinstance(payload, dict):
        payload.pop("type", None)
    return {
        "seq": rec.seq,
        "event_id": rec.event_id,
        "stream": rec.stream,
        "stream_version": rec.stream_version,
        "type": rec.type,
        "schema": rec.schema,
        "time": rec.time,
        "payload": payload,
        "hash": bytes(rec.hash).hex(),
    }


def _blob_entry(data: bytes) -> dict[str, Any]:
    try:
        return {"size": len(data), "text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"size": len(data), "base64": base64.b64encode(data).decode("ascii")}


def run_events(ledger: Ledger, version: str, pass_: str | None = None) -> Iterator[Recorded]:
    """The run's events in seq order (only those of `pass_` when given); a fork's tasks
    before K are its source's events, in its source's streams (`read_run`)."""
    run_started_record(ledger, version, doing="export")
    for rec in read_run(ledger, version):
        if pass_ is not None and getattr(rec.event, "pass_", None) != pass_:
            continue
        yield rec


def event_records(
    ledger: Ledger, version: str, pass_: str | None = None, *, with_blobs: bool = False
) -> Iterator[dict[str, Any]]:
    for rec in run_events(ledger, version, pass_):
        row = event_record(rec)
        if with_blobs:
            refs = blob_refs_of(rec.event)
            if refs:
                row["blobs"] = {ref: _blob_entry(ledger.get_blob(ref)) for ref in refs if ledger.has_blob(ref)}
        yield row


def _dump_line(obj: Any) -> str:
    # Separators and escaping as `swecl log --json` (echo_json_line) writes them.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


# -- parquet -------------------------------------------------------------------------------


def events_frame(ledger: Ledger, version: str, pass_: str | None = None):  # type: ignore[no-untyped-def]
    """The run's events as a polars DataFrame with `EVENT_COLUMNS`."""
    import polars as pl

    columns: dict[str, list[Any]] = {name: [] for name, _ in EVENT_COLUMNS}
    for rec in run_events(ledger, version, pass_):
        row = event_record(rec)
        payload = row["payload"] if isinstance(row["payload"], dict) else {}
        parts = rec.stream.split("/")
        columns["seq"].append(rec.seq)
        columns["event_id"].append(rec.event_id)
        columns["stream"].append(rec.stream)
        columns["stream_version"].append(rec.stream_version)
        columns["type"].append(rec.type)
        columns["schema"].append(rec.schema)
        columns["time"].append(rec.time)
        columns["run"].append(parts[1] if len(parts) >= 2 else None)
        for key in ("sequence_id", "instance_id", "order", "pass", "attempt"):
            value = payload.get(key)
            columns[key].append(value if isinstance(value, str | int) and not isinstance(value, bool) else None)
        columns["payload"].append(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
        columns["hash"].append(row["hash"])
    schema = {
        "seq": pl.Int64, "event_id": pl.String, "stream": pl.String, "stream_version": pl.Int64, "type": pl.String,
        "schema": pl.Int64, "time": pl.String, "run": pl.String, "sequence_id": pl.String,
        "instance_id": pl.String, "order": pl.Int64, "pass": pl.String, "attempt": pl.Int64,
        "payload": pl.String, "hash": pl.String,
    }
    frame = pl.DataFrame(columns, schema=schema)
    return frame.with_columns(
        pl.col("time").str.to_datetime("%Y-%m-%dT%H:%M:%S%.fZ", time_unit="us", time_zone="UTC")
    )


def parquet_bytes(frame: Any) -> bytes:
    """The frame as a parquet file, in memory (see `commands._files.write_output`)."""
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


def export_lines(
    ledger: Ledger, version: str, fmt: str, *, pass_: str | None = None, with_blobs: bool = False
) -> tuple[Iterator[str], tuple[str, ...]]:
    """The lines of `fmt` ("predictions" or "events"), lazily, and for predictions the
    instance ids of the plan that have none (known before the first line)."""
    if fmt == "predictions":
        rows, missing = predictions(ledger, version, pass_ or "initial")
        return (_dump_line(r) for r in rows), tuple(missing)
    return (_dump_line(r) for r in event_records(ledger, version, pass_, with_blobs=with_blobs)), ()
