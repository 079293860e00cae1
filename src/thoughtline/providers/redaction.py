"""Credential redaction, applied once to every exchange before it leaves the transport.

What is replaced with ``[REDACTED]``:

- credential headers (``authorization``, ``x-api-key``, ``x-goog-api-key``, ``api-key``,
  ``cookie``, ``set-cookie``, ``proxy-authorization``);
- credential query parameters in URLs (``key``, ``api_key``, ``apikey``, ``token``,
  ``access_token``);
- known key shapes anywhere in text (Anthropic, OpenAI, OpenRouter, Google, bearer tokens);
- the exact value of every credential the process loaded, wherever it appears.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
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

    def with_secrets(self, secrets: Iterable[str]) -> Redactor:
        return Redactor((*self._secrets, *secrets))

    def text(self, value: str) -> str:
        if self._secret_pattern is not None:
            value = self._secret_pattern.sub(REDACTED, value)
        return _KEY_SHAPES.sub(REDACTED, value)

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
