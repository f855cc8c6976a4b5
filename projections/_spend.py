"""What a run spent: its agents' reported tokens, dollars and seconds, and its budget.

Summed over every `agent.finished` of the run, abandoned attempts included (they were
paid), across resumes: the same sum `swecl run --budget-usd` stops on. An agent that
reports no cost (demo, codex, gemini) leaves `cost_usd` None rather than a false $0: a
cost of exactly 0 with no tokens reported is taken as not reported (`reported_cost`; the
demo agent records 0.0 and no tokens, and no priced model answers for nothing).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ledger import Ledger, StreamRange

__all__ = ["RunCost", "RunSpend", "SolvedCost", "SpendSum", "cost_line", "cost_text", "per_solved", "reported_cost",
           "run_cost", "run_wall_s", "spend_cell", "spend_of", "duration_text"]


def reported_cost(cost_usd: float | None, tokens: dict[str, int]) -> float | None:
    """An attempt's cost as reported: None when it reported none, or $0 with no tokens (a placeholder, not a price)."""
    if cost_usd is None or (cost_usd == 0 and not tokens):
        return None
    return cost_usd


class RunSpend(msgspec.Struct, kw_only=True):
    attempts: int = 0
    cost_usd: float | None = None  # None: no attempt reported a cost
    tokens_in: int | None = None  # None: no attempt reported tokens (not "0 tokens")
    tokens_out: int | None = None
    agent_s: float = 0.0  # wall time of the agents' attempts
    over_limit: int = 0  # attempts recorded over --max-tokens-per-task or --max-turns
    budget_usd: float | None = None  # in force now: the last resume's, else the run's own

    def document(self) -> dict[str, Any]:
        doc = msgspec.to_builtins(self)
        # Summed floats: rounded, so $0.4 * 8 reads 3.2 (no cost is finer than a millionth).
        doc["cost_usd"] = None if self.cost_usd is None else round(self.cost_usd, 6)
        doc["agent_s"] = round(self.agent_s, 3)
        return doc

    def line(self) -> str:
        cost = "no cost reported" if self.cost_usd is None else f"${self.cost_usd:.2f}"
        budget = "" if self.budget_usd is None else f" of ${self.budget_usd:.2f} budget"
        over = f", {self.over_limit} over a per-task limit" if self.over_limit else ""
        tokens = ("no tokens reported" if self.tokens_in is None and self.tokens_out is None
                  else f"tokens in {self.tokens_in or 0} out {self.tokens_out or 0}")
        return (f"{cost}{budget}, {tokens}, "
                f"agents {self.agent_s:.0f}s over {self.attempts} attempts{over}")


def spend_of(ledger: Ledger, version: str) -> RunSpend:
    spend = RunSpend()
    for rec in ledger.read(types=["run.started", "run.resumed", "agent.finished"], ranges=[StreamRange(f"run/{version}")]):
        ev = rec.event
        if rec.type == "run.started":
            spend.budget_usd = ev.config.get("budget_usd")
        elif rec.type == "run.resumed":
            spend.budget_usd = ev.budget_usd if ev.budget_usd is not None else spend.budget_usd
        else:
            spend.attempts += 1
            cost = reported_cost(ev.cost_usd, ev.tokens)
            if cost is not None:
                spend.cost_usd = (spend.cost_usd or 0.0) + cost
            if ev.tokens:
                spend.tokens_in = (spend.tokens_in or 0) + int(ev.tokens.get("input", 0))
                spend.tokens_out = (spend.tokens_out or 0) + int(ev.tokens.get("output", 0))
            spend.agent_s += ev.duration_s
            spend.over_limit += ev.over_limit is not None
    return spend


