"""Which memory a run has: the stage names the kind, the options may swap swecl's substrate
for the user's memory server. A new kind of memory is one class (a `MemoryBackend`
subclass) registered here."""

from __future__ import annotations

from typing import Any

from ledger import SweclError

from .._stages import Stage, get_stage
from ._builtin import BuiltinMemory
from ._history import HistoryMemory
from ._interface import MemoryBackend
from ._oracle import OracleMemory, OracleServerMemory
from ._server import ServerMemory
from ._server_policy import check_memory_options
from ._substrate import SubstrateMemory

__all__ = ["BACKENDS", "SERVER_KINDS", "check_memory", "memory_backend", "memory_kind", "memory_of"]

BACKENDS: dict[str, type[MemoryBackend]] = {
    "none": MemoryBackend,
    "builtin": BuiltinMemory,
    "substrate": SubstrateMemory,
    "server": ServerMemory,
    "oracle": OracleMemory,
    "oracle-server": OracleServerMemory,
    "history": HistoryMemory,
}
# The kinds a user's memory server (--memory-server) takes the place of: kind -> its server kind.
SERVER_KINDS = {"substrate": "server", "oracle": "oracle-server"}


def memory_kind(stage: Stage, opts: Any) -> str:
    """The kind of memory of a run of `stage` with options `opts` (RunOptions, or a run's
    recorded config read into them)."""
    if stage.memory in SERVER_KINDS and opts.memory.server:
        return SERVER_KINDS[stage.memory]  # --memory-server: the user's server in place of swecl's substrate
    return stage.memory


def memory_backend(stage: Stage, opts: Any) -> MemoryBackend:
    return BACKENDS[memory_kind(stage, opts)](stage, opts)


def memory_of(opts: Any) -> MemoryBackend:
    """The memory of a run with options `opts` (its stage's kind)."""
    return memory_backend(get_stage(opts.stage), opts)


def check_memory(stage: Stage, opts: Any) -> None:
    """The memory options of a run, refused in one line (the --memory-* options without
    --memory-server among them), then what its memory checks of its own."""
    check_memory_options(opts, stage)
    if opts.memory.history_tokens is not None and stage.memory != "history":
        raise SweclError(f"--history-tokens is for the full-history stage, not {stage.name!r}")
    memory_backend(stage, opts).check()
