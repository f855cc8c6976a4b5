"""Benchmark 4: peak memory of a full rebuild grows with the state, not with the events.

Three ledgers, each rebuilt (`projections._rebuild.rebuild`) in a fresh interpreter:

- small: R whole runs, one attempt per task (~100k events);
- same state, many more events: the same R runs, but every task fails over several
  times (task.started, recall, agent.finished crashed, task.abandoned) before its last
  attempt. The final state is the same (an abandoned attempt leaves no cell, a recall
  only bumps a counter); the events are ~6x as many;
- growing state: the 1M-event ledger of the rebuild benchmark (~10x the runs, so ~10x
  the state).

For each: the Python heap's peak during the rebuild (tracemalloc, in its own child
process) and the growth of the peak RSS (another child, without tracemalloc, whose
bookkeeping would inflate it), and the size of the resulting state (msgpack bytes of
runs, outcomes and memory). The claim holds if the peak stays put from small to
same-state (ratio <= 1.25 while the events grew ~6x) and grows no faster than the state
from small to growing-state (peak ratio / state ratio <= 1.25).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

from ._core import Context, Result, ratio_at_most
from ._rebuild import big_spec, ledger_for
from ._synth import LedgerSpec

TARGET = 1.25


def specs(quick: bool) -> tuple[LedgerSpec, LedgerSpec, LedgerSpec]:
    if quick:
        return (
            LedgerSpec("mem", runs=8, attempts=1, task_scale=0.1),
            LedgerSpec("mem", runs=8, attempts=8, task_scale=0.1),
            big_spec(True),
        )
    return LedgerSpec("mem", runs=28, attempts=1), LedgerSpec("mem", runs=28, attempts=8), big_spec(False)


def measure(path: Path, mode: str) -> dict[str, Any]:
    """In this process: rebuild the ledger at `path` and report the peak (see the module doc)."""
    import msgspec

    from ledger import Ledger
    from projections import rebuild

    with Ledger.open(path, readonly=True) as ledger:
        gc.collect()
        if mode == "trace":
            import tracemalloc

            tracemalloc.start()
            rebuilt = rebuild(ledger)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            out: dict[str, Any] = {"peak_bytes": peak}
        else:
            before = _high_water_rss()
            rebuilt = rebuild(ledger)
            after = _high_water_rss()
            out = {"rss_before": before, "rss_peak": after, "rss_growth": after - before}
        out["state_bytes"] = len(msgspec.msgpack.encode([rebuilt.runs, rebuilt.outcomes, rebuilt.memory]))
        out["rows"] = rebuilt.rows
    return out


def _high_water_rss() -> int:
    """This process's peak RSS in bytes: VmHWM (reset by exec, unlike getrusage's
    ru_maxrss, which a child inherits from the parent that forked it), else ru_maxrss."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _child(path: Path, mode: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench._peak_memory", "--ledger", str(path), "--mode", mode],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1], timeout=3600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"peak-memory child failed ({mode}, {path.name}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(ctx: Context) -> list[Result]:
    small_spec, same_spec, grow_spec = specs(ctx.quick)
    measured: dict[str, dict[str, Any]] = {}
    for role, spec in (("small", small_spec), ("same_state", same_spec), ("growing_state", grow_spec)):
        gen = ledger_for(ctx, spec)
        traced = _child(gen.path, "trace")
        rss = _child(gen.path, "rss")
        measured[role] = {"events": gen.events, "runs": len(gen.runs), **traced, **rss}
        ctx.log(f"peak memory {role}: {gen.events:,} events, state {traced['state_bytes'] / 2**20:.1f} MiB, "
                f"traced peak {traced['peak_bytes'] / 2**20:.1f} MiB, RSS growth {rss['rss_growth'] / 2**20:.1f} MiB")
    small, same, grow = measured["small"], measured["same_state"], measured["growing_state"]
    same_ratio = same["peak_bytes"] / small["peak_bytes"]
    grow_peak_ratio = grow["peak_bytes"] / small["peak_bytes"]
    grow_state_ratio = grow["state_bytes"] / small["state_bytes"]
    ctx.details["peak_memory"] = {
        **measured,
        "events_ratio_same_state": round(same["events"] / small["events"], 2),
        "events_ratio_growing_state": round(grow["events"] / small["events"], 2),
        "state_ratio_same_state": round(same["state_bytes"] / small["state_bytes"], 3),
        "state_ratio_growing_state": round(grow_state_ratio, 3),
        "peak_ratio_same_state": round(same_ratio, 3),
        "peak_ratio_growing_state": round(grow_peak_ratio, 3),
        "rss_growth_ratio_same_state": round(same["rss_growth"] / max(small["rss_growth"], 1), 3),
        "rss_growth_ratio_growing_state": round(grow["rss_growth"] / max(small["rss_growth"], 1), 3),
    }
    t1, ok1 = ratio_at_most(same_ratio, TARGET)
    t2, ok2 = ratio_at_most(grow_peak_ratio / grow_state_ratio, TARGET)
    return [
        Result("peak_memory_same_state", same["peak_bytes"] / 2**20, "MiB", same_ratio, t1, ok1,
               reference=f"peak at {small['events']:,} events, same state ({same['events']:,} events here)"),
        Result("peak_memory_growing_state", grow["peak_bytes"] / 2**20, "MiB", grow_peak_ratio / grow_state_ratio, t2, ok2,
               reference=f"(peak ratio {grow_peak_ratio:.1f}x) / (state ratio {grow_state_ratio:.1f}x) vs the small ledger"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description="peak memory of one rebuild (a child of the memory benchmark)")
    parser.add_argument("--ledger", type=Path, required=True)
    parser.add_argument("--mode", choices=("trace", "rss"), required=True)
    args = parser.parse_args()
    print(json.dumps(measure(args.ledger, args.mode)))


if __name__ == "__main__":
    main()
