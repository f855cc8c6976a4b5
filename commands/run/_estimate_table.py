"""What `swecl run --estimate` assumes per attempt when the ledger has no recorded run of
the agent and model: rough, conservative figures, each with where it comes from.

These are a newcomer's first order of magnitude, not a quote. Once one run of the agent
and model is recorded the estimate rests on it instead (`projections._estimate`).

Prices: list prices per million tokens as Anthropic published them for the Claude models
(anthropic.com/pricing and the models overview in its docs, as of 2025-11; not re-checked
online when this table was written). Input tokens are priced at the full input rate: an
agent's cache reads cost a tenth of it, so real bills are usually lower (conservative).

Tokens per attempt: an agentic SWE-bench attempt re-sends its growing context every turn;
agent harnesses that publish per-instance spend (SWE-agent's and mini-swe-agent's SWE-bench
results, 2024-2025) report from a few hundred thousand to about a million input tokens and
some ten thousand output tokens per instance at 30-50 turns. The table takes 500,000 in
and 10,000 out per attempt at the default --max-turns 50, the same for every model (rough).

Seconds per attempt: an agentic attempt of 5 to 10 minutes and its grading (environment
reuse, the task's tests) of 1 to 3; the table takes 600 s (agent and grading, rough).
The demo agent's figure was measured on the built-in demo (2026-12, one core, bwrap):
about 0.8 s a task from task.started to task.finished.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TABLE_DATE", "TableRate", "table_rate"]

TABLE_DATE = "2025-11 list prices; tokens and seconds per attempt rough (docs/design.md section 4, Estimates)"


@dataclass(frozen=True)
class TableRate:
    """One agent and model's assumed cost of one attempt."""

    source: str  # what the figures rest on, in a phrase
    seconds: float  # wall seconds per attempt: agent, grading, environment
    tokens_in: int | None  # None: unknown (no figure for this agent or model)
    tokens_out: int | None
    usd_per_m_in: float | None  # list price per million input tokens
    usd_per_m_out: float | None

    @property
    def tokens(self) -> int | None:
        return None if self.tokens_in is None or self.tokens_out is None else self.tokens_in + self.tokens_out

    @property
    def usd(self) -> float | None:
        if self.tokens_in is None or self.tokens_out is None or self.usd_per_m_in is None or self.usd_per_m_out is None:
            return None
        return (self.tokens_in * self.usd_per_m_in + self.tokens_out * self.usd_per_m_out) / 1e6


# A SWE-bench attempt of an agentic CLI: 500k input + 10k output tokens, 600 s (module doc).
_IN, _OUT, _SECONDS = 500_000, 10_000, 600.0

# Claude list prices, USD per million input / output tokens (anthropic.com/pricing, 2025-11):
# Haiku 4.5 $1/$5; Sonnet 4, 4.5 $3/$15; Opus 4.5 $5/$25 (Opus 4 and 4.1 were $15/$75).
_CLAUDE = {"haiku": (1.0, 5.0), "sonnet": (3.0, 15.0), "opus": (5.0, 25.0)}
_CLAUDE_DEFAULT = "sonnet"  # the claude CLI's default model when --model is not given

_NO_MODEL = "no model: the agent calls none"


# The agents that call no model: what an attempt of theirs takes (seconds), and why.
_NO_MODEL_AGENTS = {
    "demo": (f"demo agent ({_NO_MODEL}); 0.8 s a task measured on the built-in demo", 0.8),
    "oracle": (f"oracle agent ({_NO_MODEL}): grading time only, taken as 120 s (rough)", 120.0),
    "predictions": (f"predictions agent ({_NO_MODEL}): grading time only, taken as 120 s (rough)", 120.0),
}
# The agents whose --model may name a Claude model (priced by its family), and the model a
# CLI takes when --model is not given.
_CLAUDE_MODEL_AGENTS = frozenset({"claude", "opencode", "mini-swe-agent"})
_DEFAULT_FAMILY = {"claude": _CLAUDE_DEFAULT}


def table_rate(agent: str, model: str | None) -> TableRate:
    """The table's figures for `agent` with `model` (tokens and dollars None: not known).
    A table keyed by the agent's name, not a branch on it: an agent is added by a row."""
    if agent in _NO_MODEL_AGENTS:
        said, seconds = _NO_MODEL_AGENTS[agent]
        return TableRate(said, seconds, 0, 0, 0.0, 0.0)
    family = _claude_family(model) if agent in _CLAUDE_MODEL_AGENTS else None
    if family is None and model is None:
        family = _DEFAULT_FAMILY.get(agent)
    if family is not None:
        usd_in, usd_out = _CLAUDE[family]
        return TableRate(f"table: claude {family} list price ${usd_in:g}/${usd_out:g} per M tokens in/out (2025-11), "
                         f"{_IN:,} in + {_OUT:,} out tokens and {_SECONDS:.0f} s per attempt (rough)",
                         _SECONDS, _IN, _OUT, usd_in, usd_out)
    return TableRate(f"table: no price for {agent}" + (f" with {model}" if model else "") +
                     f"; {_SECONDS:.0f} s per attempt (rough), tokens and dollars unknown",
                     _SECONDS, None, None, None, None)


def _claude_family(model: str | None) -> str | None:
    text = (model or "").lower()
    return next((family for family in _CLAUDE if family in text), None)
