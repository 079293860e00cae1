"""Request and response models of the daemon's JSON API (they are the OpenAPI document).

Responses are built from ``Run.snapshot()`` / ``TraceEvent.to_dict()`` and sent as they
are; these models describe them (the schemathesis test checks every response against
them, so a drift between the two fails a test). The snapshot itself is
:class:`thoughtline.schema.run.RunSnapshot`, the one definition the MCP tools use too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema

from thoughtline.config import MAX_COST_CEILING
from thoughtline.model.requests import EFFORTS, MAX_OUTPUT_TOKENS, MODEL_ID_MAX_LENGTH
from thoughtline.records import CHAIN_OF_THOUGHT_MODES, TraceLayer
from thoughtline.runtime import WORKER_BACKENDS
from thoughtline.schema.run import RunSnapshot
from thoughtline.tools.specs import MAX_STEPS_CEILING


def _unicode(value: str) -> str:
    """Refuse strings that are not Unicode text: JSON can carry a lone surrogate
    (``"\\ud800"``), which no store, log or response could encode."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be Unicode text, without lone surrogate escapes") from None
    return value


def _text(value: str) -> str:
    """Refuse blank strings and strings that are not Unicode text."""
    _unicode(value)
    if not value.strip():
        raise ValueError("must not be empty or only whitespace")
    return value


Text = Annotated[str, AfterValidator(_text)]
"""A non-blank string that is valid Unicode."""
Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_text)]
"""A role, endpoint, mode, tool or run name."""
ModelId = Annotated[str, AfterValidator(_unicode)]
"""A model id: checked by planning, as on every surface (``MODEL_ID_INVALID``)."""


def _choices(names: Sequence[str]) -> WithJsonSchema:
    """A name the document lists the allowed values of, but that is taken as any name:
    an unknown one is refused with its own code, as on every surface
    (:mod:`thoughtline.runtime.planning.options`), not as a schema mismatch."""
    return WithJsonSchema({"anyOf": [{"type": "string", "enum": list(names)}, {"type": "null"}]})


