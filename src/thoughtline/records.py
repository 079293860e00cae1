"""Runs, tasks and trace events: the records every surface renders and the store keeps.
They sit below both the runtime and the store, which each import them and not each other.

The snapshot (``Run.snapshot()``) is the public ``thoughtline.run/v1`` JSON shape; the
CLI, the daemon, MCP and ACP all print this one shape. It is defined once, here, by the
``...Snapshot`` typed dicts: the code that builds it is type-checked against them, and
:mod:`thoughtline.schema.run` generates the daemon's OpenAPI schema and the MCP output
schema from them (each attribute's docstring becomes its description).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, Literal, NotRequired, TypeAlias, cast

# typing's TypedDict is not readable by pydantic before Python 3.12 (schema/run.py).
from typing_extensions import TypedDict

from thoughtline.events import FinishReason, MetadataValue, ReasoningKind
from thoughtline.requests import Effort, GenerationSettings
from thoughtline.threads import StoredTurn, TaskThread
from thoughtline.tools.recorded import RecordedServer

SNAPSHOT_SCHEMA: Literal["thoughtline.run/v1"] = "thoughtline.run/v1"

ChainOfThought: TypeAlias = Literal["hidden", "surface", "telemetry_only", "surface_and_telemetry"]
CHAIN_OF_THOUGHT_MODES: tuple[ChainOfThought, ...] = (
    "hidden",
    "surface",
    "telemetry_only",
    "surface_and_telemetry",
)
ModeSource: TypeAlias = Literal["explicit", "run", "role_config", "config", "default"]
PersonaSource: TypeAlias = Literal["explicit", "plan", "config", "system", "default", "unrecorded"]
"""Where a task's persona came from: ``--role`` (explicit), its plan file's task, the
config's ``[defaults] role``, ``--system`` text, or none asked for (``default``: the
``assistant`` role, no system prompt). ``unrecorded``: stored before personas were."""
WorkerBackend: TypeAlias = Literal["provider", "inline"]
RunStatus: TypeAlias = Literal[
    "planned",
    "running",
    "completed",
    "completed_with_failures",
    "completed_prepare_only",
    "failed",
    "cancelled",
    "interrupted",
]
TaskStatus: TypeAlias = Literal[
    "queued", "running", "done", "prepared", "failed", "cancelled", "interrupted"
]
ReasoningStatus: TypeAlias = Literal[
    "shown",
    "recorded",
    "not_requested",
    "not_returned",
    "omitted_by_provider",
    "redacted_by_provider",
    "unsupported",
    "interrupted",
    "not_applicable",
]
TraceLayer: TypeAlias = Literal["answer", "reasoning", "provider_raw"]
TRACE_LAYERS: tuple[TraceLayer, ...] = ("answer", "reasoning", "provider_raw")

TERMINAL_RUN_STATUSES: frozenset[str] = frozenset(
    {
        "completed",
        "completed_with_failures",
        "completed_prepare_only",
        "failed",
        "cancelled",
        "interrupted",
    }
)
TERMINAL_TASK_STATUSES: frozenset[str] = frozenset(
    {"done", "prepared", "failed", "cancelled", "interrupted"}
)


_last_stamp: tuple[int, str] = (-1, "")
_last_second: tuple[int, str] = (-1, "")


def now_iso() -> str:
    """UTC timestamp with milliseconds, sortable as text.

    Every live delta is stamped, thousands a second on a long stream: the text is reused
    within a millisecond, and its date and time of day within a second (a datetime built
    and formatted per stamp cost about 6 µs). Each cache is one tuple, so a thread never
    sees half an update."""
    global _last_stamp, _last_second
    millis = time.time_ns() // 1_000_000
    stamp = _last_stamp
    if stamp[0] != millis:
        seconds, rest = divmod(millis, 1000)
        second = _last_second
        if second[0] != seconds:
            day_and_time = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
            second = _last_second = (seconds, day_and_time)
        stamp = _last_stamp = (millis, f"{second[1]}.{rest:03d}Z")
    return stamp[1]


def iso(epoch: float) -> str:
    """The :func:`now_iso` form of seconds since the epoch."""
    return (
        datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def parse_epoch(stamp: str | None) -> float | None:
    """Seconds since the epoch of an ISO timestamp (naive = UTC), ``None`` if unparsable."""
    if stamp is None:
        return None
    try:
        parsed = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def new_id(prefix: str) -> str:
    """``task_…``/``evt_…``: a time-ordered, unguessable id (runs: :func:`new_run_id`)."""
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")
    return f"{prefix}_{stamp}{secrets.token_hex(4)}"


SHORT_ID_LENGTH: Final = 8
# Crockford's base32 in lower case (no i, l, o, u: nothing to misread); a short id
# starts with a letter, so it is never the start of an older, timestamp-first run id.
_SHORT_ALPHABET: Final = "0123456789abcdefghjkmnpqrstvwxyz"
_SHORT_FIRST: Final = _SHORT_ALPHABET[10:]


def new_run_id() -> str:
    """``run_`` + a random short id (8 characters, about 39 bits) + a UTC timestamp.

    The random part comes first: it alone tells runs apart, so a person types the
    short id (or any unique start of it) and the store finds it with the index it has
    on run ids, as it finds any prefix. Runs are ordered by ``created_at``, never by id."""
    short = secrets.choice(_SHORT_FIRST) + "".join(
        secrets.choice(_SHORT_ALPHABET) for _ in range(SHORT_ID_LENGTH - 1)
    )
    return f"run_{short}{datetime.now(UTC).strftime('%Y%m%d%H%M%S%f')}"


def short_run_id(run_id: str) -> str:
    """The short id people see and type: the random part of a run id made by
    :func:`new_run_id`; an older (timestamp-first) or foreign id is its own short id."""
    rest = run_id.removeprefix("run_")
    if (
        rest != run_id
        and len(rest) > SHORT_ID_LENGTH
        and rest[0] in _SHORT_FIRST
        and all(char in _SHORT_ALPHABET for char in rest[:SHORT_ID_LENGTH])
        and rest[SHORT_ID_LENGTH:].isdigit()
    ):
        return rest[:SHORT_ID_LENGTH]
    return run_id


# -- the thoughtline.run/v1 snapshot: its one definition -------------------------------


class ReasoningPartSnapshot(TypedDict):
    """One reasoning part, of the kind the provider really returned."""

    kind: ReasoningKind
    text: str
    step: NotRequired[int]
    """The model call (from 1) the part came from, in a task that may call tools."""


ToolCallStatus: TypeAlias = Literal["running", "done", "failed", "denied", "timed_out", "cancelled"]
"""A tool call's state: ``failed`` (the tool or its server failed), ``denied`` (a tool
the task may not call, or a destructive one its server does not allow), ``timed_out``
(longer than ``[timeouts] tool``), ``cancelled`` (the run stopped it)."""


class ToolCallSnapshot(TypedDict):
    """One tool call a task's model made, and what came back (credential values
    redacted)."""

    id: str
    step: int
    """The model call (from 1) that asked for it."""
    server: str | None
    """The MCP server, or null for a tool the task does not have."""
    name: str
    arguments: str
    """The arguments as the model wrote them (JSON text)."""
    status: ToolCallStatus
    is_error: bool
    """Whether the model was told the call failed."""
    result: str | None
    """What the model was sent back, cut to a preview."""
    result_truncated: bool
    """Whether ``result`` (or what the tool returned) was cut."""
    error: str | None
    """A stable code when the call could not run as asked (``TOOL_TIMEOUT``,
    ``TOOL_NOT_ALLOWED``, ``TOOL_NOT_FOUND``, ``TOOL_SERVER_UNAVAILABLE``, ``TOOL_CANCELLED``,
    ``TOOL_CALL_FAILED``, ``TOOL_ARGUMENTS_INVALID``)."""
    started_at: str
    """UTC, ISO 8601 with milliseconds."""
    duration_ms: float | None
    read_only: bool
    """The tool's annotations call it read-only (``readOnlyHint``)."""
    destructive: bool
    """The tool's annotations call it destructive (``destructiveHint``, not read-only)."""


