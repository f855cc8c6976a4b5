"""A run's memory, as one pluggable backend (docs/design.md section 5, "Memory backends").

The run loop asks a `MemoryBackend` (one per run), its `SequenceMemory` (one per sequence)
and their `TaskMemory` (one per task attempt) what to do, and never which kind of memory
it holds: none (`base`, and every baseline pass), the agent's own files (`builtin`),
swecl's substrate (`SubstrateMemory`), the user's MCP memory server (`ServerMemory`), and
the reference arms: either of those written from the gold patches (`OracleMemory`,
`OracleServerMemory`) and the earlier tasks in the prompt (`HistoryMemory`). A stage
names its kind; `memory_backend` builds it.

The memory server's client (`ServerHost`, its calls' context, the data directory's
snapshots, the server's spec) resolves on first use: the task loop imports this package,
and a run without --memory-server must not load asyncio and the MCP SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.errors import MemoryServerError  # declared with every error (ledger.errors), raised here
from ledger.lazy import lazy_exports

from ._builtin import builtin_memory_for, restore_builtin_files
from ._factory import BACKENDS, check_memory, memory_backend, memory_kind, memory_of
from ._interface import AgentMemory, MemoryBackend, SequenceMemory, SequencePlace, TaskMemory
from ._server_policy import NOT_INHERITED, recalled_items, recorded_memory_options
from ._server_resume import resume_memory_options

_EXPORTS = {
    "PRESETS": "_presets",
    "Preset": "_presets",
    "expand_preset": "_presets",
    "get_preset": "_presets",
    "presets_document": "_presets",
    "Proposal": "_server_discover",
    "discover_tools": "_server_discover",
    "propose_tools": "_server_discover",
    "ModelGateway": "_model_gateway",
    "MODEL_PRICES": "_model_prices",
    "model_cost": "_model_prices",
    "price_of": "_model_prices",
    "ServerHost": "_server_host",
    "CallContext": "_server_record",
    "LedgerRecorder": "_server_record",
    "ServerFailure": "_server_record",
    "ServerInfo": "_server_record",
    "ServerSpec": "_server_spec",
    "parse_memory_env": "_server_spec",
    "parse_memory_server": "_server_spec",
    "SNAPSHOT_CHUNK_ABOVE": "_server_snapshot",
    "restore_server_data": "_server_snapshot",
    "server_snapshot_event": "_server_snapshot",
    "snapshot_server_data": "_server_snapshot",
}

__all__ = sorted([
    "MemoryServerError",
    "BACKENDS",
    "NOT_INHERITED",
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
    "resume_memory_options",
    *_EXPORTS,
])

if TYPE_CHECKING:
    from ._presets import PRESETS, Preset, expand_preset, get_preset, presets_document
    from ._server_discover import Proposal, discover_tools, propose_tools
    from ._model_gateway import ModelGateway
    from ._model_prices import MODEL_PRICES, model_cost, price_of
    from ._server_host import ServerHost
    from ._server_record import CallContext, LedgerRecorder, ServerFailure, ServerInfo
    from ._server_snapshot import SNAPSHOT_CHUNK_ABOVE, restore_server_data, server_snapshot_event, snapshot_server_data
    from ._server_spec import ServerSpec, parse_memory_env, parse_memory_server


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
