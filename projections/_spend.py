"""What a run spent: its agents' reported tokens, dollars and seconds, its memory server's
own model calls, and its budget.

Summed over every `agent.finished` of the run, abandoned attempts included (they were
paid), across resumes: the same sum `swecl run --budget-usd` stops on. An agent that
reports no cost (demo, codex, gemini) leaves `cost_usd` None rather than a false $0: a
cost of exactly 0 with no tokens reported is taken as not reported (`reported_cost`; the
demo agent records 0.0 and no tokens, and no priced model answers for nothing).

A `--memory-server`'s own model calls (`memory.model.called`, through swecl's gateway) are
counted apart: `memory_*` beside the agents' numbers, and `total_cost_usd` of both. A
call's cost is None when its model is not in swecl's price table: the memory's cost is
then what the priced calls cost, and None when none was priced.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ledger import Ledger, StreamRange

__all__ = ["RunCost", "RunSpend", "SolvedCost", "SpendSum", "add_known", "cost_line", "cost_text", "money", "per_solved",
           "reported_cost",
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
    # The memory server's own model calls (memory.model.called): apart from the agents'.
    memory_calls: int = 0
    memory_cost_usd: float | None = None  # None: no call was priced
    memory_tokens_in: int | None = None  # None: no call reported usage
    memory_tokens_out: int | None = None

    @property
    def total_cost_usd(self) -> float | None:
        """The agents' and the memory's costs together; None when neither reported one."""
        return add_known(self.cost_usd, self.memory_cost_usd)

    def document(self) -> dict[str, Any]:
        doc = msgspec.to_builtins(self)
        # Summed floats: rounded, so $0.4 * 8 reads 3.2 (no cost is finer than a millionth).
        for name, value in (("cost_usd", self.cost_usd), ("memory_cost_usd", self.memory_cost_usd),
                            ("total_cost_usd", self.total_cost_usd)):
            doc[name] = None if value is None else round(value, 6)
        doc["agent_s"] = round(self.agent_s, 3)
        return doc

    def add_memory_call(self, cost_usd: float | None, tokens_in: int | None, tokens_out: int | None) -> None:
        self.memory_calls += 1
        self.memory_cost_usd = add_known(self.memory_cost_usd, cost_usd)
        if tokens_in is not None or tokens_out is not None:
            self.memory_tokens_in = (self.memory_tokens_in or 0) + (tokens_in or 0)
            self.memory_tokens_out = (self.memory_tokens_out or 0) + (tokens_out or 0)

    def line(self) -> str:
        cost = "no cost reported" if self.cost_usd is None else f"${self.cost_usd:.2f}"
        budget = "" if self.budget_usd is None else f" of ${self.budget_usd:.2f} budget"
        over = f", {self.over_limit} over a per-task limit" if self.over_limit else ""
        tokens = ("no tokens reported" if self.tokens_in is None and self.tokens_out is None
                  else f"tokens in {self.tokens_in or 0} out {self.tokens_out or 0}")
        out = f"{cost}{budget}, {tokens}, agents {self.agent_s:.0f}s over {self.attempts} attempts{over}"
        if not self.memory_calls:
            return out
        return f"agents {out}; {self.memory_line()}; total {money(self.total_cost_usd)}"

    def memory_line(self) -> str:
        """`memory model $0.01 (12 calls, tokens in 3400 out 200)`."""
        tokens = ("no tokens reported" if self.memory_tokens_in is None
                  else f"tokens in {self.memory_tokens_in} out {self.memory_tokens_out or 0}")
        return f"memory model {money(self.memory_cost_usd)} ({self.memory_calls} calls, {tokens})"


def add_known(a: float | None, b: float | None) -> float | None:
    """a + b of what is known: None only when neither is."""
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)


def money(value: float | None) -> str:
    """`$0.12`, `$0.0031` below a cent, `$2.4e-05` below a hundredth of one (a memory's embeddings
    cost fractions of a cent), or `not priced`."""
    if value is None:
        return "not priced"
    if value >= 0.01 or value == 0:
        return f"${value:.2f}"
    return f"${value:.4f}" if value >= 0.0001 else f"${value:.1e}"


def spend_of(ledger: Ledger, version: str) -> RunSpend:
    spend = RunSpend()
    for rec in ledger.read(types=["run.started", "run.resumed", "agent.finished", "memory.model.called"],
                           ranges=[StreamRange(f"run/{version}")]):
        ev = rec.event
        if rec.type == "memory.model.called":
            spend.add_memory_call(ev.cost_usd, ev.tokens_in, ev.tokens_out)
        elif rec.type == "run.started":
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
    agent reported a cost, never $0), tokens where reported, attempts, wall time; with a
    memory server's model calls, their cost (`mem`) and the total (`tot`)."""
    cost = "-" if spend["cost_usd"] is None else f"${spend['cost_usd']:.2f}"
    lines = [cost if spend.get("budget_usd") is None else f"{cost}/${spend['budget_usd']:.2f}"]
    if spend.get("tokens_in") is not None or spend.get("tokens_out") is not None:
        lines.append(f"{tokens_text((spend.get('tokens_in') or 0) + (spend.get('tokens_out') or 0))} tok")
    wall = "" if spend.get("wall_s") is None else f" {duration_text(spend['wall_s'])}"
    lines.append(f"{spend['attempts']} att{wall}")
    if spend.get("memory_calls"):  # the memory server's own model calls, then both together
        lines.append(f"mem {money(spend.get('memory_cost_usd'))}")
        lines.append(f"tot {money(spend.get('total_cost_usd'))}")
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

    def add_model_call(self, cost_usd: float | None, tokens_in: int | None, tokens_out: int | None) -> None:
        """A memory server's model call (`attempts` counts the calls)."""
        self.attempts += 1
        self.cost_usd = add_known(self.cost_usd, cost_usd)
        if tokens_in is not None or tokens_out is not None:
            self.tokens = (self.tokens or 0) + (tokens_in or 0) + (tokens_out or 0)

    def plus(self, other: SpendSum) -> SpendSum:
        """Both together (`attempts` this one's: the other's are calls, not attempts)."""
        tokens = None if self.tokens is None and other.tokens is None else (self.tokens or 0) + (other.tokens or 0)
        return SpendSum(attempts=self.attempts, cost_usd=add_known(self.cost_usd, other.cost_usd), tokens=tokens)


