"""Credential redaction, applied once to every exchange before it leaves the transport.

What is replaced with ``[REDACTED]``:

- credential headers (``authorization``, ``x-api-key``, ``x-goog-api-key``, ``api-key``,
  ``cookie``, ``set-cookie``, ``proxy-authorization``);
- credential query parameters in URLs (``key``, ``api_key``, ``apikey``, ``token``,
  ``access_token``);
- known key shapes anywhere in text (Anthropic, OpenAI, OpenRouter, Google, bearer tokens);
- the exact value of every credential the process loaded, wherever it appears.

Model output (answer text, reasoning text) is redacted for the exact loaded values only,
as it streams, by :class:`StreamRedactor`: a model that writes an example key shape is
not leaking a credential, but one that echoes a loaded key is.

A captured response body is redacted as it arrives, chunk by chunk, by
:class:`BodyRedactor` (loaded values and key shapes), holding back only what a split
credential could still complete, so capturing costs one look at each chunk and never a
scan of the whole body. Every scan first asks whether the text holds anything a
credential contains (``sk-``, ``AIza``, ``earer ``, a loaded value); ordinary text never
reaches the regular expressions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, AnyStr, Final, Generic
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

REDACTED = "[REDACTED]"

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "x-goog-api-key",
        "api-key",
        "cookie",
        "set-cookie",
    }
)
SECRET_QUERY_PARAMETERS = frozenset({"key", "api_key", "apikey", "token", "access_token"})

# Known credential shapes. Deliberately specific: a loose pattern would eat reasoning
# text or ids that people need to read.
_KEY_SHAPES = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{16,}"  # Anthropic
    r"|sk-or-v1-[A-Za-z0-9]{16,}"  # OpenRouter
    r"|sk-proj-[A-Za-z0-9_\-]{16,}"  # OpenAI project keys
    r"|sk-[A-Za-z0-9]{32,}"  # OpenAI / DeepSeek classic keys
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google API keys
    r"|(?<=[Bb]earer )[A-Za-z0-9._~+/=\-]{16,}"  # bearer tokens in text
)

_KEY_SHAPES_BYTES = re.compile(_KEY_SHAPES.pattern.encode("ascii"))
# Every key shape contains one of these (the bearer form through its lookbehind), so text
# without any of them holds none: three substring tests cost far less than the scan.
_KEY_SHAPE_MARKERS = ("sk-", "AIza", "earer ")
_KEY_SHAPE_MARKERS_BYTES = tuple(marker.encode("ascii") for marker in _KEY_SHAPE_MARKERS)
# The bytes key shapes are made of. A match never contains any other byte, and one that
# starts right after a byte outside this set and the space has no "Bearer " before it: a
# body cut after such a byte splits no match.
_KEY_BYTES: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~+/=-"
_KEY_OR_SPACE_BYTES: Final = _KEY_BYTES + b" "

BODY_BLOCK_BYTES: Final = 16 * 1024
""":class:`BodyRedactor` looks at chunks once this many bytes have gathered."""
BODY_CARRY_LIMIT: Final = 64 * 1024
"""Most bytes :class:`BodyRedactor` holds back past a block, in a run that a key shape
could still be part of."""
_BODY_HOLD: Final = 128  # kept when a run of key bytes passes the limit (see BodyRedactor)

_MIN_SECRET_LENGTH = 6  # shorter "secrets" would redact ordinary words
_NEVER = re.compile(r"(?!)")
_NEVER_BYTES = re.compile(rb"(?!)")


class _Values(Generic[AnyStr]):
    """The loaded values, compiled for one string type (``str`` text, ``bytes`` bodies)."""

    __slots__ = ("first", "longest", "open_prefix", "pattern", "prefix_characters", "values")
    values: tuple[AnyStr, ...]
    pattern: re.Pattern[AnyStr] | None
    first: re.Pattern[AnyStr]
    open_prefix: re.Pattern[AnyStr]
    prefix_characters: frozenset[object]
    longest: int

    def __init__(
        self,
        values: tuple[AnyStr, ...],
        pattern: re.Pattern[AnyStr] | None,
        first: re.Pattern[AnyStr],
        open_prefix: re.Pattern[AnyStr],
        prefix_characters: frozenset[object],
    ) -> None:
        self.values = values
        self.pattern = pattern
        self.first = first  # where a value could start: a fast reject for a whole piece
        self.open_prefix = open_prefix  # where the text's end is a proper prefix of one
        # A text can end inside a value only on a character of some proper prefix.
        self.prefix_characters = prefix_characters
        self.longest = max((len(value) for value in values), default=0)


def _text_values(values: tuple[str, ...]) -> _Values[str]:
    if not values:
        return _Values(values, None, _NEVER, _NEVER, frozenset())
    sources = _sources(values)
    return _Values(
        values,
        re.compile(sources[0]),
        re.compile(sources[1]),
        re.compile(sources[2]),
        frozenset("".join(value[:-1] for value in values)),
    )


def _body_values(values: tuple[str, ...]) -> _Values[bytes]:
    """The same values as UTF-8 bytes. A UTF-8 sequence never starts inside another, so
    a value occurs in the bytes exactly where it occurs in the decoded text."""
    encoded = tuple(
        sorted(
            (value.encode("utf-8", "surrogateescape") for value in values), key=len, reverse=True
        )
    )
    if not encoded:
        return _Values(encoded, None, _NEVER_BYTES, _NEVER_BYTES, frozenset())
    # Built as text over latin-1 (one character per byte; re.escape leaves non-ASCII alone).
    sources = _sources(tuple(value.decode("latin-1") for value in encoded))
    return _Values(
        encoded,
        re.compile(sources[0].encode("latin-1")),
        re.compile(sources[1].encode("latin-1")),
        re.compile(sources[2].encode("latin-1")),
        frozenset(b"".join(value[:-1] for value in encoded)),
    )


def _sources(values: tuple[str, ...]) -> tuple[str, str, str]:
    """Regular expression sources: any value (longest first), a value's first character,
    and a proper prefix of a value at the text's end."""
    return (
        "|".join(re.escape(value) for value in values),
        "[" + "".join(re.escape(c) for c in sorted({value[0] for value in values})) + "]",
        _proper_prefix_source(values),
    )


