"""The tools' output schemas (the ``thoughtline.run/v1`` snapshot, the status result) and
the annotations of their mode and effort arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, get_args

from pydantic import WithJsonSchema

from thoughtline.events import REASONING_KINDS
from thoughtline.records import (
    CHAIN_OF_THOUGHT_MODES,
    SNAPSHOT_SCHEMA,
    ModeSource,
    ReasoningStatus,
    RunStatus,
    TaskStatus,
    WorkerBackend,
)
from thoughtline.requests import EFFORTS

# Written out by hand from ``Run.snapshot()``; the enums come from the
# model's own Literal aliases so the two cannot drift. ``additionalProperties: false``
# makes a new snapshot field fail the tests until it is described here.


def _string(description: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    if description:
        schema["description"] = description
    return schema


def _nullable(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The same schema, also accepting ``null`` (``type`` becomes a two-item list)."""
    out = dict(schema)
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    kind = out["type"]
    out["type"] = [kind, "null"] if isinstance(kind, str) else [*kind, "null"]
    return out


def _enum(values: tuple[str, ...], description: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "enum": list(values)}
    if description:
        schema["description"] = description
    return schema


def _object(properties: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    if description:
        schema["description"] = description
    return schema


_MODE = _enum(CHAIN_OF_THOUGHT_MODES)
_MODE_SOURCE = _enum(
    get_args(ModeSource),
    "Where the mode came from: explicit > run > role_config > config > default.",
)
_TIMESTAMP = _string("UTC, ISO 8601 with milliseconds.")
_TOKENS = _nullable({"type": "integer", "minimum": 0})
_MILLISECONDS = _nullable({"type": "number", "minimum": 0})

TASK_SCHEMA: Final[dict[str, Any]] = _object(
    {
        "id": _string(),
        "name": _string("Unique within the run; defaults to the role."),
        "role": _string(),
        "status": _enum(get_args(TaskStatus)),
        "executor": _string("provider:ENDPOINT:MODEL, inline:prepared, or empty before start."),
        "provider": _string(),
        "model": _string(),
        "chain_of_thought": _MODE,
        "chain_of_thought_source": _MODE_SOURCE,
        "effort": _enum(EFFORTS),
        "after": {
            "type": "array",
            "items": _string(),
            "description": "Ids of the tasks this one runs after (and receives outputs from).",
        },
        "output": _nullable(_string("The answer; null until the task produced one.")),
        "reasoning": _nullable(
            _string("Reasoning text; null unless the task's mode displays reasoning.")
        ),
        "reasoning_parts": _nullable(
            {
                "type": "array",
                "items": _object({"kind": _enum(REASONING_KINDS), "text": _string()}),
                "description": "Null unless the task's mode displays reasoning.",
            }
        ),
        "reasoning_status": _nullable(
            _enum(get_args(ReasoningStatus), "What happened to reasoning; null until decided.")
        ),
        "reasoning_notice": _nullable(_string("One sentence for people about reasoning.")),
        "usage": _object(
            {
                "input_tokens": _TOKENS,
                "output_tokens": _TOKENS,
                "reasoning_tokens": _TOKENS,
            },
            "Token counts; null means the provider did not report it.",
        ),
        "error": _nullable(
            _object(
                {
                    "code": _string("Stable error code, e.g. PROVIDER_RATE_LIMITED."),
                    "message": _string(),
                    "retryable": {"type": "boolean"},
                }
            )
        ),
        "timings": _object(
            {
                "started_at": _nullable(_TIMESTAMP),
                "finished_at": _nullable(_TIMESTAMP),
                "first_reasoning_ms": _MILLISECONDS,
                "first_answer_ms": _MILLISECONDS,
                "total_ms": _MILLISECONDS,
            }
        ),
    },
    "One specialist task.",
)

RUN_SNAPSHOT_SCHEMA: Final[dict[str, Any]] = _object(
    {
        "schema": {"type": "string", "const": SNAPSHOT_SCHEMA},
        "id": _string(),
        "status": _enum(get_args(RunStatus)),
        "request": _string(),
        "chain_of_thought": _MODE,
        "chain_of_thought_source": _MODE_SOURCE,
        "worker_backend": _enum(get_args(WorkerBackend)),
        "created_at": _TIMESTAMP,
        "finished_at": _nullable(_TIMESTAMP),
        "tasks": {"type": "array", "items": TASK_SCHEMA},
    },
    f"A run snapshot ({SNAPSHOT_SCHEMA}).",
)

RUN_SUMMARY_SCHEMA: Final[dict[str, Any]] = _object(
    {
        "id": _string(),
        "status": _enum(get_args(RunStatus)),
        "request": _string(),
        "chain_of_thought": _MODE,
        "created_at": _TIMESTAMP,
        "finished_at": _nullable(_TIMESTAMP),
    }
)

STATUS_SCHEMA: Final[dict[str, Any]] = _object(
    {
        "run": RUN_SNAPSHOT_SCHEMA,
        "runs": {
            "type": "array",
            "items": RUN_SUMMARY_SCHEMA,
            "description": "The most recent runs, newest first (at most `limit`).",
        },
    }
)

# -- input annotations -------------------------------------------------------------
# Mode and effort are declared as enums for clients but accepted as any string, so an
# unknown name comes back as a tool error with a thoughtline code (the runtime's
# CHAIN_OF_THOUGHT_UNKNOWN for a mode) rather than a pydantic validation dump.

ModeArgument = Annotated[
    str | None,
    WithJsonSchema(
        {
            "anyOf": [{"type": "string", "enum": list(CHAIN_OF_THOUGHT_MODES)}, {"type": "null"}],
            "default": None,
            "description": "Disclosure mode for this run; wins over the config. "
            "hidden: reasoning not requested; surface: shown in the result; "
            "telemetry_only: recorded to the trace only; surface_and_telemetry: both.",
        }
    ),
]

EffortArgument = Annotated[
    str | None,
    WithJsonSchema(
        {
            "anyOf": [{"type": "string", "enum": list(EFFORTS)}, {"type": "null"}],
            "default": None,
            "description": "Reasoning effort (a separate axis from disclosure); "
            "the config's default when omitted.",
        }
    ),
]
