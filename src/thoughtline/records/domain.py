"""The domain records: runs, tasks, tool calls, trace events and run event rows, as the
runtime builds them, the store keeps them and every surface renders their snapshot."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from thoughtline.model.accumulator import ModelResponse
from thoughtline.model.client_turns import ClientTurns

# typing's TypedDict is not readable by pydantic before Python 3.12 (schema/run.py).
from thoughtline.model.events import FinishReason, ReasoningKind
from thoughtline.model.requests import Effort, GenerationSettings
from thoughtline.model.threads import StoredTurn, TaskThread
from thoughtline.records.cost import NOT_PRICED, Cost, RunningCost, _step_label, total_cost
from thoughtline.records.ids import now_iso, short_run_id
from thoughtline.records.snapshot import (
    SNAPSHOT_SCHEMA,
    ChainOfThought,
    CostSnapshot,
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
    TaskErrorSnapshot,
    TaskSnapshot,
    TaskStatus,
    TimingsSnapshot,
    ToolCallSnapshot,
    ToolCallStatus,
    ToolServerStartSnapshot,
    TraceLayer,
    UsageSnapshot,
    WorkerBackend,
)
from thoughtline.tools.recorded import RecordedServer


@dataclass(slots=True, kw_only=True)
class ReasoningPartView:
    """A reasoning part as surfaces show it: its kind and text (opaque data stays in the
    trace)."""

    kind: ReasoningKind
    text: str
    step: int | None = None
    """The model call the part came from, in a task that may call tools."""

    def to_dict(self) -> ReasoningPartSnapshot:
        if self.step is None:
            return {"kind": self.kind, "text": self.text}
        return {"kind": self.kind, "text": self.text, "step": self.step}


@dataclass(slots=True, kw_only=True)
class ToolCallRecord:
    """One tool call of a task (see :class:`ToolCallSnapshot`)."""

    id: str
    step: int
    server: str | None
    name: str
    arguments: str
    started_at: str
    status: ToolCallStatus = "running"
    is_error: bool = False
    result: str | None = None
    result_truncated: bool = False
    error: str | None = None
    duration_ms: float | None = None
    read_only: bool = False
    destructive: bool = False

    def to_dict(self) -> ToolCallSnapshot:
        return {
            "id": self.id,
            "step": self.step,
            "server": self.server,
            "name": self.name,
            "arguments": self.arguments,
            "status": self.status,
            "is_error": self.is_error,
            "result": self.result,
            "result_truncated": self.result_truncated,
            "error": self.error,
            "started_at": self.started_at,
            "duration_ms": self.duration_ms,
            "read_only": self.read_only,
            "destructive": self.destructive,
        }

    @classmethod
    def from_dict(cls, data: ToolCallSnapshot) -> ToolCallRecord:
        return cls(**data)


@dataclass(slots=True, kw_only=True)
class TaskUsage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None

    def to_dict(self) -> UsageSnapshot:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


@dataclass(slots=True, kw_only=True)
class TaskError:
    code: str
    message: str
    retryable: bool
    retry_after_s: float | None = None
    """The wait the provider asked for (its ``Retry-After``): in memory only, for the
    gateway's answer to its client; not stored."""

    def to_dict(self) -> TaskErrorSnapshot:
        return {"code": self.code, "message": self.message, "retryable": self.retryable}


@dataclass(slots=True, kw_only=True)
class TaskTimings:
    started_at: str | None = None
    finished_at: str | None = None
    first_reasoning_ms: float | None = None
    first_answer_ms: float | None = None
    total_ms: float | None = None

    def to_dict(self) -> TimingsSnapshot:
        return {
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "first_reasoning_ms": self.first_reasoning_ms,
            "first_answer_ms": self.first_answer_ms,
            "total_ms": self.total_ms,
        }


