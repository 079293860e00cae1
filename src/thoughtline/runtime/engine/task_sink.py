"""What one task needs from the run it belongs to, and nothing more.

:class:`~thoughtline.runtime.engine.task_call.TaskCall` runs a task against this protocol, not
against the whole :class:`~thoughtline.runtime.engine.execution.RunExecution`: the run
implements it (numbered live events, the trace writer, durable writes, the shared
clients, telemetry), and a test can drive a task with a sink of its own, no store and no
execution needed.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Literal, Protocol

from thoughtline.config.pricing import Pricer
from thoughtline.model.requests import ToolSpec
from thoughtline.providers.client import ProviderClient
from thoughtline.providers.redaction import Redactor
from thoughtline.records import (
    Task,
    TaskError,
    TaskStatus,
    ToolCallRecord,
    TraceLayer,
    WorkerBackend,
)
from thoughtline.records.run_events import ReasoningEdge
from thoughtline.runtime.engine.clients import CallOverlap
from thoughtline.runtime.engine.telemetry_hooks import CallReport
from thoughtline.runtime.planning.roles import RoleCatalog
from thoughtline.runtime.planning.run_tools import Approver
from thoughtline.runtime.planning.toolbox import TaskTools, ToolServer
from thoughtline.runtime.policy.budget import RunBudget
from thoughtline.runtime.policy.disclosure import LiveStream


class TaskSink(Protocol):
    """The run as one of its tasks sees it. Everything a task tells the world goes
    through here; reasoning reaches it only as the disclosure gate released it."""

    @property
    def worker_backend(self) -> WorkerBackend:
        """Whether the task calls its provider or only prepares its prompts."""

    @property
    def roles(self) -> RoleCatalog:
        """The specialist roles the task's role is looked up in."""

    @property
    def redactor(self) -> Redactor:
        """The loaded credential values the gate removes from model output."""

    @property
    def records_provider_raw(self) -> bool:
        """Whether the ``provider_raw`` trace layer is written (``trace_provider_raw``)."""

    @property
    def stop_status(self) -> Literal["cancelled", "interrupted", "failed"]:
        """The status a task stopped by the run ends with."""

    @property
    def stop_error(self) -> TaskError | None:
        """The error a task stopped with ``failed`` ends with."""

    def stopped_by(self) -> str | None:
        """Why the run stopped its tasks when nobody cancelled it, for their notices."""

    def handoff(self, task: Task) -> str:
        """The task's user prompt: the request plus the outputs it follows."""

    def client_for(self, provider: str) -> ProviderClient:
        """The provider's client on the run's connection pool."""

    def calling(self, provider: str) -> AbstractAsyncContextManager[CallOverlap]:
        """Around one model call: waits for the endpoint's ``max_concurrency``, and says
        afterwards whether another call to the endpoint overlapped it."""

    def emit_text(self, task_id: str, stream: LiveStream, text: str) -> None:
        """A live delta of the task's answer or displayed reasoning."""

    def emit_reasoning_edge(self, task_id: str, edge: ReasoningEdge) -> None:
        """A displayed reasoning part's start or end, with its carriers: told to the
        run's observer only (a gateway task's client stream), never numbered or stored."""

    @property
    def pricer(self) -> Pricer:
        """Prices each model call as it ends (config prices, then the price data)."""

    @property
    def budget(self) -> RunBudget:
        """What the run may spend and has spent, shared by its tasks (``max_cost``)."""

    @property
    def tool_timeout_s(self) -> float:
        """How long one tool call may take (``[timeouts] tool``)."""

    def tools_for(self, task: Task) -> TaskTools:
        """The tools ``task`` may call, under the names its model sees (raises
        ``TOOL_NOT_FOUND`` / ``TOOL_NOT_ALLOWED`` for a tool its server does not offer)."""

    def tools_pending(self, task: Task) -> bool:
        """Whether a server ``task`` has tools of is still offered with its cached list."""

    async def confirm_tools(
        self, task: Task, *, step: int, offered: tuple[ToolSpec, ...]
    ) -> TaskTools | None:
        """Wait for the servers ``task`` has tools of to be up; the task's tools again when
        they differ from ``offered`` (what step ``step`` went out with), traced. Raises
        the start error of a server that did not start, or ``TOOL_NOT_FOUND`` /
        ``TOOL_NOT_ALLOWED`` for a tool the live list lacks."""

    @property
    def approver(self) -> Approver | None:
        """Asked before each call to a destructive tool, when the run has one (ACP: the
        editor); ``None``: ``allow_destructive`` decides."""

    def toolbox_connection(self, server: str) -> ToolServer:
        """The run's started tool server ``server`` (MCP, or its Python callables)."""

    def emit_tool_call(self, task: Task, call: ToolCallRecord) -> None:
        """The live event of a tool call starting (``running``) or ending."""

    def emit_task_started(self, task: Task) -> None:
        """The live event of the task starting."""

    def emit_task_completed(self, task: Task) -> None:
        """The live event of the task reaching its final status."""

    def emit_step_priced(self, task: Task, step: int) -> None:
        """The live event of a running task's step priced: its cost so far."""

    def add_trace(
        self,
        type_: str,
        *,
        layer: TraceLayer = "answer",
        task_id: str | None = None,
        metadata: dict[str, object] | None = None,
    ) -> str:
        """A trace event, written with the task's next transition; its id."""

    async def persist(self, *, task: Task) -> None:
        """Queue the task's row, with the live and trace events before it, as one write."""

    async def finish_task(
        self, task: Task, *, status: TaskStatus, error: TaskError | None = None
    ) -> None:
        """End a task that made no model call (prepared, or stopped before it)."""

    def report_call(self, task: Task, report: CallReport) -> None:
        """Tell the telemetry hook (if any) that the task's model calls ended."""
