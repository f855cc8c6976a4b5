"""`python -m bench [--quick] [--json] [--only NAME]`: run the benchmarks, print and save the results."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from . import _append, _demo, _grading, _peak_memory, _provider, _rebuild, _replay, _scheduling, _validation
from ._core import RESULTS_DIR, Context, Result, document, machine_meta, save, summary_table
from ._synth import cache_dir

BENCHMARKS: dict[str, Callable[[Context], list[Result]]] = {
    "append": _append.run,
    "rebuild": _rebuild.run,
    "replay": _replay.run,
    "memory": _peak_memory.run,
    "grading": _grading.run,
    "scheduling": _scheduling.run,
    "provider": _provider.run,
    "demo": _demo.run,
    "validation": _validation.run,
}
"""Benchmark groups by name (`--only`), in the order they run."""


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="swecl benchmarks: ledger appends, projection rebuilds, replay, memory, grading, scheduling, memory-server overhead, the demo suite's wall time, a warm validation of real tasks",
    )
    parser.add_argument("--quick", action="store_true", help="scaled-down sizes (CI smoke run, under a minute)")
    parser.add_argument("--json", action="store_true", help='print {"results": [...]} as JSON on stdout')
    parser.add_argument(
        "--only", action="append", default=[], metavar="NAME",
        help=f"run only this benchmark (repeatable, or comma-separated): {', '.join(BENCHMARKS)}",
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR,
                        help="where latest.json / quick.json and SUMMARY.md go (default: bench/results)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="generated ledgers, reused between runs (default: $SWECL_BENCH_CACHE or bench/.cache)")
    parser.add_argument("--no-save", action="store_true", help="print only; write no results file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    chosen = [n.strip() for item in args.only for n in item.split(",") if n.strip()] or list(BENCHMARKS)
    unknown = [n for n in chosen if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark {', '.join(unknown)}: choose from {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="swecl-bench-"))
    ctx = Context(quick=args.quick, cache=cache_dir(args.cache_dir), work=work)
    results: list[Result] = []
    failed: dict[str, str] = {}
    try:
        for name in chosen:
            ctx.log(f"== {name}")
            try:
                results.extend(BENCHMARKS[name](ctx))
            except Exception as exc:  # one broken benchmark must not hide the others' numbers
                failed[name] = f"{type(exc).__name__}: {exc}"
                ctx.log(f"{name} FAILED:\n{traceback.format_exc()}")
                results.append(Result(name, None, "", None, None, False, reference=f"failed: {exc}"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    meta = machine_meta(args.quick, time.perf_counter() - start)
    meta["benchmarks"] = chosen
    if failed:
        ctx.details["failed"] = failed
    doc = document(results, ctx.details, meta)
    table = summary_table(results, meta)
    if not args.no_save:
        for path in save(doc, table, args.results_dir, args.quick):
            ctx.log(f"wrote {path}")
    if args.json:
        print(json.dumps(doc))
    else:
        print(table)
    return 1 if failed else 0
