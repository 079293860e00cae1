"""What one provider call sent and received, already redacted, with timings.

The runtime writes this to the ``provider_raw`` trace layer. It is built only by the
transport, after redaction: an :class:`Exchange` never gives out a credential. The
request body is redacted when it is first read (a tool loop sends a growing body on
every step, and most calls never read it: redacting it each time made a long loop
quadratic); until then it is held as sent, in memory only and in no public field, and
the bytes as sent are dropped once it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    """One HTTP attempt of a call (retries make several)."""

    number: int
    status: int | None
    error_code: str | None
    waited_before_s: float
    duration_ms: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ExchangeTimings:
    """Milliseconds from the start of the call (the first attempt's request)."""

    started_at: str
    first_byte_ms: float | None = None
    first_reasoning_ms: float | None = None
    first_text_ms: float | None = None
    total_ms: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Exchange:
    """A redacted record of the final attempt plus every attempt's outcome.

    ``response_body`` is the raw response body, or for a stream the raw stream bytes as
    received (decoded from any content encoding); ``None`` when capture was off.
    ``response_body_truncated`` says the stream was longer than the transport keeps
    (``MAX_BODY_BYTES``) and ``response_body`` holds its start only.
    """

    endpoint: str
    wire_api: str
    method: str
    url: str
    request_headers: dict[str, str]
    status: int | None
    response_headers: dict[str, str]
    response_body: bytes | None
    streamed: bool
    timings: ExchangeTimings
    attempts: tuple[Attempt, ...] = ()
    capability: dict[str, Any] = field(default_factory=dict)
    response_body_truncated: bool = False
    _body: list[Any] = field(default_factory=list, repr=False, compare=False)
    """Until the request body is first read, the bytes as sent and the function that
    redacts them; from then on the redacted text alone (the bytes as sent are dropped)."""

    @property
    def request_body(self) -> str:
        """The request body as sent, every credential redacted (once, when first read)."""
        body = self._body
        if not body:
            return ""
        if len(body) == 2:
            sent, redact = body
            body[:] = [redact(sent.decode("utf-8"))]
        text: str = body[0]
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (body bytes decoded as UTF-8, invalid bytes replaced)."""
        return {
            "endpoint": self.endpoint,
            "wire_api": self.wire_api,
            "method": self.method,
            "url": self.url,
            "request_headers": self.request_headers,
            "request_body": self.request_body,
            "status": self.status,
            "response_headers": self.response_headers,
            "response_body": None
            if self.response_body is None
            else self.response_body.decode("utf-8", errors="replace"),
            "response_body_truncated": self.response_body_truncated,
            "streamed": self.streamed,
            "timings": {
                "started_at": self.timings.started_at,
                "first_byte_ms": self.timings.first_byte_ms,
                "first_reasoning_ms": self.timings.first_reasoning_ms,
                "first_text_ms": self.timings.first_text_ms,
                "total_ms": self.timings.total_ms,
            },
            "attempts": [
                {
                    "number": attempt.number,
                    "status": attempt.status,
                    "error_code": attempt.error_code,
                    "waited_before_s": attempt.waited_before_s,
                    "duration_ms": attempt.duration_ms,
                }
                for attempt in self.attempts
            ],
            "capability": self.capability,
        }
