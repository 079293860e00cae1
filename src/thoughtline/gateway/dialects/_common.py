"""What the three dialects share: reading a body, checking its keys and fields, the
refusal they raise, and what a render needs besides the call."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn, Protocol, TypeAlias

import orjson

from thoughtline.errors import ErrorCode, ThoughtlineError
from thoughtline.gateway.call import GatewayCall
from thoughtline.model.requests import MAX_OUTPUT_TOKENS

Path: TypeAlias = tuple[str | int, ...]

MODEL_NAME_MAX = 256
"""The longest ``model`` read (routing names are ``ENDPOINT/MODEL`` or an alias)."""


class DialectError(ThoughtlineError):
    """A client request its dialect refuses: the stable code, one sentence, the HTTP
    status and the field it is about (``param``, spelled as the client API spells a path).
    Each dialect renders it in its API's error shape (``error_response``)."""

    def __init__(
        self, code: ErrorCode, message: str, *, status: int = 400, param: str | None = None
    ) -> None:
        super().__init__(code, message)
        self.status = status
        self.param = param


def read_json(raw: bytes, *, max_bytes: int) -> dict[str, Any]:
    """The body as a JSON object, or a :class:`DialectError`: over ``max_bytes``
    (``REQUEST_TOO_LARGE``, 413), not UTF-8 or not JSON (``JSON_INVALID``), not an
    object (``REQUEST_INVALID``)."""
    if len(raw) > max_bytes:
        raise DialectError(
            "REQUEST_TOO_LARGE",
            f"The body is {len(raw):,} bytes, over the gateway's limit of {max_bytes:,}; "
            "send a shorter conversation.",
            status=413,
        )
    try:
        value = orjson.loads(raw)  # refuses bytes that are not UTF-8, too
    except orjson.JSONDecodeError as exc:
        try:
            raw.decode("utf-8")  # only to name the first bad byte, on this error path
        except UnicodeDecodeError as bad:
            raise DialectError(
                "JSON_INVALID",
                f"The body is not UTF-8 (byte 0x{raw[bad.start]:02x} at offset {bad.start}); "
                "send JSON encoded as UTF-8.",
            ) from None
        raise DialectError(
            "JSON_INVALID", f"The body is not valid JSON ({exc}); send one JSON object."
        ) from None
    if type(value) is not dict:
        raise DialectError(
            "REQUEST_INVALID",
            f"The body is {_kind(value)}, not a JSON object; send one JSON object.",
        )
    return value


class BodyParser(Protocol):
    """A dialect's ``parse``: the call a body asks for, or a :class:`DialectError`."""

    def __call__(self, raw: bytes, *, max_bytes: int) -> GatewayCall: ...


def body_parser(parse_object: Callable[[dict[str, Any]], GatewayCall]) -> BodyParser:
    """The ``parse`` of a dialect whose ``parse_object`` reads a body already read as
    JSON: the bytes read as one JSON object (:func:`read_json`), then as its call."""

    def parse(raw: bytes, *, max_bytes: int) -> GatewayCall:
        return parse_object(read_json(raw, max_bytes=max_bytes))

    return parse


