"""The simulator's default model: what it says when no transcript was scripted.

It reads the request (a :class:`~thoughtline.testing.conversation.SimConversation`,
the same on every wire) and answers in a way a person can follow:

- With no tools offered, a short answer that names the model, the role (read from a
  system prompt that starts "You are a ...") and the request, so runs differ.
- When the request offers tools and sends no tool result yet, it calls the tool that
  fits the request best: the most words shared between the request and the tool's name
  and description (the name counts twice; ties go to the tool offered first). A second
  tool is called in parallel when it matches at least two words of the request the
  first does not. With no word shared, it calls the only tool offered, and none of
  several. Arguments are valid for the tool's JSON schema (see :func:`arguments_for`).
- When the request carries tool results, it answers quoting them.

It calls tools at most once per user turn, so a tool loop against it always ends. It
reasons on every step; the reasoning starts with :data:`REASONING_OPENING`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from thoughtline.testing.conversation import SimConversation, SimTool
from thoughtline.testing.transcript import SimReasoning, SimToolCall, Transcript

REASONING_OPENING: Final = "The user wants a short, direct answer."
PLAIN_REASONING: Final = (
    f"{REASONING_OPENING} I will check the request, weigh two options and pick the simpler one."
)
PLAIN_ANSWER: Final = "Here is a short, direct answer from the simulated model."

# Places a request may name, and their IANA zone (a small table, not a gazetteer).
ZONES_BY_PLACE: Final[dict[str, str]] = {
    "tokyo": "Asia/Tokyo",
    "japan": "Asia/Tokyo",
    "seoul": "Asia/Seoul",
    "beijing": "Asia/Shanghai",
    "shanghai": "Asia/Shanghai",
    "china": "Asia/Shanghai",
    "hong kong": "Asia/Hong_Kong",
    "singapore": "Asia/Singapore",
    "mumbai": "Asia/Kolkata",
    "delhi": "Asia/Kolkata",
    "india": "Asia/Kolkata",
    "dubai": "Asia/Dubai",
    "moscow": "Europe/Moscow",
    "berlin": "Europe/Berlin",
    "paris": "Europe/Paris",
    "madrid": "Europe/Madrid",
    "rome": "Europe/Rome",
    "amsterdam": "Europe/Amsterdam",
    "london": "Europe/London",
    "new york": "America/New_York",
    "nyc": "America/New_York",
    "toronto": "America/Toronto",
    "chicago": "America/Chicago",
    "denver": "America/Denver",
    "los angeles": "America/Los_Angeles",
    "san francisco": "America/Los_Angeles",
    "seattle": "America/Los_Angeles",
    "sao paulo": "America/Sao_Paulo",
    "são paulo": "America/Sao_Paulo",
    "sydney": "Australia/Sydney",
    "auckland": "Pacific/Auckland",
    "utc": "UTC",
}


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_STOP_WORDS: Final = _word_set(
    "a an and are as at be by can could do does for from give how i in into is it "
    "its me my of on or please show tell than that the this to was what when where "
    "which who why will with would you your"
)
_IANA_ZONE = re.compile(r"\b(?:Africa|America|Asia|Atlantic|Australia|Europe|Pacific)/[A-Za-z_]+")
_ARITHMETIC = re.compile(r"[\d(][\d\s.+\-*/%()^]*[\d)]")
_FILE_NAME = re.compile(r"[\w./-]*\w\.[A-Za-z0-9]{1,8}\b")
_URL = re.compile(r"https?://\S+")
# Words of a property's name that say what it holds (the first kind found wins).
_NAME_KINDS: Final = (
    ("zone", _word_set("timezone tz zone")),
    ("expression", _word_set("expression expr formula calculation")),
    ("url", _word_set("url uri link")),
    ("path", _word_set("path file filename filepath")),
    ("text", _word_set("query q text prompt question input message search content topic")),
)
_ENDS: Final = (".", "!", "?", "…")
_MAX_SCHEMA_DEPTH: Final = 8
_QUOTE_CHARS: Final = 80
_RESULT_CHARS: Final = 200


def respond(conversation: SimConversation, model: str | None) -> Transcript:
    """The default model's turn for ``conversation`` (see the module docstring)."""
    seed = _digest(model, conversation)
    label = _label(model, conversation.system)
    asked = _quote(conversation.prompt, _QUOTE_CHARS)
    if conversation.results:
        quoted = "; ".join(
            f"{result.name or 'the tool'} {'failed' if result.is_error else 'returned'}: "
            f"{_quote(result.content, _RESULT_CHARS)}"
            for result in conversation.results
        )
        return Transcript(
            reasoning=(
                SimReasoning(
                    kind="summary",
                    text=f"{REASONING_OPENING} The tool results are back; "
                    "I will quote them in the answer.",
                ),
            ),
            answer=f"{label} On '{asked}': {quoted}{'' if quoted.endswith(_ENDS) else '.'}",
            response_id=f"sim_{seed}",
        )
    chosen = choose_tools(conversation.prompt, conversation.tools)
    if chosen and conversation.tool_steps == 0:
        calls = tuple(
            SimToolCall(
                call_id=f"call_{seed}_{index}",
                name=tool.name,
                arguments=json.dumps(
                    arguments_for(tool.schema, conversation.prompt), ensure_ascii=False
                ),
            )
            for index, tool in enumerate(chosen)
        )
        names = " and ".join(tool.name for tool in chosen)
        plan = "; ".join(f"{call.name} with {call.arguments}" for call in calls)
        return Transcript(
            reasoning=(
                SimReasoning(
                    kind="summary",
                    text=f"{REASONING_OPENING} {names} fit{'s' if len(chosen) == 1 else ''} "
                    f"the request best. I will call {plan}, then answer from the result.",
                ),
            ),
            tool_calls=calls,
            finish="tool_calls",
            response_id=f"sim_{seed}",
        )
    return Transcript(
        reasoning=(SimReasoning(kind="summary", text=PLAIN_REASONING),),
        answer=f"{label} On '{asked}': {PLAIN_ANSWER}",
        reasoning_tokens=96,
        response_id=f"sim_{seed}",
    )


