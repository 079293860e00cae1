"""Sans-IO framing: raw bytes in, complete frames out. No sockets, no JSON.

Two framings cover every provider:

- :class:`SSEDecoder` — ``text/event-stream`` (Anthropic, OpenAI, OpenRouter, Gemini):
  frames separated by a blank line, ``event:``/``data:``/``id:`` fields, ``:`` comments.
- :class:`NDJSONDecoder` — one JSON document per line (Ollama native).

Both take arbitrary byte chunks (a chunk may end inside a line, inside a CRLF pair, or
inside a multi-byte UTF-8 character) and only decode text once a whole frame or line
has arrived, so a split can never corrupt a character.

Both are bounded: a frame (SSE) or line (NDJSON) longer than ``max_frame_bytes``
(16 MiB by default, far above any real provider event) raises :class:`FramingError`
as soon as the limit is crossed, and the decoder then drops what it held and refuses
further input. A hostile or broken server that never ends a line therefore costs at
most one frame's worth of memory, not the whole stream.
"""

from __future__ import annotations

from typing import Final, NamedTuple

DEFAULT_MAX_FRAME_BYTES: Final = 16 * 1024 * 1024
"""The default cap on one SSE frame or NDJSON line, in bytes."""


class SSEFrame(NamedTuple):
    """One server-sent event. ``event`` is ``""`` when the frame had no ``event:`` field.

    A named tuple: frames are created once per wire event on the hot path, and tuples
    are the cheapest immutable record Python has."""

    event: str
    data: str
    id: str | None = None


class FramingError(ValueError):
    """The bytes cannot be framed (e.g. invalid UTF-8 inside a frame, or a frame
    longer than the decoder's limit)."""


def _too_long(what: str, limit: int) -> FramingError:
    return FramingError(
        f"{what} exceeds the limit of {_size(limit)} without ending; the stream was "
        "stopped there (a real provider event is far smaller)"
    )


