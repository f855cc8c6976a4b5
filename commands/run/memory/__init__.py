"""A run's memory, as one pluggable backend (docs/design.md section 5, "Memory backends").

The run loop asks a `MemoryBackend` (one per run), its `SequenceMemory` (one per sequence)
and their `TaskMemory` (one per task attempt) what to do, and never which kind of memory
it holds: none (`base`, and every baseline pass), the agent's own files (`builtin`),
swecl's substrate (`SubstrateMemory`), the user's MCP memory server (`ServerMemory`). A
stage names its kind; `memory_backend` builds it.
"""

from __future__ import annotations

from ._builtin import builtin_memory_for, restore_builtin_files
from ._factory import BACKENDS, check_memory, memory_backend, memory_kind, memory_of
from ._interface import AgentMemory, MemoryBackend, SequenceMemory, SequencePlace, TaskMemory
from ._server_policy import recalled_items, recorded_memory_options
from ._server_resume import server_resume_options

__all__ = [
    "BACKENDS",
    "AgentMemory",
    "MemoryBackend",
    "SequenceMemory",
    "SequencePlace",
    "TaskMemory",
    "builtin_memory_for",
    "check_memory",
    "memory_backend",
    "memory_kind",
    "memory_of",
    "recalled_items",
    "recorded_memory_options",
    "restore_builtin_files",
    "server_resume_options",
]