class UsageSnapshot(TypedDict):
    """Token counts; null means the provider did not report it (never 0 for unknown).
    They mean the same for every provider (docs/dialects.md)."""

    input_tokens: int | None
    """Every input token, cached or not."""
    output_tokens: int | None
    """Every generated token, reasoning included."""
    reasoning_tokens: int | None
    """The reasoning share of the output."""
    cached_input_tokens: int | None
    """The part of the input read from the provider's cache."""
    cache_write_tokens: int | None
    """The part of the input written to the provider's cache."""


class CostPartsSnapshot(TypedDict):
    """What each kind of token cost (USD). ``input``, ``cached_input``, ``cache_write``
    and ``output`` add up to the amount; ``reasoning`` is the share of ``output`` that
    reasoning tokens cost, included in ``output`` and not added again."""

    input: float
    """Input tokens not read from or written to the cache."""
    cached_input: float
    """Input tokens read from the provider's cache."""
    cache_write: float
    """Input tokens written to the provider's cache."""
    output: float
    """Every generated token, reasoning included."""
    reasoning: float
    """Reasoning tokens: part of ``output``, not added to the amount again."""


class CostSnapshot(TypedDict):
    """What a call, a task or a run cost, from the usage the provider reported and the
    prices in ``source``; ``amount`` is null when that is unknown (``unknown_reason``
    says why: nothing is guessed)."""

    amount: float | None
    currency: Literal["USD"]
    source: str | None
    """Where the prices came from: ``genai-prices VERSION`` or the config file and key;
    several, separated by ``; ``, for a task or run priced from more than one; null when
    nothing was priced (no model call)."""
    parts: CostPartsSnapshot | None
    """Null when the amount is unknown."""
    unknown_reason: str | None


