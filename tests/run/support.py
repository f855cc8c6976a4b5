"""Running the real `swecl` CLI in subprocesses against real ledgers, as users do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw

REPO_ROOT = Path(__file__).resolve().parents[2]
SPANS = "swecl-demo_spans_sequence"
INICONF = "swecl-demo_iniconf_sequence"
TEXTKIT = "swecl-demo_textkit_sequence"


def swecl(results: Path, *args: str, cache: Path, env: dict[str, str] | None = None,
          timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
    inherited = {k: v for k, v in os.environ.items() if k not in ("SWECL_FAILPOINTS", "SWECL_RESULTS")}
    full_env = {**inherited, "SWECL_CACHE": str(cache), "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "commands", "--results", str(results), *args],
        capture_output=True, text=True, env=full_env, timeout=timeout, cwd=REPO_ROOT,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"swecl {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def swecl_json(results: Path, *args: str, cache: Path) -> Any:
    return json.loads(swecl(results, *args, "--json", cache=cache).stdout)


def events(results: Path, *types: str) -> list[tuple[int, str, str, dict[str, Any]]]:
    """(seq, stream, type, payload) straight from the SQLite file, read-only."""
    conn = apsw.Connection(str(results / "ledger.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        sql = "SELECT seq, stream, type, payload FROM events"
        if types:
            sql += f" WHERE type IN ({','.join('?' * len(types))})"
        rows = conn.execute(sql + " ORDER BY seq", types).fetchall()
    finally:
        conn.close()
    return [(seq, stream, type_, json.loads(payload)) for seq, stream, type_, payload in rows]


def finished_cells(results: Path, version: str) -> list[tuple[str, str, int]]:
    """(sequence, pass, order) of every task.finished of a run, with repeats kept."""
    prefix = f"run/{version}/"
    return [
        (p["sequence_id"], p["pass"], p["order"])
        for _, stream, _, p in events(results, "task.finished")
        if stream.startswith(prefix)
    ]
