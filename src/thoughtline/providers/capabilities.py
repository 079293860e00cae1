"""Model capability data: what each model family accepts and what reasoning it returns.

The data lives in ``capabilities.toml`` beside this module (one table for every
endpoint). Look-ups never fail a run: an unknown model falls back to its endpoint's
fallback family and says so in ``source``.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any, Literal, TypeAlias, cast

from thoughtline.model.events import REASONING_KINDS, ReasoningKind
from thoughtline.model.requests import EFFORTS, Effort

ThinkingControl: TypeAlias = Literal["adaptive", "budget", "level", "effort", "toggle", "none"]
THINKING_CONTROLS: tuple[ThinkingControl, ...] = (
    "adaptive",
    "budget",
    "level",
    "effort",
    "toggle",
    "none",
)
CapabilitySource: TypeAlias = Literal["builtin", "fallback", "cache"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCapability:
    """One model family's capabilities, as matched for a concrete model."""

    family: str
    label: str
    endpoints: tuple[str, ...]
    match: tuple[str, ...]
    thinking_control: ThinkingControl
    efforts: tuple[Effort, ...]
    returns: tuple[ReasoningKind, ...]
    reasoning_by_default: bool
    always_reasons: bool = False
    """No request turns the model's reasoning off: hidden mode sends no off switch."""
    default_display: Literal["summarized", "omitted"] | None = None
    fallback: bool = False
    source: CapabilitySource = "builtin"
    context_window: int | None = None
    """Tokens one call reads and writes; ``None`` where the server decides."""
    max_output_tokens: int | None = None
    """The most tokens one call may ask the model to write (its output field, reasoning
    included); ``None`` where the server decides or the providers do not say."""
    preserved_thinking: bool = False
    """Earlier turns' thinking stays in context, bound to its prefix (Anthropic)."""
    models: tuple[str, ...] = ()
    """Model ids a user can type (``thoughtline models``, "did you mean"): the data's
    ``models``, else its ``match`` prefixes, which are then ids themselves."""

    @property
    def takes_effort(self) -> bool:
        """An ``effort`` changes what the model is sent."""
        return self.thinking_control != "none" and bool(self.efforts)

    @property
    def returns_raw_text(self) -> bool:
        """The model's reasoning text is its own (raw), not a provider summary: wire
        formats that look alike (Anthropic thinking blocks, OpenRouter's
        ``anthropic-claude-v1``) then carry raw text, e.g. Claude 3.7 Sonnet."""
        return "raw" in self.returns and "summary" not in self.returns

    def accepts_effort(self, effort: Effort) -> bool:
        return effort == "provider-default" or effort in self.efforts

    def describe(self) -> dict[str, Any]:
        """A JSON-ready view for ``thoughtline providers --json`` and the trace."""
        return {
            "family": self.family,
            "label": self.label,
            "thinking_control": self.thinking_control,
            "efforts": list(self.efforts),
            "returns": list(self.returns),
            "reasoning_by_default": self.reasoning_by_default,
            "always_reasons": self.always_reasons,
            "default_display": self.default_display,
            "source": self.source,
        }


FOUND_KEPT = 1024
"""Answers a table keeps (endpoint and model names come from users: a bound, then
forgotten all at once)."""