class GenerationSnapshot(TypedDict):
    """The generation settings the task's call sent; null: the provider's default."""

    max_output_tokens: int | None
    temperature: float | None


class TaskErrorSnapshot(TypedDict):
    """Why a task failed: a stable code, a sentence a person can act on, retryable."""

    code: str
    """Stable error code, e.g. PROVIDER_RATE_LIMITED."""
    message: str
    retryable: bool


class TimingsSnapshot(TypedDict):
    """When a task ran and how long its stages took (milliseconds)."""

    started_at: str | None
    """UTC, ISO 8601 with milliseconds."""
    finished_at: str | None
    """UTC, ISO 8601 with milliseconds."""
    first_reasoning_ms: float | None
    first_answer_ms: float | None
    total_ms: float | None


class PersonaSnapshot(TypedDict):
    role: str
    """The role whose prompt was sent (``assistant``: none; with ``system``, the text)."""
    source: PersonaSource
    system: NotRequired[str]
    """The inline persona (``--system``), when the source is ``system``."""


class TaskSnapshot(TypedDict):
    """One specialist task; ``reasoning``/``reasoning_parts`` are null unless its mode
    displays reasoning (render ``reasoning_notice`` then)."""

    id: str
    name: str
    """Unique within the run; defaults to the role."""
    role: str
    persona: PersonaSnapshot
    """Which persona the task ran with, and where it came from."""
    status: TaskStatus
    executor: str
    """provider:ENDPOINT:MODEL, inline:prepared, or empty before start."""
    provider: str
    model: str
    chain_of_thought: ChainOfThought
    chain_of_thought_source: ModeSource
    """Where the mode came from: explicit > run > role_config > config > default."""
    effort: Effort
    after: list[str]
    """Ids of the tasks this one runs after (and receives outputs from)."""
    output: str | None
    """The answer; null until the task produced one."""
    reasoning: str | None
    """Reasoning text; null unless the task's mode displays reasoning."""
    reasoning_parts: list[ReasoningPartSnapshot] | None
    """Null unless the task's mode displays reasoning."""
    reasoning_status: ReasoningStatus | None
    """What happened to reasoning; null until decided."""
    reasoning_notice: str | None
    """One sentence for people about reasoning."""
    generation: GenerationSnapshot
    finish_reason: FinishReason | None
    """Why the answer ended, the same for every provider (``length``: cut off by the
    token limit); null until the task ended, or when the provider did not say."""
    usage: UsageSnapshot
    cost: CostSnapshot
    """What the task's model calls cost (0 for a task that made none)."""
    error: TaskErrorSnapshot | None
    timings: TimingsSnapshot
    steps: NotRequired[int]
    """Model calls made, in a task that may call tools."""
    step_costs: NotRequired[list[CostSnapshot]]
    """What each model call cost, in step order, in a task that may call tools."""
    tool_calls: NotRequired[list[ToolCallSnapshot]]
    """Every tool call, in order, in a task that may call tools."""
    history: NotRequired[HistorySnapshot]
    max_cost: NotRequired[float]
    """USD the task may spend, when it has a budget of its own."""
    """What the task was sent of its conversation, in a run that continues another."""


