"""Runs, tasks and trace events: the records every surface renders and the store keeps.
They sit below both the runtime and the store, which each import them and not each other.

The snapshot (``Run.snapshot()``) is the public ``thoughtline.run/v1`` JSON shape; the
CLI, the daemon, MCP and ACP all print this one shape. It is defined once, by the
``...Snapshot`` typed dicts of :mod:`~thoughtline.records.snapshot`: the code that
builds it is type-checked against them, and :mod:`thoughtline.schema.run` generates the daemon's OpenAPI schema and the MCP output
schema from them (each attribute's docstring becomes its description).

The records are split by concept: :mod:`~thoughtline.records.snapshot` (the contract),
:mod:`~thoughtline.records.domain` (runs, tasks, trace events),
:mod:`~thoughtline.records.cost` (cost arithmetic) and :mod:`~thoughtline.records.ids`
(ids and clocks); every name is importable from here. Beside them,
:mod:`~thoughtline.records.run_events` holds the live run events and
:mod:`~thoughtline.records.event_log` their rows in the store's log.
"""

from __future__ import annotations

from thoughtline.records.cost import (
    NOT_PRICED,
    Cost,
    CostParts,
    RunningCost,
    total_cost,
)
from thoughtline.records.domain import (
    ReasoningPartView,
    Run,
    RunEventRecord,
    Task,
    TaskError,
    TaskTimings,
    TaskUsage,
    ToolCallRecord,
    TraceEvent,
)
from thoughtline.records.ids import (
    SHORT_ID_LENGTH,
    iso,
    new_id,
    new_run_id,
    now_iso,
    parse_epoch,
    short_run_id,
)
from thoughtline.records.snapshot import (
    CHAIN_OF_THOUGHT_MODES,
    SNAPSHOT_SCHEMA,
    TERMINAL_RUN_STATUSES,
    TERMINAL_TASK_STATUSES,
    TRACE_LAYERS,
    ChainOfThought,
    CostPartsSnapshot,
    CostSnapshot,
    DeltaBatchData,
    DeltaData,
    GenerationSnapshot,
    HistorySnapshot,
    ModeSource,
    PersonaSnapshot,
    PersonaSource,
    ReasoningPartSnapshot,
    ReasoningStatus,
    RunEventData,
    RunSnapshot,
    RunStatus,
    RunSummary,
    StepPricedData,
    TaskErrorSnapshot,
    TaskSnapshot,
    TaskStatus,
    TimingsSnapshot,
    ToolCallSnapshot,
    ToolCallStatus,
    TracedReasoningPart,
    TraceLayer,
    UsageSnapshot,
    WorkerBackend,
)

__all__ = [
    "CHAIN_OF_THOUGHT_MODES",
    "NOT_PRICED",
    "SHORT_ID_LENGTH",
    "SNAPSHOT_SCHEMA",
    "TERMINAL_RUN_STATUSES",
    "TERMINAL_TASK_STATUSES",
    "TRACE_LAYERS",
    "ChainOfThought",
    "Cost",
    "CostParts",
    "CostPartsSnapshot",
    "CostSnapshot",
    "DeltaBatchData",
    "DeltaData",
    "GenerationSnapshot",
    "HistorySnapshot",
    "ModeSource",
    "PersonaSnapshot",
    "PersonaSource",
    "ReasoningPartSnapshot",
    "ReasoningPartView",
    "ReasoningStatus",
    "Run",
    "RunEventData",
    "RunEventRecord",
    "RunSnapshot",
    "RunStatus",
    "RunSummary",
    "RunningCost",
    "StepPricedData",
    "Task",
    "TaskError",
    "TaskErrorSnapshot",
    "TaskSnapshot",
    "TaskStatus",
    "TaskTimings",
    "TaskUsage",
    "TimingsSnapshot",
    "ToolCallRecord",
    "ToolCallSnapshot",
    "ToolCallStatus",
    "TraceEvent",
    "TraceLayer",
    "TracedReasoningPart",
    "UsageSnapshot",
    "WorkerBackend",
    "iso",
    "new_id",
    "new_run_id",
    "now_iso",
    "parse_epoch",
    "short_run_id",
    "total_cost",
]
