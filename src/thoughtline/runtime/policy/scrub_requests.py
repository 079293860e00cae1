"""Scrub echoed reasoning out of raw request bodies for the ``provider_raw`` trace layer.

From a task's second model call on, the request carries the reasoning of earlier calls
back to the provider (signatures, encrypted carriers, and on some wires the reasoning
text itself): each wire's round-trip rule demands it. Unless the mode records reasoning,
the body written to the trace keeps everything else — the prompt, the answer text of
earlier turns, the tool calls and results, the settings — and has every echoed reasoning
value replaced by :data:`~thoughtline.runtime.policy.scrub.REASONING_MARKER`.

Each wire's unit says where its requests echo reasoning
(:class:`~thoughtline.providers.wire.EchoedReasoning`: Anthropic ``thinking`` /
``redacted_thinking`` blocks, Responses ``reasoning`` items, Gemini ``thought`` parts and
every ``thoughtSignature``, the reasoning fields of Chat Completions and Ollama
messages). A body is scrubbed by every wire's rule at once, in the turns (``messages``,
``input``, ``contents``) of any wire, so a field one wire echoes is never let through
because another wire sent it. A body that is not JSON is replaced whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import orjson

from thoughtline.providers.registry import WIRE_APIS, wire_for
from thoughtline.providers.scrubbing import REASONING_MARKER
from thoughtline.runtime.policy.scrub import UNPARSEABLE_MARKER


@dataclass(frozen=True, slots=True)
class _Rules:
    turns: tuple[str, ...]
    blocks: frozenset[str]
    flags: tuple[str, ...]
    fields: frozenset[str]
    kept: tuple[str, ...]
    """What stays of an object that is reasoning as a whole: its kind, to show where it was."""


@cache
def _rules() -> _Rules:
    """Every wire's echoed reasoning, as one rule."""
    echoed = [wire_for(name).echoed for name in WIRE_APIS]
    flags = tuple(dict.fromkeys(flag for rule in echoed for flag in sorted(rule.flags)))
    return _Rules(
        turns=tuple(dict.fromkeys(rule.turns for rule in echoed)),
        blocks=frozenset().union(*(rule.blocks for rule in echoed)),
        flags=flags,
        fields=frozenset().union(*(rule.fields for rule in echoed)),
        kept=("type", *flags, "id"),
    )


def scrub_request(body: str) -> str:
    """``body`` (a request as sent) with the reasoning it echoes replaced."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return UNPARSEABLE_MARKER
    if not isinstance(payload, dict):
        return body
    rules = _rules()
    for key in rules.turns:
        if key in payload:
            payload[key] = _scrub(payload[key], rules)
    return orjson.dumps(payload).decode()


def scrub_request_delta(delta: dict[str, Any]) -> dict[str, Any]:
    """A stored request delta (:func:`~thoughtline.records.raw_requests.request_delta`)
    with the reasoning its new turns echo replaced: only what the delta holds is walked
    (the earlier turns were scrubbed when their own request was stored), and the body it
    rebuilds is the one :func:`scrub_request` would give for the whole request."""
    rules = _rules()
    lists = {
        key: [kept, _scrub(items, rules)] if key in rules.turns else [kept, items]
        for key, (kept, items) in delta["lists"].items()
    }
    changed = {
        key: _scrub(value, rules) if key in rules.turns else value
        for key, value in delta["set"].items()
    }
    return {**delta, "lists": lists, "set": changed}


def _scrub(value: Any, rules: _Rules) -> Any:
    if isinstance(value, list):
        return [_scrub(item, rules) for item in value]
    if not isinstance(value, dict):
        return value
    if value.get("type") in rules.blocks or any(value.get(flag) is True for flag in rules.flags):
        # The whole block is reasoning: only its kind stays, to show where it was.
        kept = {key: value[key] for key in rules.kept if key in value}
        return {**kept, "scrubbed": REASONING_MARKER}
    return {
        key: REASONING_MARKER if key in rules.fields else _scrub(item, rules)
        for key, item in value.items()
    }
