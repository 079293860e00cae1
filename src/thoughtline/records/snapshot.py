"""The ``thoughtline.run/v1`` snapshot contract: the vocabulary (modes, statuses, layers)
and the ``...Snapshot`` typed dicts that define the public JSON shape once.
:mod:`thoughtline.schema.run` generates the OpenAPI and MCP output schemas from them."""

from __future__ import annotations

from typing import Literal, NotRequired, TypeAlias

# typing's TypedDict is not readable by pydantic before Python 3.12 (schema/run.py).
from typing_extensions import TypedDict

from thoughtline.model.events import FinishReason, MetadataValue, ReasoningKind
from thoughtline.model.requests import Effort

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
    known_amount: NotRequired[float]
    """When the amount is unknown but some of its calls' costs are known (a run stopped
    during its second step): what those came to, so "$0.0031 + step 2 unknown"."""
    unknown_part: NotRequired[str]
    """When the amount is unknown and sums several calls: which are unknown (``step 2``,
    ``2 steps``, ``task b step 2``)."""


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
    """What the task was sent of its conversation, in a run that continues another."""
    max_cost: NotRequired[float]
    """USD the task may spend, when it has a budget of its own."""
    budget_notice: NotRequired[str]
    """One sentence, when a budget capped the output of its calls to fit what was left
    ("Output capped at 612 tokens to fit the run's $0.010 budget.")."""


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
    source: NotRequired[Literal["gateway"]]
    """``gateway`` for a run that answered a gateway client's call."""
    client: NotRequired[str]
    """The gateway client (``[gateway.clients.NAME]``) whose call the run answered."""
    client_asked: NotRequired[str | None]
    """What that call asked of reasoning, as the client said it (``reasoning_effort=high``,
    ``thinking=enabled``); null when it asked nothing. ``chain_of_thought`` is the mode
    the client's policy applied."""
    tool_server_starts: NotRequired[list[ToolServerStartSnapshot]]
    """The starts of the tool servers the run waited for or started, as its
    ``tool_server.start`` events told them, in the order they began: the same in a live
    run's snapshot and in one read back from the store (kept with the run's row)."""


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


class StepPricedData(TypedDict):
    """A priced step's record in the event log: its number and the task's cost so far."""

    step: int
    cost: CostSnapshot


class ToolServerError(TypedDict):
    """Why a tool server did not start: its error code and sentence (with the tail of
    its stderr)."""

    code: str
    message: str


class ToolServerStartSnapshot(TypedDict):
    """One tool server's start, as the run's last ``tool_server.start`` for it told."""

    server: str
    """The server's name (``[mcp_servers.NAME]``, an ``mcp.json`` or editor's server)."""
    state: Literal["starting", "ready", "failed"]
    started_at: str
    """When its start began (UTC, ISO 8601 with milliseconds): one still ``starting``
    has been for the time since. A run that found the start under way (another run
    began it) has when that start began."""
    duration_ms: NotRequired[int]
    """How long the start took (``ready``, ``failed``)."""
    tools: NotRequired[int]
    """How many tools it lists (``ready``)."""
    error: NotRequired[ToolServerError]
    """Why it did not start (``failed``)."""


class ToolServerData(TypedDict):
    """A tool server's start in the event log and on the SSE ``data:`` line: ``state``
    is ``starting``, ``ready`` or ``failed``; ``duration_ms`` (since it began), ``tools``
    (how many it lists) and ``error`` are there once known."""

    server: str
    state: str
    duration_ms: NotRequired[int]
    tools: NotRequired[int]
    error: NotRequired[ToolServerError]


RunEventData: TypeAlias = (
    DeltaData
    | DeltaBatchData
    | TaskSnapshot
    | ToolCallSnapshot
    | StepPricedData
    | ToolServerData
    | RunSnapshot
)
"""The ``data`` of a run event log record: a delta, a batch of deltas, a task, a tool
call, a priced step, a tool server's start, or the run."""
