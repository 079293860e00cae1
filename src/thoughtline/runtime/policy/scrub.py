"""Scrub reasoning out of raw provider response bodies for the ``provider_raw`` trace layer.

Reasoning fields inside raw bodies are scrubbed unless the mode records reasoning
(``telemetry_only``, ``surface_and_telemetry``): in ``hidden`` and ``surface`` modes the
bytes written to the trace must carry no reasoning at all — not its text, not signatures,
not encrypted carriers — while everything else (answer text, usage including reasoning
token counts, ids, finish reasons, errors) stays.

:func:`scrub_reasoning` takes the body exactly as :class:`~thoughtline.providers.exchange.
Exchange` holds it and returns it with every reasoning value replaced:

- strings by :data:`REASONING_MARKER`, arrays and objects by empty ones (what is scrubbed
  on each wire is the wire's own: ``providers/<wire>/_scrub.py``, handed out by its
  unit's ``new_scrubber``; the shared rules are :mod:`thoughtline.providers.scrubbing`);
- streams frame by frame: SSE frames keep their ``event:``/``id:`` lines, comments, line
  ends, count and order, and their JSON payload is re-serialized compactly; NDJSON
  likewise line by line;
- anything that cannot be parsed — a malformed JSON payload, a truncated tail, bytes that
  are not UTF-8, an SSE line that is no SSE field — is replaced by
  :data:`UNPARSEABLE_MARKER`, never passed through, since it could hold reasoning.

Error bodies are returned unchanged: those of an HTTP error status (pass ``status``) and
whole JSON bodies shaped as an error (a top-level ``error`` and no response content).
They carry no reasoning.

Work is linear in the body size: each byte is framed once, each payload parsed and
written once (a Chat Completions frame is written again at most once, when a held-back
partial ``<think>`` tag turns out to be answer text at the end of the stream).
"""

from __future__ import annotations

import re
from typing import Any, Final

import orjson

from thoughtline.errors import ConfigError
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.registry import WIRE_APIS, known_wire
from thoughtline.providers.scrubbing import REASONING_MARKER, PayloadScrubber

__all__ = ["REASONING_MARKER", "UNPARSEABLE_MARKER", "scrub_reasoning"]

UNPARSEABLE_MARKER: Final = "[unparseable frame removed]"
"""What a frame, line or body that cannot be parsed is replaced by."""

_UNPARSEABLE: Final = UNPARSEABLE_MARKER.encode()
_DONE: Final = "[DONE]"  # the OpenAI-compatible end-of-stream sentinel
# Top-level keys that hold response content: a JSON body with any of them is not a bare
# error body, whatever else it carries.
_CONTENT_KEYS: Final = frozenset({"choices", "candidates", "content", "output", "message"})
# An event name worth keeping on a marker frame: a protocol name, nothing that could be text.
_EVENT_NAME: Final = re.compile(r"[A-Za-z0-9_.\-]{1,100}")
_LINE_ENDS: Final = (b"\r\n", b"\n", b"\r")


def scrub_reasoning(
    body: bytes,
    *,
    wire_api: str,
    streamed: bool,
    endpoint: Endpoint,
    status: int | None = None,
) -> bytes:
    """``body`` with every reasoning value replaced (see the module docstring).

    ``wire_api`` picks the protocol, ``streamed`` whether ``body`` is a stream (framed
    as the wire API frames it: SSE or NDJSON) or one JSON document, and ``endpoint`` the Chat Completions
    dialect and ``reasoning_field`` (``<think>`` tags are split for raw-reasoning
    endpoints reading ``think_tags`` or ``auto``). ``status``, when given, is the HTTP
    status: error statuses (400 and above) return ``body`` unchanged, as any error page
    would otherwise be unparseable and replaced.

    Raises :class:`~thoughtline.errors.ConfigError` for an unknown ``wire_api``.
    """
    wire = known_wire(wire_api)
    if wire is None:
        raise ConfigError(
            f"Cannot scrub reasoning from a {wire_api!r} body: unknown wire_api. "
            f"Allowed values: {', '.join(WIRE_APIS)}."
        )
    if (status is not None and status >= 400) or not body:
        return body
    scrubber = wire.new_scrubber(endpoint)
    if not streamed:
        return _scrub_whole(body, scrubber)
    if wire.framing == "ndjson":
        return _scrub_ndjson(body, scrubber)
    return _scrub_sse(body, scrubber)


def _dumps(payload: Any) -> bytes:
    return orjson.dumps(payload)


