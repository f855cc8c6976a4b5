"""Crash soak: SIGKILL `swecl run` over and over, resume it, and check nothing was lost.

    python -m bench.soak [--kills N] [--seed S] [--per-run K] [--jobs-every J] [--keep DIR]

The long version of tests/reliability/test_crash_random.py: rounds of demo runs
(plugin-blank on the spans sequence; every J-th round spans + iniconf with --jobs 2),
each killed K times at points drawn from the seed (after an event type, after N events,
or at a time; see bench/crashkit.py), then resumed to the end. After every
round: every planned task finished exactly once, abandoned attempts recorded, no memory
from an abandoned attempt, `swecl verify` passes, and `swecl metrics --json` equals an
uninterrupted run's. Prints a summary; exits 1 if any round broke a promise.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.crashkit import CrashReport, crash_loop, kill_plan, live_memory, metrics_doc, run_invariants
from bench.processes import INICONF, SPANS, swecl

SINGLE = ("--stage", "plugin-blank", "--sequence", SPANS)
PAIR = ("--stage", "plugin-blank", "--sequence", SPANS, "--sequence", INICONF, "--jobs", "2")  # all passes: 39 tasks


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=200, help="total kills to land (default 200)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the kill schedule (default: random, printed)")
    parser.add_argument("--per-run", type=int, default=20, help="kills per run before it may finish (default 20)")
    parser.add_argument("--jobs-every", type=int, default=3,
                        help="every J-th round runs two sequences with --jobs 2 (0: never; default 3)")
    parser.add_argument("--keep", type=Path, default=None, help="keep results, cache and logs here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    work = args.keep or Path(tempfile.mkdtemp(prefix="swecl-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    cache, results, refs = work / "cache", work / "results", work / "reference"
    print(f"soak: seed {seed}, {args.kills} kills, {args.per_run} per run, work dir {work}", flush=True)
    started = time.monotonic()

    print("soak: uninterrupted reference runs ...", flush=True)
    swecl(refs, "run", *SINGLE, "--version", "single", "--quiet", cache=cache)
    if args.jobs_every:
        swecl(refs, "run", *PAIR, "--version", "pair", "--quiet", cache=cache)
    expected = {"single": metrics_doc(refs, "single", cache)}
    memory = {"single": live_memory(refs, "single")}
    if args.jobs_every:
        expected["pair"] = metrics_doc(refs, "pair", cache)
        memory["pair"] = live_memory(refs, "pair")

    landed: Counter[str] = Counter()
    failures: list[str] = []
    total = launches = rounds = 0
    rng = random.Random(seed)
    while total < args.kills:
        rounds += 1
        pair = bool(args.jobs_every) and rounds % args.jobs_every == 0
        kind = "pair" if pair else "single"
        version = f"soak-{rounds}"
        want = min(args.per_run, args.kills - total)
        round_seed = rng.randrange(2**31)
        t0 = time.monotonic()
        report = CrashReport(version)
        try:
            crash_loop(
                results, cache, version, PAIR if pair else SINGLE,
                kill_plan(round_seed, want * 20, max_time=4.0 if pair else 3.0),
                kills=want, jobs=2 if pair else None, log=work / f"{version}.log", report=report,
            )
        except (AssertionError, TimeoutError) as exc:
            total += max(report.kills, 1)  # a round that breaks still counts towards the end
            launches += report.launches
            landed.update(report.where())
            failures.append(f"round {rounds} ({kind}, seed {round_seed}): {str(exc).strip().splitlines()[-1]}")
            print(f"soak: round {rounds} ({kind}, seed {round_seed}) FAILED after {report.kills} kills: "
                  f"{str(exc).strip().splitlines()[-1]}", flush=True)
            continue
        total += report.kills
        launches += report.launches
        landed.update(report.where())
        problems = []
        if report.final is None or report.final.returncode != 0:
            problems.append(f"final resume exited {report.final.returncode if report.final else '?'}: "
                            f"{report.final.stderr.strip()[-300:] if report.final else ''}")
        problems += run_invariants(results, version)
        if not problems:
            if metrics_doc(results, version, cache) != expected[kind]:
                problems.append("metrics differ from the uninterrupted run")
            if live_memory(results, version) != memory[kind]:
                problems.append("live memory differs from the uninterrupted run")
        verified = swecl(results, "verify", cache=cache, check=False)
        if verified.returncode != 0:
            problems.append(f"verify: {verified.stderr.strip()}")
        status = "ok" if not problems else "FAILED"
        print(f"soak: round {rounds} ({kind}, seed {round_seed}): {report.kills} kills in {report.launches} launches, "
              f"{time.monotonic() - t0:.0f}s, {status}", flush=True)
        for problem in problems[:5]:
            print(f"        {problem}", flush=True)
        if problems:
            failures.append(f"round {rounds} ({kind}, seed {round_seed}): {problems[0]}")

    elapsed = time.monotonic() - started
    summary = {
        "seed": seed,
        "rounds": rounds,
        "kills": total,
        "launches": launches,
        "seconds": round(elapsed, 1),
        "kills_landed_after": dict(landed.most_common()),
        "failures": failures,
    }
    print("\nsoak summary")
    print(f"  seed {seed}: {total} kills over {rounds} runs ({launches} launches) in {elapsed / 60:.1f} min")
    print("  kills landed after (last event of the run when the kill fired):")
    for where, count in landed.most_common():
        print(f"    {where:<18} {count}")
    print(f"  broken promises: {len(failures)}")
    for failure in failures:
        print(f"    {failure}")
    (work / "soak-summary.json").write_text(json.dumps(summary, indent=1))
    if args.keep is None and not failures:
        shutil.rmtree(work, ignore_errors=True)
    elif args.keep is None:
        print(f"  kept for inspection: {work}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
