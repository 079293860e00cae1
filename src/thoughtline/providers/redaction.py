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

Credentials written into a URL are masked wherever a URL is shown or stored, by one
function, :func:`shown_url` (also for URLs quoted in other text, such as an exception's
message): ``scheme://user:***@host`` when the userinfo holds a password,
``scheme://***@host`` when it is a lone name (often the token itself, as in
``https://TOKEN@host``), and ``name=***`` for every credential query parameter
(:data:`SECRET_QUERY_PARAMETERS`); the rest of the URL as written. Connections still use
the URL whole.

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
from typing import TYPE_CHECKING, Any, AnyStr, Final, Generic
from urllib.parse import unquote

if TYPE_CHECKING:
    from thoughtline.providers._body_redaction import BodyRedactor

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
SECRET_QUERY_PARAMETERS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "token",
        "access_token",
        "refresh_token",
        "password",
        "secret",
        "client_secret",
        "sig",
        "signature",
        "x-amz-signature",
        "x-amz-security-token",
    }
)
"""Query parameters whose value is a credential (compared without regard to case)."""
URL_MASK = "***"
"""What stands for a credential in a shown URL."""

# A URL in any text: its scheme, its authority (up to the path, query or fragment), and
# its query (up to the fragment or the end of the URL). A scheme is at most 32 characters,
# so a long run of letters and dots is looked at a bounded number of times.
_URL = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]{0,31}://)(?P<authority>[^\s/?#]*)"
    r"(?P<path>[^\s?#]*)(?:\?(?P<query>[^\s#]*))?"
)

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

    def holds_value(self, value: str) -> bool:
        """Whether ``value`` contains a loaded credential value."""
        return not _holds_none(value, self._secrets)

    def split_pieces(self, body: bytes) -> bytes:
        """``body`` with the pieces of loaded values that a stream split across JSON strings
        removed (see :func:`~thoughtline.providers._body_redaction.remove_split_pieces`):
        for the captured body of a call whose model output echoed a loaded value."""
        from thoughtline.providers._body_redaction import remove_split_pieces

        return remove_split_pieces(body, self._body.values)

    def stream(self) -> StreamRedactor:
        """A fresh :class:`StreamRedactor` for one stream of text (one part)."""
        return StreamRedactor(self)

    def body(self) -> BodyRedactor:
        """A fresh :class:`~thoughtline.providers._body_redaction.BodyRedactor` for one
        response body that arrives in chunks."""
        from thoughtline.providers._body_redaction import BodyRedactor  # it builds on this

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
        """``url`` as it may be recorded: :func:`shown_url`, then :meth:`text`."""
        return self.text(shown_url(url))


def shown_url(text: str) -> str:
    """``text`` (a URL, or any text quoting URLs) with the credentials of every URL in it
    masked: the userinfo's password (``user:***@``), or a userinfo without a password
    whole (``***@``), and the value of every credential query parameter (``key=***``).
    Everything else is left as written; text without ``://`` is returned as it is."""
    if "://" not in text:
        return text
    return _URL.sub(_masked_url, text)


def _masked_url(match: re.Match[str]) -> str:
    authority = match["authority"]
    userinfo, at, host = authority.rpartition("@")
    if at:
        user, colon, _password = userinfo.partition(":")
        authority = f"{user}:{URL_MASK}@{host}" if colon and user else f"{URL_MASK}@{host}"
    shown = match["scheme"] + authority + match["path"]
    query = match["query"]
    if query is None:
        return shown
    return f"{shown}?{_masked_query(query)}"


def _masked_query(query: str) -> str:
    items = []
    for item in query.split("&"):
        name, equals, _value = item.partition("=")
        if equals and unquote(name).lower() in SECRET_QUERY_PARAMETERS:
            item = f"{name}={URL_MASK}"
        items.append(item)
    return "&".join(items)


_REDACTED_BYTES: Final = REDACTED.encode("ascii")


def _holds_none(text: AnyStr, values: tuple[AnyStr, ...]) -> bool:
    # A plain loop: called for every displayed delta, where any() with a generator costs
    # several times more.
    for value in values:  # noqa: SIM110 (the generator all() suggests is the cost)
        if value in text:
            return False
    return True


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
        elif text[-1] not in values.prefix_characters and _holds_none(text, values.values):
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