def _size(count: int) -> str:
    if count >= 1024 * 1024 and count % (1024 * 1024) == 0:
        return f"{count // (1024 * 1024)} MiB"
    return f"{count} bytes"


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder (WHATWG rules for fields and comments).

    ``feed`` returns the frames completed by the chunk; ``flush`` returns what is left
    when the stream ends. Comment lines (``: OPENROUTER PROCESSING``) are skipped; frames
    carrying only comments produce nothing.

    Bytes without a line break are parked in a list and joined only when a line ends,
    so a long frame that trickles in a few bytes at a time costs linear time. CRLF and
    CR line ends are normalized to LF, except a trailing CR, which is kept back in case
    its LF is in the next chunk.

    ``max_frame_bytes`` caps one frame (its lines up to the blank line that ends it):
    crossing it raises :class:`FramingError`, and every later ``feed`` raises again.
    The checks cost one comparison per chunk; frames are measured one by one only in a
    chunk that is itself longer than the cap.
    """

    __slots__ = ("_broken", "_limit", "_pending", "_pending_size")

    def __init__(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if max_frame_bytes < 1:
            raise ValueError(f"max_frame_bytes must be positive, got {max_frame_bytes}")
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._limit = max_frame_bytes
        self._broken: FramingError | None = None

    def feed(self, chunk: bytes) -> list[SSEFrame]:
        frames: list[SSEFrame] = []
        for raw in self.feed_raw(chunk):
            frame = parse_frame(raw)
            if frame is not None:
                frames.append(frame)
        return frames

    def feed_raw(self, chunk: bytes) -> list[bytes]:
        """The frames ``chunk`` completes, each as its bytes up to the blank line that ends
        it (LF line ends), not yet decoded: :func:`parse_frame` makes one an
        :class:`SSEFrame`, :func:`event_and_data` reads the common shape without decoding
        its data. Empty frames are left out."""
        if self._broken is not None:
            raise self._broken
        if not chunk:
            return []
        limit = self._limit
        if (
            not self._pending
            and chunk[-2:] == b"\n\n"
            and b"\r" not in chunk
            and len(chunk) <= limit
        ):
            # The common case: whole frames, LF line ends, nothing parked.
            return [raw for raw in chunk.split(b"\n\n") if raw]
        if b"\n" not in chunk and b"\r" not in chunk:
            self._pending_size += len(chunk)
            if self._pending_size > limit:
                self._fail()
            self._pending.append(chunk)
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
        self._pending_size = len(rest) + len(held_cr)
        if len(data) > limit and (
            self._pending_size > limit or any(len(raw) > limit for raw in pieces)
        ):
            self._fail()
        if rest or held_cr:
            self._pending.append(rest + held_cr)
        return [raw for raw in pieces if raw]

    def _fail(self) -> None:
        self._pending.clear()
        self._pending_size = 0
        self._broken = _too_long("a server-sent event", self._limit)
        raise self._broken

    def flush(self) -> list[SSEFrame]:
        """The frame left when the stream ends without a final blank line, if any."""
        if self._broken is not None:
            return []
        rest = b"".join(self._pending).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        self._pending.clear()
        self._pending_size = 0
        if not rest.strip():
            return []
        frame = parse_frame(rest.strip(b"\n"))
        return [frame] if frame is not None else []

    @property
    def pending_bytes(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return self._pending_size


_EVENT_NAMES: dict[bytes, str] = {}
"""Event names decoded before, by their whole line (a stream names a handful, thousands
of times each)."""
_MAX_EVENT_NAMES: Final = 256
"""How many names :data:`_EVENT_NAMES` keeps: a server inventing names costs no memory."""


def event_and_data(raw: bytes) -> tuple[str, bytes] | None:
    """A raw frame (:meth:`SSEDecoder.feed_raw`) of the two shapes providers send,
    ``event: NAME\ndata: JSON`` and ``data: JSON``, as its event name and its data still
    in bytes, for a JSON parser that checks UTF-8 itself (no ``str`` made of it); any
    other shape (several ``data:`` lines, comments, an ``id:``), or a name that is not
    UTF-8, is ``None``: :func:`parse_frame` reads it, and says what is wrong with it."""
    head, separator, data = raw.partition(b"\ndata: ")
    if not separator:
        if raw.startswith(b"data: ") and b"\n" not in raw:
            return "", raw[6:]
        return None
    if b"\n" in data:
        return None
    event = _EVENT_NAMES.get(head)  # the whole line, "event: NAME": no slice made
    if event is not None:
        return event, data
    if not head.startswith(b"event: ") or b"\n" in head:
        return None
    try:
        event = head[7:].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(_EVENT_NAMES) < _MAX_EVENT_NAMES:
        _EVENT_NAMES[head] = event
    return event, data


def parse_frame(raw: bytes) -> SSEFrame | None:
    """A raw frame (:meth:`SSEDecoder.feed_raw`) read as the SSE standard says; ``None``
    for one of comments only. Raises :class:`FramingError` when it is not UTF-8."""
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
    """Incremental newline-delimited JSON framing: returns complete non-empty lines.

    ``max_line_bytes`` caps one line: crossing it raises :class:`FramingError`, and
    every later ``feed`` raises again.
    """

    __slots__ = ("_broken", "_buffer", "_limit")

    def __init__(self, *, max_line_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be positive, got {max_line_bytes}")
        self._buffer = bytearray()
        self._limit = max_line_bytes
        self._broken: FramingError | None = None

    def feed(self, chunk: bytes) -> list[str]:
        if self._broken is not None:
            raise self._broken
        if not chunk:
            return []
        buffer = self._buffer
        previous = len(buffer)
        buffer += chunk
        limit = self._limit
        if buffer.find(b"\n", previous) < 0:
            if len(buffer) > limit:
                self._fail()
            return []
        cut = buffer.rfind(b"\n") + 1
        complete = bytes(buffer[:cut])
        del buffer[:cut]
        if len(buffer) > limit or (
            cut > limit and any(len(line) > limit for line in complete.split(b"\n"))
        ):
            self._fail()
        return [line for line in _decode_lines(complete) if line]

    def _fail(self) -> None:
        self._buffer = bytearray()
        self._broken = _too_long("an NDJSON line", self._limit)
        raise self._broken

    def flush(self) -> list[str]:
        if self._broken is not None:
            return []
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