class HistorySnapshot(TypedDict):
    """What a task of a follow-up run was sent of the conversation before it."""

    turns: int
    """Earlier turns sent with the request."""
    dropped_turns: int
    """The oldest turns left out so the request fits the model's context window."""
    reasoning_turns: int
    """Earlier turns whose reasoning (and its carriers) went back to the provider."""
    note: str | None
    """One sentence on what of the earlier turns' reasoning was not sent, and why."""


class RunSnapshot(TypedDict):
    """A run snapshot (``thoughtline.run/v1``): the one JSON shape every surface prints."""

    schema: Literal["thoughtline.run/v1"]
    id: str
    short_id: str
    """The id people see and type (8 characters; any unique start of it, or of ``id``,
    names the run too). A run stored before short ids has its whole id here."""
    status: RunStatus
    request: str
    chain_of_thought: ChainOfThought
    chain_of_thought_source: ModeSource
    """Where the mode came from: explicit > run > role_config > config > default."""
    worker_backend: WorkerBackend
    created_at: str
    """UTC, ISO 8601 with milliseconds."""
    finished_at: str | None
    """UTC, ISO 8601 with milliseconds."""
    conversation_id: str
    """The conversation the run belongs to; every run of it has the same id."""
    continues: str | None
    """The run this one continues; null for a conversation's first run."""
    cost: CostSnapshot
    """What its tasks cost together; unknown when any task's cost is."""
    tasks: list[TaskSnapshot]
    max_cost: NotRequired[float]
    """USD its tasks may spend together, when it has a budget."""


class RunSummary(TypedDict):
    """A run in a list of recent runs."""

    id: str
    short_id: str
    """The id people see and type (see ``RunSnapshot.short_id``)."""
    status: RunStatus
    request: str
    chain_of_thought: ChainOfThought
    created_at: str
    """UTC, ISO 8601 with milliseconds."""
    finished_at: str | None
    """UTC, ISO 8601 with milliseconds."""
    conversation_id: str
    continues: str | None


class TracedReasoningPart(TypedDict):
    """A reasoning part as the ``reasoning`` trace layer (and telemetry) records it: with
    whether it completed and the provider's opaque data (signatures, encrypted
    carriers)."""

    kind: ReasoningKind
    text: str
    complete: bool
    provider_metadata: dict[str, MetadataValue]


class DeltaData(TypedDict):
    """What the event log keeps of an answer or reasoning delta."""

    text: str
    part_id: NotRequired[str]
    kind: NotRequired[ReasoningKind]


class DeltaBatchData(TypedDict):
    """Consecutive deltas of one task and stream in one event log record: the record's
    ``seq`` is the last one's, so delta ``i`` has ``seq - len(texts) + 1 + i``."""

    texts: list[str]


RunEventData: TypeAlias = DeltaData | DeltaBatchData | TaskSnapshot | ToolCallSnapshot | RunSnapshot
"""The ``data`` of a run event log record: a delta, a batch of deltas, a task, a tool
call, or the run."""


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


@dataclass(frozen=True, slots=True, kw_only=True)
class CostParts:
    """See :class:`CostPartsSnapshot` (``reasoning`` is part of ``output``)."""

    input: float = 0.0
    cached_input: float = 0.0
    cache_write: float = 0.0
    output: float = 0.0
    reasoning: float = 0.0

    def to_dict(self) -> CostPartsSnapshot:
        return {
            "input": self.input,
            "cached_input": self.cached_input,
            "cache_write": self.cache_write,
            "output": self.output,
            "reasoning": self.reasoning,
        }


