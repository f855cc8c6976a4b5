"""The event catalog: every fact swecl records, as msgspec Structs in one tagged union.

Names follow docs/design.md section 3. Payloads carry blob hashes, never large texts. Each
class has a `SCHEMA` number; a change that old rows cannot decode into bumps it and
registers an upcaster (see `_upcasting`), so old rows are read, never rewritten.

Field `pass_` is spelled `pass` on the wire (a Python keyword otherwise).

The classes are declared in modules by concern (`_events_run`: runs, passes, tasks,
agents, counterfactuals; `_events_grade`: grades, statuses, validation, environment
checks; `_events_memory`: memory and a user's memory server); this module is the one
catalog: every name is imported from here, and `EVENT_TYPES`, the tagged union and
`BY_TYPE` below list every event.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

from ._event_base import PASS, Event
from ._events_grade import (
    TEST_MAINTAINED,
    TEST_PASSING,
    EnvVerified,
    GradeCorrected,
    GradeFinished,
    GradeStatus,
    TasksValidated,
    TaskValidity,
    VerifiedFailure,
    f2p_passes,
    p2p_passes,
)
from ._events_memory import (
    DreamFinished,
    DreamStarted,
    MemoryContent,
    MemoryHistory,
    MemoryMerged,
    MemoryModelCalled,
    MemoryPruned,
    MemoryRecalled,
    MemoryRejected,
    MemorySeeded,
    MemorySuperseded,
    MemoryWritten,
    ProviderCalled,
    ProviderSnapshot,
    ProviderStarted,
    RecallHit,
    SnapshotChunk,
    SnapshotFile,
    memory_content,
)
from ._events_run import (
    AgentEgress,
    AgentFinished,
    BundleSealed,
    CounterfactualFinished,
    CounterfactualStarted,
    EgressConnection,
    PassFinished,
    PassStarted,
    RunBudgetReached,
    RunFinished,
    RunForked,
    RunResumed,
    RunStarted,
    TaskAbandoned,
    TaskFinished,
    TaskRef,
    TaskStarted,
    ToolCall,
)


class UnknownEvent(msgspec.Struct, frozen=True):
    """A row whose type this swecl does not know (written by a newer one); kept raw."""

    type: str
    raw: dict[str, Any]


EVENT_TYPES: tuple[type[Event], ...] = (
    RunStarted,
    RunResumed,
    RunForked,
    RunBudgetReached,
    RunFinished,
    PassStarted,
    PassFinished,
    TaskStarted,
    TaskAbandoned,
    TaskFinished,
    AgentFinished,
    AgentEgress,
    GradeFinished,
    GradeCorrected,
    MemoryWritten,
    MemoryRejected,
    MemoryRecalled,
    MemoryHistory,
    MemorySeeded,
    DreamStarted,
    MemoryPruned,
    MemoryMerged,
    MemorySuperseded,
    DreamFinished,
    TasksValidated,
    ProviderStarted,
    ProviderCalled,
    ProviderSnapshot,
    MemoryModelCalled,
    CounterfactualStarted,
    CounterfactualFinished,
    EnvVerified,
    BundleSealed,
)

AnyEvent = Union[EVENT_TYPES]  # type: ignore[valid-type]

BY_TYPE: dict[str, type[Event]] = {cls.type_name(): cls for cls in EVENT_TYPES}

__all__ = [
    "BY_TYPE",
    "EVENT_TYPES",
    "PASS",
    "TEST_MAINTAINED",
    "TEST_PASSING",
    "AgentEgress",
    "AgentFinished",
    "AnyEvent",
    "BundleSealed",
    "CounterfactualFinished",
    "CounterfactualStarted",
    "DreamFinished",
    "DreamStarted",
    "EgressConnection",
    "EnvVerified",
    "Event",
    "GradeCorrected",
    "GradeFinished",
    "GradeStatus",
    "MemoryContent",
    "MemoryHistory",
    "MemoryMerged",
    "MemoryModelCalled",
    "MemoryPruned",
    "MemoryRecalled",
    "MemoryRejected",
    "MemorySeeded",
    "MemorySuperseded",
    "MemoryWritten",
    "PassFinished",
    "PassStarted",
    "ProviderCalled",
    "ProviderSnapshot",
    "ProviderStarted",
    "RecallHit",
    "RunBudgetReached",
    "RunFinished",
    "RunForked",
    "RunResumed",
    "RunStarted",
    "SnapshotChunk",
    "SnapshotFile",
    "TaskAbandoned",
    "TaskFinished",
    "TaskRef",
    "TaskStarted",
    "TaskValidity",
    "TasksValidated",
    "ToolCall",
    "UnknownEvent",
    "VerifiedFailure",
    "f2p_passes",
    "memory_content",
    "p2p_passes",
]
