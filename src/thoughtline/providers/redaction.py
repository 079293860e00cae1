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
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
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

_MIN_SECRET_LENGTH = 6  # shorter "secrets" would redact ordinary words
_NEVER = re.compile(r"(?!)")


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
        self._secret_pattern = (
            re.compile("|".join(re.escape(value) for value in values)) if values else None
        )
        # For streams: where a loaded value could start (a fast reject for a whole delta),
        # and the earliest position from which the text's end is a proper prefix of one.
        self._first_characters = (
            re.compile("[" + "".join(re.escape(c) for c in {v[0] for v in values}) + "]")
            if values
            else _NEVER
        )
        self._open_prefix = _proper_prefix_pattern(values) if values else _NEVER
        # A text can end inside a value only on a character of some proper prefix.
        self._prefix_characters = frozenset("".join(value[:-1] for value in values))
        self._longest = len(values[0]) if values else 0

    def with_secrets(self, secrets: Iterable[str]) -> Redactor:
        return Redactor((*self._secrets, *secrets))

    @property
    def has_secrets(self) -> bool:
        """Whether any credential value was loaded (else :meth:`values` changes nothing)."""
        return self._secret_pattern is not None

    def text(self, value: str) -> str:
        if self._secret_pattern is not None:
            value = self._secret_pattern.sub(REDACTED, value)
        return _KEY_SHAPES.sub(REDACTED, value)

    def values(self, value: str) -> str:
        """Only the exact loaded credential values replaced (no key shapes): what
        :class:`StreamRedactor` produces for the same text, however it is split."""
        if self._secret_pattern is None:
            return value
        return self._secret_pattern.sub(REDACTED, value)

    def stream(self) -> StreamRedactor:
        """A fresh :class:`StreamRedactor` for one stream of text (one part)."""
        return StreamRedactor(self)

    def bytes(self, value: bytes) -> bytes:
        if not value:
            return value
        text = value.decode("utf-8", errors="surrogateescape")
        redacted = self.text(text)
        if redacted == text:
            return value
        return redacted.encode("utf-8", errors="surrogateescape")

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


class StreamRedactor:
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

    __slots__ = ("_first", "_held", "_longest", "_open_prefix", "_pattern", "_prefix_characters")

    def __init__(self, redactor: Redactor) -> None:
        self._pattern = redactor._secret_pattern
        self._first = redactor._first_characters
        self._open_prefix = redactor._open_prefix
        self._longest = redactor._longest
        self._prefix_characters = redactor._prefix_characters
        self._held = ""

    def feed(self, text: str) -> str:
        pattern = self._pattern
        if pattern is None:
            return text
        held = self._held
        if held:
            buffer = held + text
            start = 0  # the held tail starts with an open prefix
        else:
            first = self._first.search(text)
            if first is None:
                return text
            buffer = text
            start = first.start()  # nothing before it can start a value
        end = len(buffer)
        # Only the last (longest - 1) positions can start a proper prefix of a value.
        window = max(start, end - self._longest + 1)
        if buffer[-1] in self._prefix_characters:
            open_at = self._open_prefix.search(buffer, window)
            cut = end if open_at is None else open_at.start()
        else:
            cut = end
        match = pattern.search(buffer, start)
        if match is None or match.start() >= cut:
            self._held = buffer[cut:] if cut < end else ""
            return buffer if cut == end else buffer[:cut]
        # A value starts before the cut: it is complete (its start is not an open prefix),
        # so it is replaced; a match reaching past the cut moves the cut after it.
        pieces: list[str] = []
        position = 0
        while match is not None and match.start() < cut:
            pieces.append(buffer[position : match.start()])
            pieces.append(REDACTED)
            position = match.end()
            if position > cut:
                open_at = self._open_prefix.search(buffer, max(position, window))
                cut = end if open_at is None else open_at.start()
            match = pattern.search(buffer, position)
        pieces.append(buffer[position:cut])
        self._held = buffer[cut:]
        return "".join(pieces)

    def flush(self) -> str:
        """Release the held tail (redacted) at the end of a part or stream."""
        held, self._held = self._held, ""
        if not held or self._pattern is None:
            return held
        return self._pattern.sub(REDACTED, held)


def _proper_prefix_pattern(values: Iterable[str]) -> re.Pattern[str]:
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
    return re.compile("(?:" + "|".join(first) + r")\Z")