class RunCreate(BaseModel):
    """``POST /v1/runs``: one concurrent task per role (with none, one task with the
    config's ``[defaults] role``, else no persona; ``system`` gives a persona inline)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    request: Text = Field(
        min_length=1,
        description="What the specialists should do: at most orchestration.max_request_bytes "
        "(default 256 KiB) of UTF-8 text; more is a 413 REQUEST_TOO_LARGE.",
    )
    roles: list[Name] | None = Field(
        default=None,
        description="Specialist roles, one task each (default: [defaults] role, else one "
        "task with no persona and no system prompt). At most "
        "orchestration.max_tasks_per_run (default 32); more is a 400 RUN_TOO_MANY_TASKS.",
    )
    system: Text | None = Field(
        default=None,
        min_length=1,
        description="A persona given inline: the system prompt of every task (not with "
        "roles: a 400 REQUEST_INVALID).",
    )
    provider: Name | None = Field(default=None, description="Endpoint name (default from config).")
    model: ModelId | None = Field(
        default=None,
        description=f"Model id for the endpoint: 1 to {MODEL_ID_MAX_LENGTH} ASCII letters, "
        "digits and . _ - : @ ~, in parts joined by single slashes (no '.' or '..' part); "
        "anything else is a 400 MODEL_ID_INVALID.",
    )
    chain_of_thought: Annotated[Name | None, _choices(CHAIN_OF_THOUGHT_MODES)] = Field(
        default=None,
        description="Disclosure mode: hidden | surface | telemetry_only | "
        "surface_and_telemetry (wins over config). Unknown names are a 400 "
        "CHAIN_OF_THOUGHT_UNKNOWN.",
    )
    effort: Annotated[Name | None, _choices(EFFORTS)] = Field(
        default=None,
        description="Reasoning effort. Unknown names are a 400 EFFORT_UNKNOWN.",
    )
    max_output_tokens: int | None = Field(
        default=None,
        ge=1,
        le=MAX_OUTPUT_TOKENS,
        description="Most tokens each task may generate (reasoning included where the "
        "provider counts it so); wins over [defaults] in the config.",
    )
    temperature: float | None = Field(
        default=None,
        ge=0,
        le=2,
        allow_inf_nan=False,
        description="Sampling temperature, 0 to 2; not sent (a task warning says so) to "
        "models that refuse one, as reasoning models often do.",
    )
    worker_backend: Annotated[Name | None, _choices(WORKER_BACKENDS)] = Field(
        default=None,
        description="provider calls the model; inline prepares prompts only. Unknown "
        "names are a 400 WORKER_BACKEND_UNKNOWN.",
    )
    tools: list[Name] | None = Field(
        default=None,
        max_length=100,
        description='Tools every task may call: "SERVER" or "SERVER.TOOL" of an MCP server '
        "configured on the daemon (a request never defines a server); wins over the "
        "roles' tools. An unknown server is a 400 TOOL_SERVER_UNKNOWN.",
    )
    max_steps: int | None = Field(
        default=None,
        ge=1,
        le=MAX_STEPS_CEILING,
        description="Most model calls each task may make (tool steps); wins over roles "
        "and [orchestration] max_steps.",
    )
    max_cost: float | None = Field(
        default=None,
        ge=0,
        le=MAX_COST_CEILING,
        allow_inf_nan=False,
        description="USD the run's tasks may spend together; wins over the plan's and "
        "[orchestration] max_cost. A call whose worst case does not fit fails its task "
        "BUDGET_EXCEEDED.",
    )
    continues: Name | None = Field(
        default=None,
        description="The ended run to continue: its full id, short id, a unique start of "
        "either, or latest (several runs matching: a 400 RUN_ID_AMBIGUOUS naming them). "
        "The run joins its conversation, each task is sent the earlier turns, and "
        "the tasks are that run's again (or one per role in roles) with the fields given "
        "winning; its mode goes on when it was chosen explicitly. No such run is a 404 "
        "RUN_NOT_FOUND, one not ended a 409 CONVERSATION_RUN_ACTIVE, one that keeps "
        "nothing to continue from a 410 CONVERSATION_HISTORY_GONE.",
    )


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunLinks(_Out):
    self: str
    events: str
    cancel: str
    trace: str


class RunCreated(_Out):
    id: str
    short_id: str = Field(description="The id people type (as the snapshot's short_id).")
    status: Literal["planned"]
    links: RunLinks


class CancelAccepted(_Out):
    id: str
    status: Literal["cancelling"]


class Health(_Out):
    status: Literal["ok", "unavailable", "shutting_down", "at_capacity"] = Field(
        description="ok: the daemon takes runs; otherwise it does not (the status is 503): "
        "its store is unavailable, it is shutting down, or it already runs its "
        "[server] max_active_runs (at_capacity)."
    )
    store: str = Field(
        description="ok, or one sentence on why the store cannot be used (never a password)."
    )


class RunList(_Out):
    runs: list[RunSnapshot] = Field(
        description="Newest first; with ?conversation=, that conversation's runs oldest first."
    )


class ToolServer(_Out):
    name: str = Field(
        description='The server\'s name: a run\'s tools name it ("SERVER" or "SERVER.TOOL").'
    )
    tools: list[str] | None = Field(
        description="The only tools a run may call on it ([mcp_servers.NAME] allow); null: "
        "every tool it lists."
    )


class ToolServerList(_Out):
    servers: list[ToolServer] = Field(
        description="The MCP servers configured on the daemon, by name: the tools a run may "
        "ask for (how each is reached, its command, URL and credentials, is not shown)."
    )


class TraceEventBody(_Out):
    id: str
    run_id: str
    task_id: str | None
    type: str
    layer: TraceLayer
    at: str
    metadata: dict[str, Any]


class ErrorDetail(_Out):
    code: str = Field(description="Stable error code (e.g. RUN_NOT_FOUND, ROLE_UNKNOWN).")
    message: str = Field(description="One sentence a person can act on.")
    details: list[dict[str, Any]] | None = Field(
        default=None, description="Field errors, for REQUEST_INVALID."
    )


class ErrorResponse(_Out):
    """Every error the daemon returns has this shape."""

    error: ErrorDetail