class CapabilityTable:
    """Families from the data table, looked up by endpoint name and model id."""

    def __init__(self, families: list[ModelCapability]) -> None:
        self.families = families
        self._found: dict[tuple[str, str], ModelCapability] = {}

    def lookup(self, endpoint: str, model: str) -> ModelCapability:
        """The family for ``model`` on ``endpoint``; never raises.

        Longest matching prefix wins; otherwise the endpoint's fallback family (or the
        generic OpenAI-compatible one for user-defined endpoints) with
        ``source="fallback"``. Each answer is kept (the table does not change, and every
        model call asks three times: every prefix of the table compared each time was a
        few percent of a tool loop step's own cost).
        """
        key = (endpoint, model)
        found = self._found.get(key)
        if found is None:
            if len(self._found) >= FOUND_KEPT:
                self._found.clear()
            found = self._found[key] = self._looked_up(endpoint, model)
        return found

    def _looked_up(self, endpoint: str, model: str) -> ModelCapability:
        best: ModelCapability | None = None
        best_length = -1
        for family in self._for_endpoint(endpoint):
            for prefix in family.match:
                if model.startswith(prefix) and len(prefix) > best_length:
                    best, best_length = family, len(prefix)
        if best is not None:
            return best
        # A model the data does not know may write more than the family's models.
        for family in self._for_endpoint(endpoint):
            if family.fallback:
                return replace(family, source="fallback", max_output_tokens=None)
        for family in self.families:
            if "*" in family.endpoints:
                return replace(family, source="fallback", max_output_tokens=None)
        raise LookupError("capability table has no generic fallback family")  # data bug

    def for_endpoint(self, endpoint: str) -> list[ModelCapability]:
        return list(self._for_endpoint(endpoint))

    def model_ids(self, endpoint: str) -> list[str]:
        """The model ids the data knows for ``endpoint``, in the table's order."""
        return list(
            dict.fromkeys(
                model for family in self._for_endpoint(endpoint) for model in family.models
            )
        )

    def did_you_mean(self, endpoint: str, model: str) -> str | None:
        """The known id of ``endpoint`` closest to ``model`` (a likely typo), or ``None``
        when none is close or ``model`` is itself known."""
        known = self.model_ids(endpoint)
        if model in known:
            return None
        close = difflib.get_close_matches(model, known, n=1, cutoff=0.75)
        return close[0] if close else None

    def _for_endpoint(self, endpoint: str) -> list[ModelCapability]:
        exact = [family for family in self.families if endpoint in family.endpoints]
        if exact:
            return exact
        return [family for family in self.families if "*" in family.endpoints]


def _tokens(entry: dict[str, Any], key: str, *, most: int | None = None) -> int | None:
    """``entry[key]`` as a count of tokens (absent: ``None``), at most ``most``; else
    ``ValueError`` naming the file, the family and the key."""
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"capabilities.toml family {entry['id']}: {key} must be a whole number of tokens "
            f"from 1 up, got {value!r}"
        )
    if most is not None and value > most:
        raise ValueError(
            f"capabilities.toml family {entry['id']}: {key} = {value} is more than its "
            f"context_window ({most}); a call cannot write more than its context holds"
        )
    return value


def _family_from_toml(entry: dict[str, Any]) -> ModelCapability:
    family_id = entry["id"]
    control = entry["thinking_control"]
    if control not in THINKING_CONTROLS:
        raise ValueError(f"capabilities.toml family {family_id}: bad thinking_control {control!r}")
    for effort in entry["efforts"]:
        if effort not in EFFORTS:
            raise ValueError(f"capabilities.toml family {family_id}: bad effort {effort!r}")
    for kind in entry["returns"]:
        if kind not in REASONING_KINDS:
            raise ValueError(f"capabilities.toml family {family_id}: bad kind {kind!r}")
    return ModelCapability(
        family=family_id,
        label=entry["label"],
        endpoints=tuple(entry["endpoints"]),
        match=tuple(entry["match"]),
        thinking_control=cast(ThinkingControl, control),
        efforts=tuple(entry["efforts"]),
        returns=tuple(entry["returns"]),
        reasoning_by_default=bool(entry["reasoning_by_default"]),
        always_reasons=bool(entry.get("always_reasons", False)),
        default_display=entry.get("default_display"),
        fallback=bool(entry.get("fallback", False)),
        context_window=(window := _tokens(entry, "context_window")),
        max_output_tokens=_tokens(entry, "max_output_tokens", most=window),
        preserved_thinking=bool(entry.get("preserved_thinking", False)),
        models=tuple(entry.get("models", entry["match"])),
    )


def capabilities_from_toml(text: str) -> CapabilityTable:
    """The table in ``text`` (``capabilities.toml``'s form); ``ValueError`` naming the
    file, the family and the key of a bad value."""
    data = tomllib.loads(text)
    return CapabilityTable([_family_from_toml(entry) for entry in data["family"]])


@cache
def builtin_capabilities() -> CapabilityTable:
    """The table shipped with thoughtline (parsed once per process)."""
    text = resources.files("thoughtline.providers").joinpath("capabilities.toml").read_text()
    return capabilities_from_toml(text)