def _loads(data: str | bytes) -> Any:
    """The parsed JSON, or ``None`` when it is not JSON (``null`` is not a payload either)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


# ---------------------------------------------------------------------- whole bodies


def _scrub_whole(body: bytes, scrubber: PayloadScrubber) -> bytes:
    """One JSON document: an object, or (Gemini without ``alt=sse``) an array of them."""
    if not body.strip():
        return body
    document = _loads(body)
    if isinstance(document, dict):
        if "error" in document and not _CONTENT_KEYS.intersection(document):
            return body  # an error reported in the body: nothing to scrub, keep it exact
        payloads = [document]
    elif isinstance(document, list) and document and all(isinstance(x, dict) for x in document):
        payloads = document
    else:
        return _UNPARSEABLE
    for payload in payloads:
        scrubber.scrub(payload, 0)
    scrubber.end()  # patches only name these payloads, which are serialized next
    return _dumps(document)


# ---------------------------------------------------------------------- NDJSON


def _scrub_ndjson(body: bytes, scrubber: PayloadScrubber) -> bytes:
    """One JSON object per ``\\n``-ended line; blank lines kept, a cut last line marked."""
    out: list[bytes] = []
    payloads: dict[int, tuple[Any, bytes]] = {}
    lines = body.split(b"\n")
    last = len(lines) - 1
    for number, line in enumerate(lines):
        end = b"\n" if number < last else b""
        if line.endswith(b"\r"):
            line, end = line[:-1], b"\r" + end
        if not line.strip():
            out.append(line + end)
            continue
        payload = _loads(line)
        if not isinstance(payload, dict):
            out.append(_UNPARSEABLE + end)
            continue
        slot = len(out)
        scrubber.scrub(payload, slot)
        payloads[slot] = (payload, end)
        out.append(_dumps(payload) + end)
    for slot, payload in scrubber.end():
        out[slot] = _dumps(payload) + payloads[slot][1]
    return b"".join(out)


# ---------------------------------------------------------------------- SSE


def _split_line(line: bytes) -> tuple[bytes, bytes]:
    """``(content, line end)``; the end is empty for a last line cut short."""
    for end in _LINE_ENDS:
        if line.endswith(end):
            return line[: -len(end)], end
    return line, b""


class _SSEWriter:
    """Rewrites SSE frames into ``out``; remembers where each JSON payload went."""

    __slots__ = ("out", "payloads", "scrubber")

    def __init__(self, scrubber: PayloadScrubber) -> None:
        self.scrubber = scrubber
        self.out: list[bytes] = []
        self.payloads: dict[int, bytes] = {}  # slot -> line end of its data line

    def frame(self, lines: list[tuple[bytes, bytes]]) -> None:
        """One frame (its lines, without the blank line that ends it)."""
        kept: list[tuple[bytes, bytes] | None] = []  # None: where the data line goes
        data: list[str] = []
        data_end = b""
        event: tuple[bytes, bytes] | None = None
        for content, end in lines:
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError:
                self._marker(event, lines[-1][1])
                return
            if text.startswith(":"):  # a comment (": OPENROUTER PROCESSING"): no payload
                kept.append((content, end))
                continue
            name, _, value = text.partition(":")
            if name == "data":
                if not data:
                    kept.append(None)
                    data_end = end
                data.append(value[1:] if value.startswith(" ") else value)
            elif name in ("event", "id", "retry"):
                kept.append((content, end))
                if name == "event" and _EVENT_NAME.fullmatch(value.strip()):
                    event = (content, end)
            else:  # not an SSE field: unknown content, treated as unparseable
                self._marker(event, lines[-1][1])
                return
        payload_line = b""
        payload: Any = None
        if data:
            joined = "\n".join(data)
            if joined and joined != _DONE:
                payload = _loads(joined)
                if not isinstance(payload, dict):
                    self._marker(event, lines[-1][1])
                    return
            else:
                payload_line = b"data: " + joined.encode()
        for line in kept:
            if line is not None:
                self.out.append(line[0] + line[1])
            elif payload is not None:
                slot = len(self.out)
                self.scrubber.scrub(payload, slot)
                self.payloads[slot] = data_end
                self.out.append(b"data: " + _dumps(payload) + data_end)
            else:
                self.out.append(payload_line + data_end)

    def _marker(self, event: tuple[bytes, bytes] | None, end: bytes) -> None:
        if event is not None:
            self.out.append(event[0] + event[1])
        self.out.append(b"data: " + _UNPARSEABLE + end)

    def patch(self, slot: int, payload: Any) -> None:
        self.out[slot] = b"data: " + _dumps(payload) + self.payloads[slot]


def _scrub_sse(body: bytes, scrubber: PayloadScrubber) -> bytes:
    """Frames end at a blank line; every frame becomes one frame, in order. A last frame
    without its blank line (a cut stream) stays without one."""
    writer = _SSEWriter(scrubber)
    frame: list[tuple[bytes, bytes]] = []
    for raw in body.splitlines(keepends=True):
        content, end = _split_line(raw)
        if content:
            frame.append((content, end))
            continue
        if frame:
            writer.frame(frame)
            frame = []
        writer.out.append(end)  # the blank line itself
    if frame:
        writer.frame(frame)
    for slot, payload in scrubber.end():
        writer.patch(slot, payload)
    return b"".join(writer.out)