# ---------------------------------------------------------------- choosing tools


def choose_tools(prompt: str, tools: Sequence[SimTool]) -> list[SimTool]:
    """The tools to call for ``prompt``: one, two or none (see the module docstring)."""
    asked = _words(prompt)
    scored: list[tuple[int, int, SimTool, set[str]]] = []
    for position, tool in enumerate(tools):
        name_words = _words(tool.name)
        matched = asked & (name_words | _words(tool.description))
        score = sum(2 if word in name_words else 1 for word in matched)
        scored.append((score, position, tool, matched))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    if not scored:
        return []
    best_score, _, best, covered = scored[0]
    if best_score == 0:
        return [best] if len(tools) == 1 else []
    chosen = [best]
    for score, _, tool, matched in scored[1:]:
        if score > 0 and len(matched - covered) >= 2:
            chosen.append(tool)
            break
    return chosen


def _words(text: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    words = set()
    for word in re.findall(r"[a-z0-9]+", spaced.lower()):
        if word in _STOP_WORDS or len(word) < 2:
            continue
        words.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return words


# ---------------------------------------------------------------- arguments


def arguments_for(schema: Mapping[str, Any], prompt: str) -> dict[str, Any]:
    """Arguments valid for the object ``schema``: every required property, and each
    optional one whose name fits something the request says (a ``timezone`` and a
    place in :data:`ZONES_BY_PLACE`, an ``expression`` and arithmetic, a ``path`` and a
    file name, a ``url`` and a URL)."""
    value = _object(schema, schema, prompt, 0)
    return value if isinstance(value, dict) else {}


def _object(schema: Mapping[str, Any], root: Mapping[str, Any], prompt: str, depth: int) -> Any:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    required_names = (
        [name for name in required if isinstance(name, str)] if isinstance(required, list) else []
    )
    out: dict[str, Any] = {}
    for name, subschema in properties.items():
        if not isinstance(subschema, Mapping):
            continue
        found = _from_request(name, prompt)
        if name in required_names or found is not None:
            out[name] = _value(name, subschema, root, prompt, depth + 1)
    for name in required_names:
        if name not in out:
            out[name] = _from_request(name, prompt) or "example"
    return out


def _value(
    name: str, schema: Mapping[str, Any], root: Mapping[str, Any], prompt: str, depth: int
) -> Any:
    schema = _resolved(schema, root, depth)
    if depth > _MAX_SCHEMA_DEPTH:
        return None
    if "const" in schema:
        return schema["const"]
    found = _from_request(name, prompt)
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return found if found in enum else enum[0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list):
            typed = [o for o in options if isinstance(o, Mapping) and o.get("type") != "null"]
            if typed:
                return _value(name, {**_without(schema, key), **typed[0]}, root, prompt, depth + 1)
    kind = _type_of(schema)
    if kind == "string" and found is not None:
        return _fit_length(found, schema)
    if "default" in schema:
        return schema["default"]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if kind == "object":
        return _object(schema, root, prompt, depth)
    if kind == "array":
        items = schema.get("items")
        count = schema.get("minItems")
        count = count if isinstance(count, int) and count > 0 else 0
        item_schema = items if isinstance(items, Mapping) else {}
        return [_value(name, item_schema, root, prompt, depth + 1) for _ in range(min(count, 8))]
    if kind in ("integer", "number"):
        return _number(schema, kind)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _fit_length(_plain_string(name, schema, prompt), schema)


def _resolved(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Mapping[str, Any]:
    """``schema`` with a local ``$ref`` (``#/$defs/...``) followed, a bounded number of times."""
    for _ in range(_MAX_SCHEMA_DEPTH - min(depth, _MAX_SCHEMA_DEPTH)):
        reference = schema.get("$ref")
        if not isinstance(reference, str) or not reference.startswith("#/"):
            return schema
        target: Any = root
        for part in reference[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        if not isinstance(target, Mapping):
            return _without(schema, "$ref")
        schema = {**_without(schema, "$ref"), **target}
    return schema


def _without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}


def _type_of(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if isinstance(k, str) and k != "null"]
        kind = kinds[0] if kinds else "null"
    if isinstance(kind, str):
        return kind
    return "object" if "properties" in schema else "string"


def _number(schema: Mapping[str, Any], kind: str) -> int | float:
    minimum = schema.get("minimum", schema.get("exclusiveMinimum"))
    maximum = schema.get("maximum", schema.get("exclusiveMaximum"))
    value: float = 1
    if isinstance(minimum, int | float) and not isinstance(minimum, bool):
        value = max(value, minimum + (1 if "exclusiveMinimum" in schema else 0))
    if isinstance(maximum, int | float) and not isinstance(maximum, bool):
        value = min(value, maximum - (1 if "exclusiveMaximum" in schema else 0))
    return int(value) if kind == "integer" else float(value)


def _fit_length(text: str, schema: Mapping[str, Any]) -> str:
    longest = schema.get("maxLength")
    if isinstance(longest, int) and longest >= 0:
        text = text[:longest]
    shortest = schema.get("minLength")
    if isinstance(shortest, int) and len(text) < shortest:
        text = text + "x" * (shortest - len(text))
    return text


def _name_kind(name: str) -> str | None:
    """What a property's name says it holds, from its words (``source_timezone``,
    ``filePath``): ``zone``, ``expression``, ``url``, ``path``, ``text`` or ``None``."""
    words = {word.lower() for word in re.findall(r"[A-Z]+(?![a-z])|[A-Za-z][a-z]*", name)}
    for kind, names in _NAME_KINDS:
        if words & names:
            return kind
    return None


def _from_request(name: str, prompt: str) -> str | None:
    """A value for a property called ``name`` that the request itself gives, if any."""
    kind = _name_kind(name)
    if kind == "zone":
        return zone_in(prompt)
    if kind == "expression":
        match = max(_ARITHMETIC.findall(prompt), key=len, default="")
        return match.strip() if re.search(r"\d\s*[-+*/%^]\s*[\d(]", match) else None
    if kind == "url":
        url = _URL.search(prompt)
        return url.group(0).rstrip(".,;:!?)\"'") if url else None
    if kind == "path":
        path = _FILE_NAME.search(prompt)
        return path.group(0) if path else None
    if kind == "text" and prompt.strip():
        return prompt.strip()
    return None


def zone_in(text: str) -> str | None:
    """The IANA zone ``text`` names, or implies by a place in :data:`ZONES_BY_PLACE`."""
    named = _IANA_ZONE.search(text)
    if named:
        return named.group(0)
    lowered = text.lower()
    for place, zone in ZONES_BY_PLACE.items():
        if re.search(rf"(?<![a-z]){re.escape(place)}(?![a-z])", lowered):
            return zone
    return None


def _plain_string(name: str, schema: Mapping[str, Any], prompt: str) -> str:
    kind = _name_kind(name)
    if kind == "zone":
        return "UTC"
    if kind == "expression":
        return "2 + 2"
    if kind == "path":
        return "README.md"
    if kind == "url":
        return "https://example.com/"
    formats = {
        "date-time": "2026-01-01T00:00:00Z",
        "date": "2026-01-01",
        "time": "12:00:00",
        "email": "user@example.com",
        "uri": "https://example.com/",
        "url": "https://example.com/",
    }
    shape = schema.get("format")
    if isinstance(shape, str) and shape in formats:
        return formats[shape]
    return prompt.strip() or "example"


# ---------------------------------------------------------------- answers


def _label(model: str | None, system: str) -> str:
    role = role_of(system)
    who = f"simulated {model or 'model'}"
    if role:
        return f"({who}, as {role})"
    if system.strip():
        return f"({who}, with a system prompt)"
    return f"({who})"


def role_of(system: str) -> str | None:
    """The role a system prompt gives, from "You are a ... reviewer." (its last word)."""
    match = re.match(r"\s*you are (?:an? |the )?([^.,;:!\n]+)", system, re.IGNORECASE)
    if not match:
        return None
    words = re.findall(r"[A-Za-z][\w-]*", match.group(1))
    return words[-1].lower() if words else None


def _quote(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _digest(model: str | None, conversation: SimConversation) -> str:
    seen = json.dumps(
        [
            model,
            conversation.system,
            conversation.prompt,
            [tool.name for tool in conversation.tools],
            [[result.call_id, result.content] for result in conversation.results],
            conversation.tool_steps,
        ],
        ensure_ascii=False,
    )
    return hashlib.sha256(seen.encode("utf-8")).hexdigest()[:16]