@dataclass(slots=True, kw_only=True)
class Task:
    """One specialist task. ``reasoning``/``reasoning_parts`` are set only when the task's
    mode displays reasoning; the disclosure gate is the only writer of them."""

    id: str
    run_id: str
    position: int
    role: str
    provider: str
    model: str
    chain_of_thought: ChainOfThought
    chain_of_thought_source: ModeSource
    effort: Effort = "provider-default"
    after: list[str] = field(default_factory=list)
    name: str = ""
    status: TaskStatus = "queued"
    executor: str = ""
    output: str | None = None
    reasoning: str | None = None
    reasoning_parts: list[ReasoningPartView] | None = None
    reasoning_status: ReasoningStatus | None = None
    reasoning_notice: str | None = None
    generation: GenerationSettings = field(default_factory=GenerationSettings)
    """What the task's call asks for beyond the prompt (planned: the task's own
    settings, else ``[defaults]``)."""
    finish_reason: FinishReason | None = None
    usage: TaskUsage = field(default_factory=TaskUsage)
    step_costs: list[Cost] = field(default_factory=list)
    """What each model call cost, in step order (priced as each call ends)."""
    priced: bool = True
    """False for a task an older thoughtline stored without its costs."""
    error: TaskError | None = None
    timings: TaskTimings = field(default_factory=TaskTimings)
    persona_source: PersonaSource = "explicit"
    system: str | None = None
    """The persona given inline (``--system``): sent instead of the role's prompt."""
    tools: tuple[str, ...] = ()
    """The tools the task may call (``SERVER`` or ``SERVER.TOOL``), resolved at planning."""
    max_steps: int = 8
    """Model calls the task may make."""
    max_cost: float | None = None
    """USD the task may spend (its plan's or its role's budget); ``None``: no budget of
    its own (its run's may still apply)."""
    budget_notice: str | None = None
    """One sentence on the output caps a budget set on its calls; ``None``: none."""
    steps: int | None = None
    """Model calls made; ``None`` for a task that may call no tools."""
    tool_calls: list[ToolCallRecord] | None = None
    """Its tool calls in order; ``None`` for a task that may call no tools."""
    history: HistorySnapshot | None = None
    """What it was sent of its conversation; ``None`` unless its run continues another."""
    earlier: tuple[StoredTurn, ...] = field(default=(), compare=False, repr=False)
    """The conversation's earlier turns for this task, loaded when its run was planned
    (in memory only: the store keeps them as those tasks' threads)."""
    thread: TaskThread | None = field(default=None, compare=False, repr=False)
    """What this task added to its conversation, set when it ends (stored apart)."""
    client_turns: ClientTurns | None = field(default=None, compare=False, repr=False)
    """A gateway client's history and tools, the task's input instead of its prompt (in
    memory only: the run's request and the task's thread are what is stored)."""
    reply: ModelResponse | None = field(default=None, compare=False, repr=False)
    """For a task with :attr:`client_turns`: its last response as the gate handed it on,
    carriers included (in memory only), for the gateway to answer and keep."""
    _costs_so_far: tuple[list[Cost], Cost | None, RunningCost] | None = field(
        default=None, init=False, compare=False, repr=False
    )
    """``step_costs`` (the list), its last cost summed and the sum so far: each step's
    :attr:`cost` and stored row add only the new calls' costs."""

    @property
    def answer(self) -> str:
        """The answer, typed ``str`` for code that needs one (``output`` is ``None``
        until there is one). A task that failed raises its own error (code, message);
        one that ended otherwise without an answer raises ``TASK_NO_ANSWER``."""
        if self.output is not None:
            return self.output
        from thoughtline.errors import ErrorCode, ThoughtlineError

        if self.error is not None:
            code = cast("ErrorCode", self.error.code)  # stored from the same closed set
            raise ThoughtlineError(code, self.error.message, retryable=self.error.retryable)
        raise ThoughtlineError(
            "TASK_NO_ANSWER",
            f"Task {self.name or self.role!r} has no answer: it is {self.status}"
            + (
                " (a prepare-only run prepares prompts, it calls no model)."
                if self.status == "prepared"
                else "."
            ),
        )

    @property
    def cost(self) -> Cost:
        """What its calls cost together (0 before the first call ends)."""
        if not self.priced:
            return Cost.unknown(NOT_PRICED)
        if len(self.step_costs) == 1:
            return self.step_costs[0]
        return self._running_cost().total()

    def step_cost_dicts(self) -> list[CostSnapshot]:
        """Each call's cost as :meth:`Cost.to_dict` gives it, made once per cost (a
        stored task's row carries them all, written again at each step): read only."""
        dicts = self._running_cost().dicts
        dicts.extend(cost.to_dict() for cost in self.step_costs[len(dicts) :])
        return dicts

    def _running_cost(self) -> RunningCost:
        """The sum of ``step_costs`` so far, brought up to date. The runtime only appends
        to the list (as each call ends); a new list, or one whose last summed cost is no
        longer in its place (cut, or that cost replaced), is summed again."""
        costs = self.step_costs
        kept = self._costs_so_far
        if kept is not None:
            listed, last, running = kept
            if (
                listed is not costs
                or running.count > len(costs)
                or (running.count and costs[running.count - 1] is not last)
            ):
                kept = None
        if kept is None:
            running = RunningCost(_step_label)
        for cost in costs[running.count :]:
            running.add(cost)
        self._costs_so_far = (costs, costs[-1] if costs else None, running)
        return running

    @property
    def persona(self) -> PersonaSnapshot:
        persona: PersonaSnapshot = {"role": self.role, "source": self.persona_source}
        if self.system is not None:
            persona["system"] = self.system
        return persona

    def to_dict(self) -> TaskSnapshot:
        snapshot = self._snapshot()
        if self.tool_calls is not None:
            snapshot["steps"] = self.steps or 0
            snapshot["step_costs"] = [cost.to_dict() for cost in self.step_costs]
            snapshot["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.history is not None:
            snapshot["history"] = self.history
        if self.max_cost is not None:
            snapshot["max_cost"] = self.max_cost
        if self.budget_notice is not None:
            snapshot["budget_notice"] = self.budget_notice
        return snapshot

    def _snapshot(self) -> TaskSnapshot:
        return {
            "id": self.id,
            "name": self.name or self.role,
            "role": self.role,
            "persona": self.persona,
            "status": self.status,
            "executor": self.executor,
            "provider": self.provider,
            "model": self.model,
            "chain_of_thought": self.chain_of_thought,
            "chain_of_thought_source": self.chain_of_thought_source,
            "effort": self.effort,
            "after": list(self.after),
            "output": self.output,
            "reasoning": self.reasoning,
            "reasoning_parts": None
            if self.reasoning_parts is None
            else [part.to_dict() for part in self.reasoning_parts],
            "reasoning_status": self.reasoning_status,
            "reasoning_notice": self.reasoning_notice,
            "generation": {
                "max_output_tokens": self.generation.max_output_tokens,
                "temperature": self.generation.temperature,
            },
            "finish_reason": self.finish_reason,
            "usage": self.usage.to_dict(),
            "cost": self.cost.to_dict(),
            "error": None if self.error is None else self.error.to_dict(),
            "timings": self.timings.to_dict(),
        }


@dataclass(slots=True, kw_only=True)
class Run:
    id: str
    request: str
    chain_of_thought: ChainOfThought
    chain_of_thought_source: ModeSource
    worker_backend: WorkerBackend
    status: RunStatus = "planned"
    created_at: str = field(default_factory=now_iso)
    finished_at: str | None = None
    conversation_id: str = ""
    """Its conversation (the first run's ``conversation_id``); set when planned."""
    continues: str | None = None
    max_cost: float | None = None
    """USD the run's tasks may spend together; ``None``: no budget."""
    client: str | None = None
    """The gateway client the run answered (``[gateway.clients.NAME]``); ``None``: the
    run was asked for on another surface."""
    client_asked: str | None = None
    """What the client's request asked of reasoning, as it said it; the run's
    ``chain_of_thought`` is what its client's policy gave it."""
    tool_servers: list[RecordedServer] = field(default_factory=list)
    """The tool servers its tasks may call, without secrets: a follow-up starts them
    again from these (:mod:`thoughtline.tools.recorded`)."""
    tasks: list[Task] = field(default_factory=list)
    server_starts: list[ToolServerStartSnapshot] = field(default_factory=list)
    """Its tool servers' starts as its ``tool_server.start`` events told them
    (:func:`~thoughtline.records.server_starts.with_server_start`); stored with the
    run's row whenever they change."""

    def snapshot(self) -> RunSnapshot:
        """The ``thoughtline.run/v1`` snapshot."""
        snapshot: RunSnapshot = {
            "schema": SNAPSHOT_SCHEMA,
            "id": self.id,
            "short_id": short_run_id(self.id),
            "status": self.status,
            "request": self.request,
            "chain_of_thought": self.chain_of_thought,
            "chain_of_thought_source": self.chain_of_thought_source,
            "worker_backend": self.worker_backend,
            "created_at": self.created_at,
            "finished_at": self.finished_at,
            "conversation_id": self.conversation_id or self.id,
            "continues": self.continues,
            "cost": self.cost.to_dict(),
            "tasks": [task.to_dict() for task in self.tasks],
        }
        if self.max_cost is not None:
            snapshot["max_cost"] = self.max_cost
        if self.client is not None:
            snapshot["source"] = "gateway"
            snapshot["client"] = self.client
            snapshot["client_asked"] = self.client_asked
        if self.server_starts:
            snapshot["tool_server_starts"] = [start.copy() for start in self.server_starts]
        return snapshot

    @property
    def cost(self) -> Cost:
        """What its tasks cost together."""
        tasks = self.tasks
        return total_cost(
            (task.cost for task in tasks),
            label=lambda index: f"task {tasks[index].name or tasks[index].role}",
        )

    def summary(self) -> RunSummary:
        """The run in a list of recent runs (no tasks)."""
        return {
            "id": self.id,
            "short_id": short_run_id(self.id),
            "status": self.status,
            "request": self.request,
            "chain_of_thought": self.chain_of_thought,
            "created_at": self.created_at,
            "finished_at": self.finished_at,
            "conversation_id": self.conversation_id or self.id,
            "continues": self.continues,
        }

    @property
    def answer(self) -> str:
        """The run's answer: that of its last task (the one every other task ran
        before, in a pipeline), as :attr:`Task.answer` gives it."""
        if not self.tasks:
            from thoughtline.errors import ThoughtlineError

            raise ThoughtlineError("TASK_NO_ANSWER", f"Run {self.id} has no tasks.")
        return self.tasks[-1].answer

    def task(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)


@dataclass(slots=True, kw_only=True)
class TraceEvent:
    """One trace record. ``metadata`` holds only JSON values; reasoning appears only in
    events of layer ``reasoning``, raw exchanges only in layer ``provider_raw``."""

    id: str
    run_id: str
    task_id: str | None
    type: str
    layer: TraceLayer
    at: str
    metadata: dict[str, object] = field(default_factory=dict)
    expires_at: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "run_id": self.run_id,
            "task_id": self.task_id,
            "type": self.type,
            "layer": self.layer,
            "at": self.at,
            "metadata": self.metadata,
        }


@dataclass(slots=True, kw_only=True)
class RunEventRecord:
    """A record of a run's event log: one live event, numbered per run from 1 (the SSE
    event id), or a batch of consecutive deltas of one task and stream numbered up to
    ``seq`` (:class:`DeltaBatchData`; see :func:`thoughtline.records.event_log.to_records`).

    ``reasoning.delta`` events exist only for tasks whose mode displays reasoning: the
    disclosure gate filters before events are numbered, stored or sent."""

    run_id: str
    seq: int
    type: str
    task_id: str | None
    at: str
    data: RunEventData

    def to_dict(self) -> dict[str, object]:
        return {
            "run_id": self.run_id,
            "seq": self.seq,
            "type": self.type,
            "task_id": self.task_id,
            "at": self.at,
            "data": self.data,
        }