def run_wall_s(ledger: Ledger, version: str, *, now: str | None = None) -> float | None:
    """The run's wall time in seconds: run.started (and each run.resumed) to run.finished;
    a stretch that never finished (the process was stopped) ends at its last finished
    attempt, or at `now` (an ISO time: the run is running now). Time between a stop and
    its resume is not counted. None: no such run."""
    from datetime import datetime

    def secs(start: str, end: str) -> float:
        return max(0.0, (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds())

    total: float | None = None
    start: str | None = None
    last: str | None = None
    for rec in ledger.read(types=["run.started", "run.resumed", "run.finished", "task.finished", "agent.finished"],
                           ranges=[StreamRange(f"run/{version}")]):
        header = rec.stream == f"run/{version}"
        if header and rec.type in ("run.started", "run.resumed"):
            if start is not None and last is not None:  # a stretch stopped without run.finished
                total = (total or 0.0) + secs(start, last)
            total = total or 0.0
            start, last = rec.time, rec.time
        elif header and rec.type == "run.finished" and start is not None:
            total = (total or 0.0) + secs(start, rec.time)
            start = last = None
        elif start is not None:
            last = rec.time
    if start is not None:
        total = (total or 0.0) + secs(start, now or last or start)
    return total


def duration_text(seconds: float | None) -> str:
    """`45s`, `12m05s`, `3h20m`, `2d04h` (`-`: not known)."""
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def tokens_text(n: float | None) -> str:
    """`850`, `12k`, `1.2M` (`-`: none reported)."""
    if n is None:
        return "-"
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e4 else f"{n:.0f}"


def spend_cell(spend: dict[str, Any]) -> str:
    """`swecl runs`' cost cell, one short line each: dollars spent (of the budget; `-`: no
    agent reported a cost, never $0), tokens where reported, attempts, wall time."""
    cost = "-" if spend["cost_usd"] is None else f"${spend['cost_usd']:.2f}"
    lines = [cost if spend.get("budget_usd") is None else f"{cost}/${spend['budget_usd']:.2f}"]
    if spend.get("tokens_in") is not None or spend.get("tokens_out") is not None:
        lines.append(f"{tokens_text((spend.get('tokens_in') or 0) + (spend.get('tokens_out') or 0))} tok")
    wall = "" if spend.get("wall_s") is None else f" {duration_text(spend['wall_s'])}"
    lines.append(f"{spend['attempts']} att{wall}")
    return "\n".join(lines)


# -- cost per solved task ----------------------------------------------------------------


class SpendSum(msgspec.Struct, kw_only=True):
    """Reported dollars and tokens of some attempts; None where none of them reported any."""

    attempts: int = 0
    cost_usd: float | None = None
    tokens: int | None = None
    """Input + output tokens."""

    def add(self, cost_usd: float | None, tokens: dict[str, int]) -> None:
        self.attempts += 1
        cost = reported_cost(cost_usd, tokens)
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost
        if tokens:
            self.tokens = (self.tokens or 0) + int(tokens.get("input", 0)) + int(tokens.get("output", 0))


NOT_REPORTED = "not reported: the agent reported no {what}"
NOTHING_SOLVED = "nothing solved in the initial pass"


class SolvedCost(msgspec.Struct, frozen=True, kw_only=True):
    """Spend of the initial pass (every attempt, abandoned ones included) per task it resolved."""

    solved: int
    spend: SpendSum
    usd_per_solved: float | None
    tokens_per_solved: float | None
    usd_na: str | None = None
    tokens_na: str | None = None


def per_solved(spend: SpendSum, solved: int) -> SolvedCost:
    """`spend` / `solved`, None with the reason where nothing was reported or solved (never a false 0)."""
    def one(total: float | None, what: str) -> tuple[float | None, str | None]:
        if total is None:
            return None, NOT_REPORTED.format(what=what)
        if solved == 0:
            return None, NOTHING_SOLVED
        return total / solved, None

    usd, usd_na = one(spend.cost_usd, "cost")
    tokens, tokens_na = one(None if spend.tokens is None else float(spend.tokens), "tokens")
    return SolvedCost(solved=solved, spend=spend, usd_per_solved=usd, tokens_per_solved=tokens, usd_na=usd_na,
                      tokens_na=tokens_na)


class RunCost(msgspec.Struct, frozen=True, kw_only=True):
    """A run's cost per solved task: per sequence and over the run (its initial pass), and the whole run's spend."""

    sequences: dict[str, SolvedCost]
    run: SolvedCost
    whole_run: SpendSum
    """Every pass, every attempt."""

    def document(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


def run_cost(ledger: Ledger, version: str, solved: dict[str, int]) -> RunCost:
    """`solved`: sequence -> tasks the run resolved in its initial pass (as `swecl metrics` counts them)."""
    initial = {name: SpendSum() for name in solved}
    whole = SpendSum()
    for rec in ledger.read(types=["agent.finished"], ranges=[StreamRange(f"run/{version}")]):
        ev = rec.event
        whole.add(ev.cost_usd, ev.tokens)
        if ev.pass_ == "initial" and ev.sequence_id in initial:
            initial[ev.sequence_id].add(ev.cost_usd, ev.tokens)
    total = SpendSum()
    for s in initial.values():
        total.attempts += s.attempts
        if s.cost_usd is not None:
            total.cost_usd = (total.cost_usd or 0.0) + s.cost_usd
        if s.tokens is not None:
            total.tokens = (total.tokens or 0) + s.tokens
    return RunCost(sequences={name: per_solved(s, solved[name]) for name, s in initial.items()},
                   run=per_solved(total, sum(solved.values())), whole_run=whole)


def _money(value: float | None, na: str | None) -> str:
    return f"${value:.4f}" if value is not None else f"n/a ({na})"


def _tokens(value: float | None, na: str | None) -> str:
    return f"{value:,.0f}" if value is not None else f"n/a ({na})"


def cost_text(cost: SolvedCost) -> str:
    """`$0.0412 and 31,200 tokens per solved task (6 solved)`, n/a with the reason where not defined."""
    if cost.usd_na is not None and cost.usd_na == NOTHING_SOLVED and cost.tokens_na in (None, NOTHING_SOLVED):
        return f"n/a ({NOTHING_SOLVED})"
    if cost.usd_na is not None and cost.tokens_na is not None and cost.usd_na != NOTHING_SOLVED:
        return f"not reported (the agent reported no cost or tokens; {cost.solved} solved)"
    return (f"{_money(cost.usd_per_solved, cost.usd_na)} and {_tokens(cost.tokens_per_solved, cost.tokens_na)} "
            f"tokens per solved task ({cost.solved} solved)")


def cost_line(label: str, cost: RunCost) -> str:
    """One line: the run's initial-pass cost per solved task, and what the whole run spent."""
    whole = cost.whole_run
    spent = "no cost or tokens reported" if whole.cost_usd is None and whole.tokens is None else ", ".join(
        x for x in ("" if whole.cost_usd is None else f"${whole.cost_usd:.2f}",
                    "" if whole.tokens is None else f"{whole.tokens:,} tokens") if x)
    return (f"cost per solved task of {label} (initial pass, every attempt): {cost_text(cost.run)}; "
            f"whole run ({whole.attempts} attempts): {spent}")
