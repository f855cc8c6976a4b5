"""What every benchmark shares: results, the run context, timing, the summary table, saving."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass
class Result:
    """One measured number: `value` in `unit`, and `ratio` to a reference measured in the
    same run (what it is: `reference`). `target` states the goal ("ratio >= 2", "value <=
    50 ms"); `ok` is whether it was met (None: no target, or the reference is missing)."""

    name: str
    value: float | None
    unit: str
    ratio: float | None
    target: str | None
    ok: bool | None
    reference: str = ""

    def row(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": _round(self.value),
            "unit": self.unit,
            "ratio": _round(self.ratio),
            "target": self.target,
            "ok": self.ok,
        }


def _round(x: float | None) -> float | None:
    if x is None:
        return None
    return float(f"{x:.4g}")


def ratio_at_least(ratio: float | None, goal: float) -> tuple[str, bool | None]:
    return f"ratio >= {goal:g}", None if ratio is None else ratio >= goal


def ratio_at_most(ratio: float | None, goal: float) -> tuple[str, bool | None]:
    return f"ratio <= {goal:g}", None if ratio is None else ratio <= goal


def value_at_most(value: float | None, goal: float, unit: str) -> tuple[str, bool | None]:
    return f"value <= {goal:g} {unit}", None if value is None else value <= goal


@dataclass
class Context:
    quick: bool
    cache: Path  # generated ledgers, kept between runs
    work: Path  # this run's scratch space (deleted at the end)
    details: dict[str, Any] = field(default_factory=dict)
    verbose: bool = True

    def log(self, message: str) -> None:
        if self.verbose:
            print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def best_of(fn: Callable[[], Any], reps: int) -> tuple[float, list[float], Any]:
    """(fastest, every sample, last result): the fastest run is the one least disturbed
    by whatever else the machine was doing."""
    samples: list[float] = []
    out: Any = None
    for _ in range(reps):
        seconds, out = timed(fn)
        samples.append(seconds)
    return min(samples), samples, out


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def size_label(events: int) -> str:
    if events >= 1_000_000 and events % 1_000_000 == 0:
        return f"{events // 1_000_000}m"
    if events >= 1000:
        return f"{round(events / 1000):d}k"
    return str(events)


# -- output -------------------------------------------------------------------------------


def _fmt(x: float | None) -> str:
    if x is None:
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if abs(x) >= 0.01:
        return f"{x:.3g}"
    return f"{x:.2g}"


def summary_table(results: list[Result], meta: dict[str, Any]) -> str:
    head = (
        f"Benchmarks ({'quick' if meta.get('quick') else 'full'} run, {meta.get('date', '')}; "
        f"{meta.get('machine', '')}). Ratios are to a reference measured in the same run.\n\n"
    )
    lines = [
        "| benchmark | value | unit | ratio | ratio is | target | met |",
        "|---|---:|---|---:|---|---|:---:|",
    ]
    for r in results:
        met = "n/a" if r.ok is None else ("yes" if r.ok else "**no**")
        lines.append(
            f"| {r.name} | {_fmt(r.value)} | {r.unit} | {_fmt(r.ratio)} | {r.reference} | {r.target or '-'} | {met} |"
        )
    return head + "\n".join(lines) + "\n"


def document(results: list[Result], details: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    return {"results": [r.row() for r in results], "details": details, "meta": meta}


def machine_meta(quick: bool, seconds: float) -> dict[str, Any]:
    import msgspec

    from ledger.sqlite import library_versions

    sqlite = library_versions()
    return {
        "quick": quick,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "seconds": round(seconds, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}, SQLite {sqlite['sqlite']} (apsw)",
        **sqlite,
        "msgspec": msgspec.__version__,
        "git": _git_sha(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def _git_sha() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).resolve().parent,
            capture_output=True, text=True, timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def save(doc: dict[str, Any], table: str, folder: Path, quick: bool) -> list[Path]:
    """`latest.json` and `SUMMARY.md` for a full run, `quick.json` for a quick one."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    name = "quick.json" if quick else "latest.json"
    path = folder / name
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    written.append(path)
    if not quick:
        summary = folder / "SUMMARY.md"
        summary.write_text(table, encoding="utf-8")
        written.append(summary)
    return written
