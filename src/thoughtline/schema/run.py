"""The ``thoughtline.run/v1`` snapshot as JSON Schema, generated from its one definition.

The snapshot is defined once, by the typed dicts in :mod:`thoughtline.records`
(``RunSnapshot`` and the dicts it holds), which the code that builds snapshots is
type-checked against. This module gives them to pydantic: the daemon's OpenAPI document
(``RunSnapshot`` and what it references, under ``components/schemas``) and the MCP tools'
output schema (:func:`run_snapshot_schema`, the same with references inlined) are both
generated from them, so the two are one document. Every object forbids other keys, and
each attribute's docstring in ``records`` becomes its ``description``.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import ConfigDict, TypeAdapter

from thoughtline.records import (
    GenerationSnapshot,
    HistorySnapshot,
    ReasoningPartSnapshot,
    RunSnapshot,
    RunSummary,
    TaskErrorSnapshot,
    TaskSnapshot,
    TimingsSnapshot,
    ToolCallSnapshot,
    ToolServerError,
    ToolServerStartSnapshot,
    UsageSnapshot,
)

__all__ = [
    "SNAPSHOT_TYPES",
    "GenerationSnapshot",
    "HistorySnapshot",
    "ReasoningPartSnapshot",
    "RunSnapshot",
    "RunSummary",
    "TaskErrorSnapshot",
    "TaskSnapshot",
    "TimingsSnapshot",
    "ToolCallSnapshot",
    "ToolServerError",
    "ToolServerStartSnapshot",
    "UsageSnapshot",
    "inline_references",
    "run_snapshot_schema",
]

SNAPSHOT_TYPES: Final = (
    ReasoningPartSnapshot,
    UsageSnapshot,
    GenerationSnapshot,
    TaskErrorSnapshot,
    TimingsSnapshot,
    ToolCallSnapshot,
    ToolServerError,
    ToolServerStartSnapshot,
    HistorySnapshot,
    TaskSnapshot,
    RunSnapshot,
    RunSummary,
)
"""Every typed dict of the snapshot (and of a run in a list)."""

# Counts and durations are never negative; records cannot say so without pydantic.
_NON_NEGATIVE_SUFFIXES: Final = ("_tokens", "_ms", "turns")


def _tidy(schema: dict[str, Any]) -> None:
    """Plain JSON Schema for every generator that uses these types: no generated titles,
    ``T | None`` of a simple type written as ``{"type": [T, "null"]}``, and ``minimum: 0``
    on token and turn counts and durations."""
    schema.pop("title", None)
    for name, prop in schema.get("properties", {}).items():
        prop.pop("title", None)
        options = prop.get("anyOf")
        if options and len(options) == 2 and {"type": "null"} in options:
            (other,) = [option for option in options if option != {"type": "null"}]
            if isinstance(other.get("type"), str):  # not a reference or a compound
                del prop["anyOf"]
                prop.update(other)
                prop["type"] = [other["type"], "null"]
                if "enum" in prop:
                    prop["enum"] = [*prop["enum"], None]
        if name.endswith(_NON_NEGATIVE_SUFFIXES):
            prop["minimum"] = 0


_CONFIG: Final = ConfigDict(extra="forbid", use_attribute_docstrings=True, json_schema_extra=_tidy)
# pydantic reads a typed dict's config from this attribute; records stay free of pydantic.
_CONFIG_ATTRIBUTE: Final = "__pydantic_config__"
for _snapshot_type in SNAPSHOT_TYPES:
    setattr(_snapshot_type, _CONFIG_ATTRIBUTE, _CONFIG)


def inline_references(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by what it points to, and no
    ``$defs``/``components``: one self-contained document (these types have no cycles).

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
    return inline_references(TypeAdapter(RunSnapshot).json_schema(mode="serialization"))
