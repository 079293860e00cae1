"""The tools' output schemas (the ``thoughtline.run/v1`` snapshot, the status result) and
the annotations of their mode and effort arguments."""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from thoughtline.model.requests import EFFORTS
from thoughtline.records import CHAIN_OF_THOUGHT_MODES
from thoughtline.runtime import BY_NAME
from thoughtline.schema.run import (
    RunSnapshot,
    RunSummary,
    inline_references,
    run_snapshot_schema,
)

# -- output schemas ----------------------------------------------------------------
# Generated from the one snapshot definition (thoughtline.schema.run), which the daemon's
# OpenAPI document uses too; inlined, because MCP clients expect self-contained schemas.


def _untitled(schema: dict[str, Any]) -> None:
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)


class StatusResult(BaseModel):
    """``orchestration_status``: a run's snapshot and the most recent runs."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_untitled)

    run: RunSnapshot
    runs: list[RunSummary] = Field(
        description="The most recent runs, newest first (at most `limit`)."
    )


RUN_SNAPSHOT_SCHEMA: Final[dict[str, Any]] = run_snapshot_schema()
STATUS_SCHEMA: Final[dict[str, Any]] = inline_references(
    StatusResult.model_json_schema(by_alias=True, mode="serialization")
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


def option_argument(name: str) -> WithJsonSchema:
    """The input schema of the run option ``name`` (its bounds and help, from
    :data:`thoughtline.runtime.planning.options.OPTIONS`). The argument is taken as any value and
    checked by the runtime, so a value out of bounds is a tool error with the code every
    surface gives (``REQUEST_INVALID: max_steps must be ...``), not a validation dump."""
    option = BY_NAME[name]
    return WithJsonSchema(
        {
            "anyOf": [dict(option.schema), {"type": "null"}],
            "default": None,
            "description": option.help,
        }
    )
