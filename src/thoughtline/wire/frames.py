"""Sans-IO framing: raw bytes in, complete frames out. No sockets, no JSON.

Two framings cover every provider:

- :class:`SSEDecoder` — ``text/event-stream`` (Anthropic, OpenAI, OpenRouter, Gemini):
  frames separated by a blank line, ``event:``/``data:``/``id:`` fields, ``:`` comments.
- :class:`NDJSONDecoder` — one JSON document per line (Ollama native).

Both take arbitrary byte chunks (a chunk may end inside a line, inside a CRLF pair, or
inside a multi-byte UTF-8 character) and only decode text once a whole frame or line
has arrived, so a split can never corrupt a character. Work per byte is constant: the
buffer is scanned from where the last scan stopped, never from the start.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SSEFrame:
    """One server-sent event. ``event`` is ``""`` when the frame had no ``event:`` field."""

    event: str
    data: str
    id: str | None = None


class FramingError(ValueError):
    """The bytes cannot be framed (e.g. invalid UTF-8 inside a frame)."""


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder (WHATWG rules for fields and comments).

    ``feed`` returns the frames completed by the chunk; ``flush`` returns a final frame
    that the stream ended without terminating. Comment lines (``: OPENROUTER PROCESSING``)
    are skipped; frames carrying only comments produce nothing.
    """

    __slots__ = ("_buffer", "_scan_from")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._scan_from = 0

    def feed(self, chunk: bytes) -> list[SSEFrame]:
        if not chunk:
            return []
        buffer = self._buffer
        buffer += chunk
        frames: list[SSEFrame] = []
        start = 0
        scan = max(self._scan_from - 3, 0)
        while True:
            end, sep_len = _find_blank_line(buffer, scan)
            if end < 0:
                break
            frame = _parse_frame(bytes(buffer[start:end]))
            if frame is not None:
                frames.append(frame)
            start = end + sep_len
            scan = start
        if start:
            del buffer[:start]
        self._scan_from = len(buffer)
        return frames

    def flush(self) -> list[SSEFrame]:
        """Frames left in the buffer when the stream ends (no trailing blank line)."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        self._scan_from = 0
        if not rest.strip():
            return []
        frame = _parse_frame(rest)
        return [frame] if frame is not None else []

    @property
    def pending_bytes(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buffer)


def _find_blank_line(buffer: bytearray, scan: int) -> tuple[int, int]:
    """Position of the first frame separator at or after ``scan`` and its length.

    Servers use ``\\n\\n``, ``\\r\\n\\r\\n`` and, rarely, ``\\r\\r``. Most frames use
    ``\\n\\n``; the other forms are checked only when a ``\\r`` is present.
    """
    lf = buffer.find(b"\n\n", scan)
    if b"\r" not in buffer:
        return (lf, 2) if lf >= 0 else (-1, 0)
    candidates = [(lf, 2)] if lf >= 0 else []
    crlf = buffer.find(b"\r\n\r\n", scan)
    if crlf >= 0:
        candidates.append((crlf, 4))
    cr = buffer.find(b"\r\r", scan)
    if cr >= 0:
        candidates.append((cr, 2))
    mixed = buffer.find(b"\n\r\n", scan)
    if mixed >= 0:
        candidates.append((mixed, 3))
    if not candidates:
        return -1, 0
    return min(candidates)


def _parse_frame(raw: bytes) -> SSEFrame | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FramingError(f"server-sent event is not valid UTF-8: {exc}") from exc
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
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
    return SSEFrame(event=event, data="\n".join(data_lines), id=event_id)


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
