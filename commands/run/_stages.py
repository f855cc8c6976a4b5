"""The stage matrix (docs/design.md section 4): what each stage does with memory and passes."""

from __future__ import annotations

from dataclasses import dataclass

from ledger import SweclError

PASSES = ("initial", "retest", "baseline")


@dataclass(frozen=True)
class Stage:
    name: str
    # The kind of memory its runs have (a `memory.BACKENDS` name): none | builtin | substrate
    # | oracle (swecl's, or the user's memory server in its place: `memory.memory_kind`) |
    # history.
    memory: str
    seeds: bool  # copy-seeded from a prior run's memory
    dreams_before_eval: bool
    prompt_style: str  # plain | recall | natural
    description: str

    @property
    def memory_on(self) -> bool:
        return self.memory != "none"

    @property
    def plugin(self) -> bool:
        """A recall memory (swecl's substrate or a memory server in its place): the plugin
        stages and the oracle arm."""
        return self.memory in ("substrate", "oracle")

    def default_passes(self) -> tuple[str, ...]:
        # With memory off, retest and baseline would repeat the initial pass exactly:
        # final = initial and baseline = initial are what the metrics assume for them.
        return ("initial",) if not self.memory_on else PASSES


STAGES: dict[str, Stage] = {
    s.name: s
    for s in (
        Stage("base", "none", False, False, "plain", "no memory: the control"),
        Stage("builtin", "builtin", False, False, "plain", "the agent's native file memory, kept across tasks"),
        Stage("plugin-blank", "substrate", False, False, "recall", "recall MCP memory, blank, built within the sequence"),
        Stage("plugin-accum", "substrate", True, False, "recall", "recall MCP memory copy-seeded from a prior run"),
        Stage("plugin-dreamed", "substrate", True, True, "recall", "copy-seeded, then one dream pass before eval"),
        Stage("plugin-primed", "substrate", False, False, "natural",
              "recall MCP memory, blank like plugin-blank; natural-recall prompt, primed stream-json"),
        Stage("oracle", "oracle", False, False, "recall",
              "reference arm: recall MCP memory written from each task's gold patch, not the agent's"),
        Stage("full-history", "history", False, False, "plain",
              "reference arm: no recall; each prompt carries the earlier tasks' patches and outcomes"),
    )
}

DEMO_SUITE = ("base", "plugin-blank", "plugin-accum", "plugin-dreamed")
"""What `swecl run` with no arguments runs on the built-in demo benchmark."""


def get_stage(name: str) -> Stage:
    try:
        return STAGES[name]
    except KeyError:
        raise SweclError(f"unknown stage {name!r}; stages: {', '.join(STAGES)}") from None


def parse_passes(text: str | None, stage: Stage) -> tuple[str, ...]:
    if not text:
        return stage.default_passes()
    passes = tuple(p.strip() for p in text.split(",") if p.strip())
    unknown = [p for p in passes if p not in PASSES]
    if unknown or not passes:
        raise SweclError(f"--passes {text!r}: each pass is one of {', '.join(PASSES)}")
    if len(set(passes)) != len(passes):
        raise SweclError(f"--passes {text!r} names a pass twice")
    return tuple(p for p in PASSES if p in passes)  # always in matrix order
