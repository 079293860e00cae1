"""The ``thoughtline.run/v1`` snapshot, defined once.

``Run.snapshot()`` builds the JSON; these models describe it. The daemon's OpenAPI
document (``RunSnapshot`` and the models it references, under ``components/schemas``)
and the MCP tools' output schema (:func:`run_snapshot_schema`, the same models with
references inlined) are both generated from them, so the two are one document. Every
model forbids other keys: a new snapshot field fails the tests until it is described
here.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from thoughtline.events import ReasoningKind
from thoughtline.records import (
    ChainOfThought,
    ModeSource,
    ReasoningStatus,
    RunStatus,
    TaskStatus,
    WorkerBackend,
)
from thoughtline.requests import Effort

__all__ = [
    "ReasoningPartSnapshot",
    "RunSnapshot",
    "RunSummary",
    "TaskErrorSnapshot",
    "TaskSnapshot",
    "TimingsSnapshot",
    "UsageSnapshot",
    "inline_references",
    "run_snapshot_schema",
]

TIMESTAMP: Final = "UTC, ISO 8601 with milliseconds."


def _tidy(schema: dict[str, Any]) -> None:
    """Plain JSON Schema for every generator that uses these models: no generated titles,
    and ``T | None`` of a simple type written as ``{"type": [T, "null"]}``."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        options = prop.get("anyOf")
        if not options or len(options) != 2 or {"type": "null"} not in options:
            continue
        (other,) = [option for option in options if option != {"type": "null"}]
        if "type" not in other or not isinstance(other["type"], str):
            continue  # a reference or a compound: keep the anyOf
        del prop["anyOf"]
        prop.update(other)
        prop["type"] = [other["type"], "null"]
        if "enum" in prop:
            prop["enum"] = [*prop["enum"], None]


class _Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_tidy)


class ReasoningPartSnapshot(_Contract):
    """One reasoning part, of the kind the provider really returned."""

    kind: ReasoningKind
    text: str


class UsageSnapshot(_Contract):
    """Token counts; null means the provider did not report it (never 0 for unknown)."""

    input_tokens: int | None = Field(ge=0)
    output_tokens: int | None = Field(ge=0)
    reasoning_tokens: int | None = Field(ge=0)


class TaskErrorSnapshot(_Contract):
    """Why a task failed: a stable code, a sentence a person can act on, retryable."""

    code: str = Field(description="Stable error code, e.g. PROVIDER_RATE_LIMITED.")
    message: str
    retryable: bool


class TimingsSnapshot(_Contract):
    started_at: str | None = Field(description=TIMESTAMP)
    finished_at: str | None = Field(description=TIMESTAMP)
    first_reasoning_ms: float | None = Field(ge=0)
    first_answer_ms: float | None = Field(ge=0)
    total_ms: float | None = Field(ge=0)


class TaskSnapshot(_Contract):
    """One specialist task; ``reasoning``/``reasoning_parts`` are null unless its mode
    displays reasoning (render ``reasoning_notice`` then)."""

    id: str
    name: str = Field(description="Unique within the run; defaults to the role.")
    role: str
    status: TaskStatus
    executor: str = Field(
        description="provider:ENDPOINT:MODEL, inline:prepared, or empty before start."
    )
    provider: str
    model: str
    chain_of_thought: ChainOfThought
    chain_of_thought_source: ModeSource = Field(
        description="Where the mode came from: explicit > run > role_config > config > default."
    )
    effort: Effort
    after: list[str] = Field(
        description="Ids of the tasks this one runs after (and receives outputs from)."
    )
    output: str | None = Field(description="The answer; null until the task produced one.")
    reasoning: str | None = Field(
        description="Reasoning text; null unless the task's mode displays reasoning."
    )
    reasoning_parts: list[ReasoningPartSnapshot] | None = Field(
        description="Null unless the task's mode displays reasoning."
    )
    reasoning_status: ReasoningStatus | None = Field(
        description="What happened to reasoning; null until decided."
    )
    reasoning_notice: str | None = Field(description="One sentence for people about reasoning.")
    usage: UsageSnapshot
    error: TaskErrorSnapshot | None
    timings: TimingsSnapshot


class RunSnapshot(_Contract):
    """A run snapshot (``thoughtline.run/v1``): the one JSON shape every surface prints."""

    model_config = ConfigDict(populate_by_name=True)

    schema_: Literal["thoughtline.run/v1"] = Field(alias="schema")
    id: str
    status: RunStatus
    request: str
    chain_of_thought: ChainOfThought
    chain_of_thought_source: ModeSource = Field(
        description="Where the mode came from: explicit > run > role_config > config > default."
    )
    worker_backend: WorkerBackend
    created_at: str = Field(description=TIMESTAMP)
    finished_at: str | None = Field(description=TIMESTAMP)
    tasks: list[TaskSnapshot]


class RunSummary(_Contract):
    """A run in a list of recent runs."""

    id: str
    status: RunStatus
    request: str
    chain_of_thought: ChainOfThought
    created_at: str = Field(description=TIMESTAMP)
    finished_at: str | None = Field(description=TIMESTAMP)


def inline_references(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by what it points to, and no
    ``$defs``/``components``: one self-contained document (these models have no cycles).

    Resolves ``#/$defs/NAME`` and ``#/components/schemas/NAME`` against ``schema``
    itself, so it reads both a pydantic schema and an OpenAPI document."""
    definitions: dict[str, Any] = {
        **schema.get("$defs", {}),
        **schema.get("components", {}).get("schemas", {}),
    }

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                rest = {key: value for key, value in node.items() if key != "$ref"}
                return {**resolve(definitions[name]), **resolve(rest)}
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    document = {key: value for key, value in schema.items() if key not in ("$defs", "components")}
    resolved: dict[str, Any] = resolve(document)
    return resolved


def run_snapshot_schema() -> dict[str, Any]:
    """The snapshot's JSON Schema as one self-contained document (no references)."""
    return inline_references(RunSnapshot.model_json_schema(by_alias=True, mode="serialization"))