NOT_REPORTED = "not reported: {who} reported no {what}"
NOTHING_SOLVED = "nothing solved in the initial pass"


class SolvedCost(msgspec.Struct, frozen=True, kw_only=True):
    """Spend of the initial pass (every attempt, abandoned ones included) per task it resolved."""

    solved: int
    spend: SpendSum
    usd_per_solved: float | None
    tokens_per_solved: float | None
    usd_na: str | None = None
    tokens_na: str | None = None


def per_solved(spend: SpendSum, solved: int, who: str = "the agent") -> SolvedCost:
    """`spend` / `solved`, None with the reason where nothing was reported or solved (never a false 0)."""
    def one(total: float | None, what: str) -> tuple[float | None, str | None]:
        if total is None:
            return None, NOT_REPORTED.format(who=who, what=what)
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
    # A --memory-server's own model calls (memory.model.called), apart, and with the agents'.
    # None: the run made none (no gateway), so nothing to show apart.
    memory_run: SolvedCost | None = None
    """The initial pass's model calls per task it resolved."""
    total_run: SolvedCost | None = None
    """The agents' and the memory's initial-pass spend together, per task resolved."""
    memory_whole_run: SpendSum | None = None
    """Every model call of the run, every pass (`attempts`: the calls)."""

    def document(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]

    def difference(self, other: RunCost) -> dict[str, float | None]:
        """`other` minus this run, per solved task (`swecl compare`'s B - A); with a memory
        server's model calls on either side, the agents' and the memory's together too."""
        def diff(x: float | None, y: float | None) -> float | None:
            return None if x is None or y is None else y - x

        out = {"usd_per_solved": diff(self.run.usd_per_solved, other.run.usd_per_solved),
               "tokens_per_solved": diff(self.run.tokens_per_solved, other.run.tokens_per_solved)}
        if self.total_run is not None or other.total_run is not None:
            ta, tb = self.total_run or self.run, other.total_run or other.run
            out["total_usd_per_solved"] = diff(ta.usd_per_solved, tb.usd_per_solved)
        return out


