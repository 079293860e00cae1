"""Sans-IO framing: raw bytes in, complete frames out. No sockets, no JSON.

Two framings cover every provider:

- :class:`SSEDecoder` — ``text/event-stream`` (Anthropic, OpenAI, OpenRouter, Gemini):
  frames separated by a blank line, ``event:``/``data:``/``id:`` fields, ``:`` comments.
- :class:`NDJSONDecoder` — one JSON document per line (Ollama native).

Both take arbitrary byte chunks (a chunk may end inside a line, inside a CRLF pair, or
inside a multi-byte UTF-8 character) and only decode text once a whole frame or line
has arrived, so a split can never corrupt a character.
"""

from __future__ import annotations

from typing import NamedTuple


class SSEFrame(NamedTuple):
    """One server-sent event. ``event`` is ``""`` when the frame had no ``event:`` field.

    A named tuple: frames are created once per wire event on the hot path, and tuples
    are the cheapest immutable record Python has."""

    event: str
    data: str
    id: str | None = None


class FramingError(ValueError):
    """The bytes cannot be framed (e.g. invalid UTF-8 inside a frame)."""


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder (WHATWG rules for fields and comments).

    ``feed`` returns the frames completed by the chunk; ``flush`` returns what is left
    when the stream ends. Comment lines (``: OPENROUTER PROCESSING``) are skipped; frames
    carrying only comments produce nothing.

    Bytes without a line break are parked in a list and joined only when a line ends,
    so a long frame that trickles in a few bytes at a time costs linear time. CRLF and
    CR line ends are normalized to LF, except a trailing CR, which is kept back in case
    its LF is in the next chunk.
    """

    __slots__ = ("_pending", "_pending_size")

    def __init__(self) -> None:
        self._pending: list[bytes] = []
        self._pending_size = 0

    def feed(self, chunk: bytes) -> list[SSEFrame]:
        if not chunk:
            return []
        if not self._pending and chunk[-2:] == b"\n\n" and b"\r" not in chunk:
            # The common case: whole frames, LF line ends, nothing parked.
            frames: list[SSEFrame] = []
            for raw in chunk.split(b"\n\n"):
                if raw:
                    frame = _parse_frame(raw)
                    if frame is not None:
                        frames.append(frame)
            return frames
        if b"\n" not in chunk and b"\r" not in chunk:
            self._pending.append(chunk)
            self._pending_size += len(chunk)
            return []
        if self._pending:
            self._pending.append(chunk)
            data = b"".join(self._pending)
            self._pending.clear()
        else:
            data = chunk
        held_cr = b""
        if b"\r" in data:
            if data[-1:] == b"\r":
                data, held_cr = data[:-1], b"\r"
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        pieces = data.split(b"\n\n")
        rest = pieces.pop()
        if rest or held_cr:
            self._pending.append(rest + held_cr)
        self._pending_size = len(rest) + len(held_cr)
        frames = []
        for raw in pieces:
            if raw:
                frame = _parse_frame(raw)
                if frame is not None:
                    frames.append(frame)
        return frames

    def flush(self) -> list[SSEFrame]:
        """The frame left when the stream ends without a final blank line, if any."""
        rest = b"".join(self._pending).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        self._pending.clear()
        self._pending_size = 0
        if not rest.strip():
            return []
        frame = _parse_frame(rest.strip(b"\n"))
        return [frame] if frame is not None else []

    @property
    def pending_bytes(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return self._pending_size


def _parse_frame(raw: bytes) -> SSEFrame | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FramingError(f"server-sent event is not valid UTF-8: {exc}") from exc
    # Fast paths for the two shapes providers send: "event: X\ndata: Y" and "data: Y".
    if text.startswith("event: "):
        newline = text.find("\n")
        if (
            newline > 0
            and text.startswith("data: ", newline + 1)
            and "\n" not in text[newline + 1 :]
        ):
            return SSEFrame(text[7:newline], text[newline + 7 :])
    elif text.startswith("data: ") and "\n" not in text:
        return SSEFrame("", text[6:])
    event = ""
    data_lines: list[str] = []
    event_id: str | None = None
    has_field = False
    for line in text.split("\n"):
        if not line or line[0] == ":":
            continue
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            data_lines.append(value)
            has_field = True
        elif name == "event":
            event = value
            has_field = True
        elif name == "id" and "\0" not in value:
            event_id = value
            has_field = True
        # "retry" and unknown fields are ignored, as the SSE standard says.
    if not has_field:
        return None
    return SSEFrame(event, "\n".join(data_lines), event_id)


class NDJSONDecoder:
    """Incremental newline-delimited JSON framing: returns complete non-empty lines."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[str]:
        if not chunk:
            return []
        buffer = self._buffer
        previous = len(buffer)
        buffer += chunk
        if buffer.find(b"\n", previous) < 0:
            return []
        cut = buffer.rfind(b"\n") + 1
        complete = bytes(buffer[:cut])
        del buffer[:cut]
        return [line for line in _decode_lines(complete) if line]

    def flush(self) -> list[str]:
        rest = bytes(self._buffer)
        self._buffer.clear()
        return [line for line in _decode_lines(rest) if line]

    @property
    def pending_bytes(self) -> int:
        return len(self._buffer)


def _decode_lines(raw: bytes) -> list[str]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FramingError(f"NDJSON line is not valid UTF-8: {exc}") from exc
    return [line.strip() for line in text.split("\n")]