class Redactor:
    """Replaces credentials in headers, URLs and text.

    ``secrets`` are exact values to remove wherever they appear (the keys the process
    loaded). Values shorter than six characters are ignored: they cannot be told apart
    from ordinary text.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted(
            {value for value in secrets if value and len(value) >= _MIN_SECRET_LENGTH},
            key=len,
            reverse=True,  # longest first, so a key containing another is removed whole
        )
        self._secrets = tuple(values)
        self._text = _text_values(self._secrets)
        self._body = _body_values(self._secrets)

    def with_secrets(self, secrets: Iterable[str]) -> Redactor:
        return Redactor((*self._secrets, *secrets))

    @property
    def has_secrets(self) -> bool:
        """Whether any credential value was loaded (else :meth:`values` changes nothing)."""
        return bool(self._secrets)

    def text(self, value: str) -> str:
        value = self.values(value)
        if any(marker in value for marker in _KEY_SHAPE_MARKERS):
            value = _KEY_SHAPES.sub(REDACTED, value)
        return value

    def values(self, value: str) -> str:
        """Only the exact loaded credential values replaced (no key shapes): what
        :class:`StreamRedactor` produces for the same text, however it is split."""
        pattern = self._text.pattern
        if pattern is None or not any(secret in value for secret in self._secrets):
            return value
        return pattern.sub(REDACTED, value)

    def stream(self) -> StreamRedactor:
        """A fresh :class:`StreamRedactor` for one stream of text (one part)."""
        return StreamRedactor(self)

    def body(self) -> BodyRedactor:
        """A fresh :class:`BodyRedactor` for one response body that arrives in chunks."""
        return BodyRedactor(self)

    def bytes(self, value: bytes) -> bytes:
        """:meth:`text` on bytes (any encoding ASCII-compatible, UTF-8 above all), without
        decoding them: invalid UTF-8 passes through untouched."""
        pattern = self._body.pattern
        if pattern is not None and any(secret in value for secret in self._body.values):
            value = pattern.sub(_REDACTED_BYTES, value)
        if any(marker in value for marker in _KEY_SHAPE_MARKERS_BYTES):
            value = _KEY_SHAPES_BYTES.sub(_REDACTED_BYTES, value)
        return value

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        return {
            name: REDACTED if name.lower() in SECRET_HEADERS else self.text(value)
            for name, value in headers.items()
        }

    def url(self, url: str) -> str:
        parts = urlsplit(url)
        if parts.query:
            query = [
                (name, REDACTED if name.lower() in SECRET_QUERY_PARAMETERS else value)
                for name, value in parse_qsl(parts.query, keep_blank_values=True)
            ]
            parts = parts._replace(query=urlencode(query, safe="[]:"))
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", f":{REDACTED}@")
            parts = parts._replace(netloc=netloc)
        return self.text(urlunsplit(parts))


_REDACTED_BYTES: Final = REDACTED.encode("ascii")


class _HeldTail(Generic[AnyStr]):
    """Removes loaded values from text or bytes arriving in pieces, holding back only the
    shortest tail that could still become one (see :class:`StreamRedactor`)."""

    __slots__ = ("_empty", "_held", "_redacted", "_values")
    _values: _Values[AnyStr]
    _redacted: AnyStr
    _empty: AnyStr
    _held: AnyStr

    def __init__(self, values: _Values[AnyStr], redacted: AnyStr, empty: AnyStr) -> None:
        self._values = values
        self._redacted = redacted
        self._empty = empty
        self._held = empty

    def feed(self, text: AnyStr) -> AnyStr:
        values = self._values
        pattern = values.pattern
        if pattern is None:
            return text
        held = self._held
        if held:
            buffer = held + text
            start = 0  # the held tail starts with an open prefix
        elif not text:
            return text
        elif text[-1] not in values.prefix_characters and not any(
            value in text for value in values.values
        ):
            return text  # no value in it, and it cannot end inside one
        else:
            first = values.first.search(text)
            if first is None:
                return text
            buffer = text
            start = first.start()  # nothing before it can start a value
        end = len(buffer)
        # Only the last (longest - 1) positions can start a proper prefix of a value.
        window = max(start, end - values.longest + 1)
        if buffer[-1] in values.prefix_characters:
            open_at = values.open_prefix.search(buffer, window)
            cut = end if open_at is None else open_at.start()
        else:
            cut = end
        match = pattern.search(buffer, start)
        if match is None or match.start() >= cut:
            self._held = buffer[cut:] if cut < end else self._empty
            return buffer if cut == end else buffer[:cut]
        # A value starts before the cut: it is complete (its start is not an open prefix),
        # so it is replaced; a match reaching past the cut moves the cut after it.
        pieces: list[AnyStr] = []
        position = 0
        while match is not None and match.start() < cut:
            pieces.append(buffer[position : match.start()])
            pieces.append(self._redacted)
            position = match.end()
            if position > cut:
                open_at = values.open_prefix.search(buffer, max(position, window))
                cut = end if open_at is None else open_at.start()
            match = pattern.search(buffer, position)
        pieces.append(buffer[position:cut])
        self._held = buffer[cut:]
        return self._empty.join(pieces)

    def flush(self) -> AnyStr:
        """Release the held tail (redacted) at the end of a part or stream."""
        held, self._held = self._held, self._empty
        pattern = self._values.pattern
        if not held or pattern is None:
            return held
        return pattern.sub(self._redacted, held)


class StreamRedactor(_HeldTail[str]):
    """Sans-IO redaction of loaded credential values in text that arrives in pieces.

    :meth:`feed` returns what can be released now; :meth:`flush` returns the rest at the
    end of the part or stream. The concatenation of everything returned equals
    ``Redactor.values`` of the concatenated input, however it was split: a value cut
    across two pieces is still removed whole.

    Only the shortest tail that could still become a loaded value is held back (a proper
    prefix of one, so never longer than the longest value minus one character), and it is
    released as soon as it cannot. Each call looks at the held tail and the new piece
    only, never at text already released, so the cost per piece does not grow with the
    stream. A piece that cannot hold the first character of any value, with nothing
    held, is returned as is.
    """

    __slots__ = ()

    def __init__(self, redactor: Redactor) -> None:
        super().__init__(redactor._text, REDACTED, "")


class BodyRedactor:
    """Sans-IO redaction of a response body that arrives in chunks: loaded values and key
    shapes, as :meth:`Redactor.bytes` removes them from the whole body.

    :meth:`feed` returns the redacted bytes that can be released now (often none),
    :meth:`flush` the rest at the end. Chunks are gathered into blocks of
    :data:`BODY_BLOCK_BYTES` first: a stream delivers one small frame per chunk, and
    testing each on its own would cost more than the substring tests themselves. Loaded
    values then go through the same held-tail logic as :class:`StreamRedactor`. Key
    shapes are looked for up to the last byte that no key shape can contain or follow
    (a quote, a comma, a line break, any non-ASCII byte...; not a space, which may end
    "Bearer "); the bytes after it are held until such a byte arrives. A block of
    ordinary text passes after a few substring tests, never reaching a regular expression.

    A credential cut anywhere across chunks is removed whole, and the output equals
    :meth:`Redactor.bytes` of the whole body, with one bounded exception. At most
    :data:`BODY_CARRY_LIMIT` bytes are held past a block: a longer run of key bytes and
    spaces (a long base64 signature, say) is released up to its last 128 bytes, a key
    shape that starts before that cut is replaced whole, and one still running at the
    cut makes the key bytes that follow it redacted too (a key shape's greedy tail). That
    can redact more than the whole-body scan would, never less.
    """

    __slots__ = (
        "_carry",
        "_carry_size",
        "_open_ends",
        "_pending",
        "_pending_size",
        "_secrets",
        "_swallow",
        "_values",
    )

    def __init__(self, redactor: Redactor) -> None:
        self._values = _HeldTail(redactor._body, _REDACTED_BYTES, b"")
        self._secrets = redactor._body.values
        # Bytes a block may not end on to pass whole: a key shape or a value could go on.
        self._open_ends = frozenset(_KEY_OR_SPACE_BYTES) | redactor._body.prefix_characters
        self._pending: list[bytes] = []  # chunks not yet looked at
        self._pending_size = 0
        self._carry: list[bytes] = []  # bytes a key shape may still run through
        self._carry_size = 0
        self._swallow = False  # a key shape is running across a forced cut

    def feed(self, chunk: bytes) -> bytes:
        pending = self._pending
        pending.append(chunk)
        size = self._pending_size + len(chunk)
        if size < BODY_BLOCK_BYTES:
            self._pending_size = size
            return b""
        block = b"".join(pending)
        pending.clear()
        self._pending_size = 0
        return self._redact(block)

    def _redact(self, chunk: bytes) -> bytes:
        if (
            chunk
            and chunk[-1] not in self._open_ends
            and not self._carry
            and not self._swallow
            and not self._values._held
            and b"sk-" not in chunk
            and b"AIza" not in chunk
            and b"earer " not in chunk
            and not any(secret in chunk for secret in self._secrets)
        ):
            return chunk  # nothing held, nothing in it, and it cannot end inside anything
        data = self._values.feed(chunk)
        if self._swallow:
            data = self._swallowed(data)
        if not data:
            return data
        if self._carry:
            return self._with_carry(data)
        cut = len(data.rstrip(_KEY_OR_SPACE_BYTES))
        if cut == len(data):
            return _shapes(data)
        self._carry.append(data[cut:])
        self._carry_size = len(data) - cut
        if self._carry_size > BODY_CARRY_LIMIT:
            return _shapes(data[:cut]) + self._forced_cut()
        return _shapes(data[:cut]) if cut else b""

    def flush(self) -> bytes:
        """The held bytes, redacted, at the end of the body (or where capture stops)."""
        block = b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        released = self._redact(block) if block else b""
        data = self._values.flush()
        if self._swallow:
            data = self._swallowed(data)
        carry = b"".join(self._carry) + data
        self._carry.clear()
        self._carry_size = 0
        self._swallow = False
        return released + _shapes(carry)

    def _with_carry(self, data: bytes) -> bytes:
        cut = len(data.rstrip(_KEY_OR_SPACE_BYTES))
        if cut == 0:  # still inside the run: keep it, joining only at the limit
            self._carry.append(data)
            self._carry_size += len(data)
            return self._forced_cut() if self._carry_size > BODY_CARRY_LIMIT else b""
        released = _shapes(b"".join(self._carry) + data[:cut])
        rest = data[cut:]
        self._carry = [rest] if rest else []
        self._carry_size = len(rest)
        if self._carry_size > BODY_CARRY_LIMIT:
            return released + self._forced_cut()
        return released

    def _forced_cut(self) -> bytes:
        """Release a run of key bytes and spaces longer than the limit, but its last
        ``_BODY_HOLD`` bytes. Every key shape is decided within 45 bytes of its start and
        "Bearer " is 7, so whatever starts before the cut is settled by the held bytes,
        except a greedy match still running at the end of what has arrived."""
        run = b"".join(self._carry)
        cut = len(run) - _BODY_HOLD
        if not (b"sk-" in run or b"AIza" in run or b"earer " in run):  # no key shape in it
            self._carry = [run[cut:]]
            self._carry_size = _BODY_HOLD
            return run[:cut]
        pieces: list[bytes] = []
        position = 0
        for match in _KEY_SHAPES_BYTES.finditer(run):
            if match.start() >= cut:
                if match.start() - 7 < cut:  # keep its "Bearer " with it
                    cut = max(position, match.start() - 7)
                break
            pieces.append(run[position : match.start()])
            pieces.append(_REDACTED_BYTES)
            position = match.end()
            if position >= cut:
                cut = position
                break
        if position == len(run):  # a key shape runs to the end: redact what follows it
            self._swallow = True
        pieces.append(run[position:cut])
        rest = run[cut:]
        self._carry = [rest] if rest else []
        self._carry_size = len(rest)
        return b"".join(pieces)

    def _swallowed(self, data: bytes) -> bytes:
        rest = data.lstrip(_KEY_BYTES)
        if rest:
            self._swallow = False
        return rest


def _shapes(data: bytes) -> bytes:
    if b"sk-" in data or b"AIza" in data or b"earer " in data:  # _KEY_SHAPE_MARKERS
        return _KEY_SHAPES_BYTES.sub(_REDACTED_BYTES, data)
    return data


def _proper_prefix_source(values: Iterable[str]) -> str:
    """Matches where the text's end is a proper prefix of one of ``values`` (a value that
    might still be completed by the next piece); ``search`` finds the earliest such start.

    Built as a trie, so a position is rejected at its first character that leads nowhere.
    """
    root: dict[str, dict[str, Any]] = {}
    for value in values:
        node = root
        for character in value:
            node = node.setdefault(character, {})

    def below(node: dict[str, Any]) -> str:
        # ``node`` has children, so stopping here is a proper prefix; a child with no
        # children of its own ends a whole value, which is not an open prefix.
        options = [re.escape(char) + below(child) for char, child in node.items() if child]
        return "(?:" + "|".join(options) + ")?" if options else ""

    first = [re.escape(char) + below(child) for char, child in root.items() if child]
    if not first:  # every value is one character long: none can be left open
        return r"(?!)"
    return "(?:" + "|".join(first) + r")\Z"