def check_keys(
    fields: Fields,
    body: Mapping[str, Any],
    *,
    known: frozenset[str],
    unserved: Mapping[str, str],
    unknown: str,
    null_unserved: bool = False,
) -> None:
    """Refuses the first top-level key of ``body`` that the gateway does not take: one of
    its API's it does not serve (``GATEWAY_REQUEST_UNSUPPORTED``, with the reason in
    ``unserved``), or one its API does not have (``REQUEST_INVALID``, with the API's own
    sentence: ``unknown``, the key in place of ``{key}``). ``known``: the keys read or
    ignored. ``null_unserved``: an unserved key sent as null is taken as left out."""
    for key, value in body.items():
        if key in unserved:
            if value is None and null_unserved:
                continue
            fields.unsupported((key,), unserved[key] + ".")
        if key not in known:
            raise DialectError("REQUEST_INVALID", unknown.format(key=key), param=key)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class Fields:
    """Reads typed fields of a body, refusing a wrong one with a sentence that names it
    the way the client API names a path (``messages[0].content`` for OpenAI,
    ``messages.0.content`` for Anthropic)."""

    def __init__(self, spell: Callable[[Path], str]) -> None:
        self.spell = spell

    def fail(self, path: Path, message: str, *, code: ErrorCode = "REQUEST_INVALID") -> NoReturn:
        where = self.spell(path)
        raise DialectError(code, f"{where}: {message}", param=where)

    def unsupported(self, path: Path, message: str) -> NoReturn:
        self.fail(path, message, code="GATEWAY_REQUEST_UNSUPPORTED")

    def wrong(self, path: Path, expected: str, value: object) -> NoReturn:
        self.fail(path, f"expected {expected}, got {_kind(value)}.")

    def missing(self, path: Path) -> NoReturn:
        self.fail(path, "is required.")

    def string(
        self, body: Mapping[str, Any], key: str, path: Path = (), *, required: bool = False
    ) -> str | None:
        value = body.get(key)
        if value is None:
            if required:
                self.missing((*path, key))
            return None
        if not isinstance(value, str):
            self.wrong((*path, key), "a string", value)
        return value

    def need(self, body: Mapping[str, Any], key: str, path: Path = ()) -> str:
        """A string field that must be there."""
        value = self.string(body, key, path, required=True)
        assert value is not None
        return value

    def answered(
        self, body: Mapping[str, Any], key: str, path: Path, names: Mapping[str, str], unknown: str
    ) -> tuple[str, str]:
        """A tool result's call id (``key``) and the name of the call it answers, made by
        an earlier assistant turn (``names``: call id → name); an id no earlier call has
        is refused with ``unknown``, the id (quoted) in place of ``{call_id}``."""
        call_id = self.need(body, key, path)
        name = names.get(call_id)
        if name is None:
            self.fail((*path, key), unknown.format(call_id=repr(call_id)))
        return call_id, name

    def boolean(self, body: Mapping[str, Any], key: str, path: Path = ()) -> bool | None:
        value = body.get(key)
        if value is None:
            return None
        if not isinstance(value, bool):
            self.wrong((*path, key), "a boolean", value)
        return value

    def array(
        self, body: Mapping[str, Any], key: str, path: Path = (), *, required: bool = False
    ) -> list[Any] | None:
        value = body.get(key)
        if value is None:
            if required:
                self.missing((*path, key))
            return None
        if not isinstance(value, list):
            self.wrong((*path, key), "an array", value)
        return value

    def mapping(self, value: object, path: Path) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.wrong(path, "an object", value)
        return value

    def tokens(
        self, body: Mapping[str, Any], key: str, path: Path = (), *, required: bool = False
    ) -> int | None:
        value = body.get(key)
        where = (*path, key)
        if value is None:
            if required:
                self.missing(where)
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            self.wrong(where, "an integer", value)
        if not 1 <= value <= MAX_OUTPUT_TOKENS:
            self.fail(where, f"must be from 1 to {MAX_OUTPUT_TOKENS:,}, got {value}.")
        return value

    def number(self, body: Mapping[str, Any], key: str, *, low: float, high: float) -> float | None:
        value = body.get(key)
        if value is None:
            return None
        if not isinstance(value, int | float) or isinstance(value, bool):
            self.wrong((key,), "a number", value)
        if not low <= value <= high:  # also refuses NaN
            self.fail((key,), f"must be from {low:g} to {high:g}, got {value!r}.")
        return float(value)

    def model(self, body: Mapping[str, Any]) -> str:
        model = self.need(body, "model")
        if not model or len(model) > MODEL_NAME_MAX or not model.isprintable():
            self.fail(
                ("model",),
                f"must be 1 to {MODEL_NAME_MAX} printable characters: an alias of "
                "[gateway.models] or ENDPOINT/MODEL.",
            )
        return model

    def choice(self, value: object, path: Path, allowed: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in allowed:
            shown = repr(value) if isinstance(value, str) else _kind(value)
            self.fail(path, f"{shown} is not one of {', '.join(map(repr, allowed))}.")
        return value


def openai_path(path: Path) -> str:
    """``messages[0].content``: how OpenAI names a field in ``param``."""
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


def anthropic_path(path: Path) -> str:
    """``messages.0.content``: how Anthropic names a field in its messages."""
    return ".".join(str(step) for step in path)


def _reply_id() -> str:
    return secrets.token_hex(12)


def _now() -> int:
    return int(time.time())


@dataclass(frozen=True, slots=True, kw_only=True)
class Rendering:
    """What a render needs besides the call and the events: the reply's id (each
    dialect adds its API's prefix), its creation time in Unix seconds, and whether the
    client's mode shows reasoning (``surface``, ``surface_and_telemetry``). When it does
    not, a render carries nothing of reasoning: no text, summary, signature, encrypted
    item or reasoning token count (a dialect whose schema requires the count says 0)."""

    shows_reasoning: bool
    reply_id: str = field(default_factory=_reply_id)
    created: int = field(default_factory=_now)


def as_asked(rendering: Rendering, call: GatewayCall) -> Rendering:
    """What a reply shows: the client's mode, less reasoning a client turned off itself
    (Messages' or DeepSeek's ``thinking: disabled``). A request never gets more than its
    mode; it may ask for less, as the API it speaks would give."""
    if rendering.shows_reasoning and call.reasoning.enabled is False:
        return replace(rendering, shows_reasoning=False)
    return rendering


def sse(event: str | None, payload: bytes) -> bytes:
    """One SSE frame: ``event:`` (when named) and one ``data:`` line (compact JSON holds
    no line break)."""
    if event is None:
        return b"data: " + payload + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + payload + b"\n\n"


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)