def run_cost(ledger: Ledger, version: str, solved: dict[str, int]) -> RunCost:
    """`solved`: sequence -> tasks the run resolved in its initial pass (as `swecl metrics` counts them)."""
    initial = {name: SpendSum() for name in solved}
    whole = SpendSum()
    memory, memory_whole = SpendSum(), SpendSum()
    for rec in ledger.read(types=["agent.finished", "memory.model.called"], ranges=[StreamRange(f"run/{version}")]):
        ev = rec.event
        if rec.type == "memory.model.called":
            memory_whole.add_model_call(ev.cost_usd, ev.tokens_in, ev.tokens_out)
            if ev.pass_ == "initial" and ev.sequence_id in initial:
                memory.add_model_call(ev.cost_usd, ev.tokens_in, ev.tokens_out)
            continue
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
    n = sum(solved.values())
    if not memory_whole.attempts:
        return RunCost(sequences={name: per_solved(s, solved[name]) for name, s in initial.items()},
                       run=per_solved(total, n), whole_run=whole)
    return RunCost(sequences={name: per_solved(s, solved[name]) for name, s in initial.items()},
                   run=per_solved(total, n), whole_run=whole, memory_run=per_solved(memory, n, "the memory's model"),
                   total_run=per_solved(total.plus(memory), n, "neither the agent nor the memory's model"),
                   memory_whole_run=memory_whole)


def _money(value: float | None, na: str | None) -> str:
    if value is None:
        return f"n/a ({na})"
    return f"${value:.1e}" if 0 < value < 0.0001 else f"${value:.4f}"  # a memory's fractions of a cent


def _tokens(value: float | None, na: str | None) -> str:
    return f"{value:,.0f}" if value is not None else f"n/a ({na})"


def cost_text(cost: SolvedCost) -> str:
    """`$0.0412 and 31,200 tokens per solved task (6 solved)`, n/a with the reason where not defined."""
    if cost.usd_na is not None and cost.usd_na == NOTHING_SOLVED and cost.tokens_na in (None, NOTHING_SOLVED):
        return f"n/a ({NOTHING_SOLVED})"
    if cost.usd_na is not None and cost.tokens_na is not None and cost.usd_na != NOTHING_SOLVED:
        who = cost.usd_na.removeprefix("not reported: ").split(" reported no ")[0]
        return f"not reported ({who} reported no cost or tokens; {cost.solved} solved)"
    return (f"{_money(cost.usd_per_solved, cost.usd_na)} and {_tokens(cost.tokens_per_solved, cost.tokens_na)} "
            f"tokens per solved task ({cost.solved} solved)")


def cost_line(label: str, cost: RunCost) -> str:
    """One line: the run's initial-pass cost per solved task, and what the whole run spent."""
    whole = cost.whole_run
    spent = "no cost or tokens reported" if whole.cost_usd is None and whole.tokens is None else ", ".join(
        x for x in ("" if whole.cost_usd is None else f"${whole.cost_usd:.2f}",
                    "" if whole.tokens is None else f"{whole.tokens:,} tokens") if x)
    line = (f"cost per solved task of {label} (initial pass, every attempt): {cost_text(cost.run)}; "
            f"whole run ({whole.attempts} attempts): {spent}")
    if cost.memory_run is None or cost.total_run is None or cost.memory_whole_run is None:
        return line
    mem = cost.memory_whole_run
    mem_spent = ", ".join(x for x in ("" if mem.cost_usd is None else money(mem.cost_usd),
                                      "" if mem.tokens is None else f"{mem.tokens:,} tokens") if x) or "not priced"
    return (f"{line}; the memory's own model calls: {cost_text(cost.memory_run)}; whole run ({mem.attempts} "
            f"calls): {mem_spent}; agents and memory together: {cost_text(cost.total_run)}")