NOT_PRICED = "stored before thoughtline priced model calls"
"""The reason a call recorded by an older thoughtline (no stored cost) costs unknown."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Cost:
    """What a call, a task or a run cost (see :class:`CostSnapshot`); priced once, by
    :mod:`thoughtline.pricing`, when each call ends, and stored with its task."""

    amount: float | None = 0.0
    source: str | None = None
    parts: CostParts | None = field(default_factory=CostParts)
    unknown_reason: str | None = None

    @classmethod
    def unknown(cls, reason: str, *, source: str | None = None) -> Cost:
        return cls(amount=None, source=source, parts=None, unknown_reason=reason)

    @property
    def known(self) -> bool:
        return self.amount is not None

    def to_dict(self) -> CostSnapshot:
        return {
            "amount": self.amount,
            "currency": "USD",
            "source": self.source,
            "parts": None if self.parts is None else self.parts.to_dict(),
            "unknown_reason": self.unknown_reason,
        }

    @classmethod
    def from_dict(cls, data: CostSnapshot) -> Cost:
        parts = data["parts"]
        return cls(
            amount=data["amount"],
            source=data["source"],
            parts=None if parts is None else CostParts(**parts),
            unknown_reason=data["unknown_reason"],
        )


def total_cost(costs: Iterable[Cost], *, label: Callable[[int], str] | None = None) -> Cost:
    """The sum of ``costs``: unknown when any is (with the first one's reason, led by
    ``label(i)``, e.g. the task's name), and from every source they were priced from."""
    running = RunningCost(label)
    for cost in costs:
        running.add(cost)
    return running.total()


class RunningCost:
    """:func:`total_cost` kept up as costs come, one at a time: the same sums, added in
    the same order (so the same floats) as summing them all again, which a loop of
    many steps would do at every step."""

    __slots__ = ("_total", "amount", "count", "dicts", "label", "sources", "sums", "unknown")

    def __init__(self, label: Callable[[int], str] | None = None) -> None:
        self.label = label
        self.count = 0
        self.amount = 0.0
        self.sums = dict.fromkeys(
            ("input", "cached_input", "cache_write", "output", "reasoning"), 0.0
        )
        self.sources: list[str] = []
        self.unknown: str | None = None
        self.dicts: list[CostSnapshot] = []
        """The costs' :meth:`Cost.to_dict`, each made once, when first asked for (see
        :meth:`Task.step_cost_dicts`)."""
        self._total: Cost | None = None  # until the next cost

    def add(self, cost: Cost) -> None:
        index, self.count = self.count, self.count + 1
        self._total = None
        for source in (cost.source or "").split("; "):
            if source and source not in self.sources:
                self.sources.append(source)
        if cost.amount is None or cost.parts is None:
            if self.unknown is None:
                reason = cost.unknown_reason or "unknown"
                self.unknown = reason if self.label is None else f"{self.label(index)}: {reason}"
            return
        self.amount += cost.amount
        sums = self.sums
        for name in sums:
            sums[name] += getattr(cost.parts, name)

    def total(self) -> Cost:
        if self._total is not None:
            return self._total
        joined = "; ".join(self.sources) or None
        if self.unknown is not None:
            total = Cost.unknown(self.unknown, source=joined)
        else:
            total = Cost(
                amount=round(self.amount, 10),
                source=joined,
                parts=CostParts(**{name: round(value, 10) for name, value in self.sums.items()}),
            )
        self._total = total
        return total


def _step_label(index: int) -> str:
    return f"step {index + 1}"


@dataclass(slots=True, kw_only=True)
class TaskError:
    code: str
    message: str
    retryable: bool

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
    tool_servers: list[RecordedServer] = field(default_factory=list)
    """The tool servers its tasks may call, without secrets: a follow-up starts them
    again from these (:mod:`thoughtline.tools.recorded`)."""
    tasks: list[Task] = field(default_factory=list)

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
    ``seq`` (:class:`DeltaBatchData`; see :func:`thoughtline.event_log.to_records`).

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
