"""The transport: sends a wire request, retries, streams bytes through the adapter's
decoder, times the call and captures a redacted exchange. The same for every adapter.

Provider failures never raise out of a call: they arrive as the last event, an
:class:`~thoughtline.events.Error` with a stable code, so a consumer handles one channel.
Retries happen only while nothing of the response has reached the consumer.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import TracebackType
from typing import Self

import httpx2

from thoughtline.accumulator import ModelResponse, ResponseAccumulator
from thoughtline.errors import ProviderError
from thoughtline.events import (
    Error,
    ReasoningDelta,
    ReasoningStart,
    ResponseStarted,
    StreamEvent,
    TextDelta,
    Usage,
    Warning,
)
from thoughtline.providers.base import CallContext, WireAdapter, WireRequest, interrupted_error
from thoughtline.providers.capabilities import CapabilityTable, builtin_capabilities
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.exchange import Attempt, Exchange, ExchangeTimings
from thoughtline.providers.redaction import Redactor
from thoughtline.providers.registry import adapter_for
from thoughtline.requests import ModelRequest
from thoughtline.wire.jsonio import dumps_bytes

MAX_ERROR_BODY_BYTES = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """Jittered exponential backoff for 408/409/429/5xx/529 and connection errors.

    A provider's ``retry-after``/``retry-after-ms`` wins over the computed delay; a
    requested wait longer than ``max_retry_after_s`` is not waited for (the error is
    returned instead, saying so).
    """

    max_retries: int = 2
    initial_delay_s: float = 0.5
    max_delay_s: float = 8.0
    jitter: float = 0.25
    max_retry_after_s: float = 60.0

    def delay(self, retry_number: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            return retry_after_s
        base = min(self.max_delay_s, self.initial_delay_s * (2 ** (retry_number - 1)))
        return float(max(0.0, base * (1.0 + random.uniform(-self.jitter, self.jitter))))


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeouts:
    """Seconds. ``read`` bounds the wait for each chunk; ``total`` (optional) the call."""

    connect: float = 10.0
    read: float = 120.0
    write: float = 30.0
    pool: float = 10.0
    total: float | None = None

    def for_httpx(self) -> httpx2.Timeout:
        return httpx2.Timeout(
            connect=self.connect, read=self.read, write=self.write, pool=self.pool
        )


@dataclass(slots=True)
class _Clock:
    started: float = field(default_factory=time.perf_counter)
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    first_byte_ms: float | None = None
    first_reasoning_ms: float | None = None
    first_text_ms: float | None = None

    def ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000.0, 3)


class ProviderClient:
    """Calls one endpoint. Reuse it for many calls; it owns no state between calls.

    ``http_client`` is injectable (tests pass ``httpx2.AsyncClient(transport=
    httpx2.MockTransport(...))``); when omitted the client creates and owns one.
    ``redactor`` should know every credential the process loaded; the endpoint's own key
    is always added.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        http_client: httpx2.AsyncClient | None = None,
        adapter: WireAdapter | None = None,
        capabilities: CapabilityTable | None = None,
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        redactor: Redactor | None = None,
        capture_body: bool = True,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.endpoint = endpoint
        self.adapter = adapter or adapter_for(endpoint.wire_api)
        self.capabilities = capabilities or builtin_capabilities()
        self.retry = retry or RetryPolicy()
        self.timeouts = timeouts or Timeouts()
        base_redactor = redactor or Redactor()
        self.redactor = base_redactor.with_secrets([endpoint.api_key] if endpoint.api_key else [])
        self.capture_body = capture_body
        self._sleep = sleep
        self._owns_http = http_client is None
        self._http = http_client or httpx2.AsyncClient(timeout=self.timeouts.for_httpx())

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def call(self, request: ModelRequest) -> ProviderCall:
        """Start a call. Use as ``async with client.call(request) as call: async for ...``."""
        return ProviderCall(self, request)

    async def complete(self, request: ModelRequest) -> ProviderCall:
        """Run a call to the end and return it (``.response``, ``.exchange``)."""
        async with self.call(request) as call:
            async for _ in call:
                pass
        return call

    def _auth_headers(self) -> dict[str, str]:
        key = self.endpoint.require_key()
        if not key:
            return {}
        match self.endpoint.auth:
            case "x-api-key":
                return {"x-api-key": key}
            case "bearer":
                return {"authorization": f"Bearer {key}"}
            case "x-goog-api-key":
                return {"x-goog-api-key": key}
            case "none":
                return {}


class ProviderCall:
    """One call: an async iterator of events; afterwards ``response`` and ``exchange``."""

    def __init__(self, client: ProviderClient, request: ModelRequest) -> None:
        self._client = client
        self.request = request
        capability = client.capabilities.lookup(client.endpoint.name, request.model)
        self.context = CallContext(endpoint=client.endpoint, capability=capability)
        self._accumulator = ResponseAccumulator()
        self._iterator: AsyncIterator[StreamEvent] | None = None
        self.exchange: Exchange | None = None
        self._request_body = b""

    @property
    def response(self) -> ModelResponse:
        """What has arrived so far (complete once iteration ended)."""
        return self._accumulator.result()

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        if self._iterator is None:
            self._iterator = self._run()
        return self._iterator

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        iterator = self._iterator
        if iterator is not None and hasattr(iterator, "aclose"):
            await iterator.aclose()

    async def _run(self) -> AsyncIterator[StreamEvent]:
        # Inner layers hand over one batch per network chunk; only this loop yields
        # single events, so each event crosses one generator boundary, not four.
        add = self._accumulator.add
        async for batch in self._attempts():
            for event in batch:
                add(event)
                yield event

    async def _attempts(self) -> AsyncIterator[list[StreamEvent]]:
        client = self._client
        clock = _Clock()
        attempts: list[Attempt] = []
        wire = client.adapter.build_request(self.request, self.context)
        # Serialized once: every attempt sends these bytes and the exchange records them.
        self._request_body = dumps_bytes(wire.body)
        if wire.warnings:
            yield list(wire.warnings)
        try:
            headers = {**wire.headers, **client._auth_headers()}
        except ProviderError as exc:
            yield [_error_event(exc)]
            self.exchange = self._exchange(wire, {}, clock, attempts, None, {}, [])
            return
        waited = 0.0
        retry_number = 0
        while True:
            attempt_started = time.perf_counter()
            outcome = _AttemptOutcome()
            response = await self._open(wire, headers, clock, outcome)
            if response is not None:
                try:
                    async for batch in self._decode(response, clock, outcome):
                        yield batch
                finally:
                    await response.aclose()
            attempts.append(
                Attempt(
                    number=len(attempts) + 1,
                    status=outcome.status,
                    error_code=outcome.error.code if outcome.error else None,
                    waited_before_s=waited,
                    duration_ms=round((time.perf_counter() - attempt_started) * 1000.0, 3),
                )
            )
            error = outcome.error
            if error is None or outcome.delivered or not error.retryable:
                break
            if retry_number >= client.retry.max_retries:
                break
            if (
                outcome.retry_after_s is not None
                and outcome.retry_after_s > client.retry.max_retry_after_s
            ):
                error = Error(
                    code=error.code,
                    message=f"{error.message} The provider asked to wait "
                    f"{outcome.retry_after_s:.0f}s, longer than the "
                    f"{client.retry.max_retry_after_s:.0f}s thoughtline waits.",
                    retryable=error.retryable,
                    status=error.status,
                    provider_error_type=error.provider_error_type,
                )
                outcome.error = error
                break
            retry_number += 1
            waited = client.retry.delay(retry_number, outcome.retry_after_s)
            await client._sleep(waited)
        if outcome.error is not None:
            # Error bodies sometimes echo what was sent, credentials included.
            error = replace(outcome.error, message=client.redactor.text(outcome.error.message))
            yield [*outcome.held, error]
        self.exchange = self._exchange(
            wire,
            headers,
            clock,
            attempts,
            outcome.status,
            outcome.response_headers,
            outcome.body_chunks,
        )

    async def _open(
        self,
        wire: WireRequest,
        headers: dict[str, str],
        clock: _Clock,
        outcome: _AttemptOutcome,
    ) -> httpx2.Response | None:
        """Send one attempt. Returns the open response to stream from, or ``None`` when
        the attempt already failed (the error is in ``outcome``, so the caller can retry)."""
        client = self._client
        http = client._http
        request = http.build_request(
            wire.method,
            wire.url,
            headers=headers,
            content=self._request_body,
            timeout=client.timeouts.for_httpx(),
        )
        try:
            response = await http.send(request, stream=True)
        except httpx2.TimeoutException as exc:
            outcome.error = _transport_error("PROVIDER_TIMEOUT", client.endpoint, exc)
            return None
        except httpx2.TransportError as exc:
            outcome.error = _transport_error("PROVIDER_UNREACHABLE", client.endpoint, exc)
            return None
        outcome.status = response.status_code
        outcome.response_headers = dict(response.headers)
        if response.status_code < 400:
            return response
        try:
            body = await _read_bounded(response)
        finally:
            await response.aclose()
        outcome.body_chunks.append(body)
        if clock.first_byte_ms is None:
            clock.first_byte_ms = clock.ms()
        error = client.adapter.parse_error(
            response.status_code, response.headers, body, self.context
        )
        outcome.error = _error_event(error)
        outcome.retry_after_s = error.retry_after_s
        return None

    async def _decode(
        self,
        response: httpx2.Response,
        clock: _Clock,
        outcome: _AttemptOutcome,
    ) -> AsyncIterator[list[StreamEvent]]:
        """Bytes → decoder → batches of events to deliver (see ``_route``)."""
        client = self._client
        total = client.timeouts.total
        deadline = None if total is None else clock.started + total
        held = outcome.held
        streamed = self.request.stream
        decoder = client.adapter.new_decoder(self.request, self.context) if streamed else None
        body_parts: list[bytes] = []
        capture = client.capture_body
        try:
            async for chunk in _body_chunks(response):
                if clock.first_byte_ms is None:
                    clock.first_byte_ms = clock.ms()
                if capture or not streamed:
                    (outcome.body_chunks if capture else body_parts).append(chunk)
                if decoder is not None and outcome.error is None:
                    batch = self._route(decoder.feed(chunk), clock, outcome)
                    if batch:
                        yield batch
                if deadline is not None and time.perf_counter() > deadline:
                    raise httpx2.ReadTimeout("total timeout exceeded")
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if outcome.delivered:
                outcome.error = interrupted_error(f"connection lost: {detail}")
            else:
                code = (
                    "PROVIDER_TIMEOUT"
                    if isinstance(exc, httpx2.TimeoutException)
                    else "PROVIDER_UNREACHABLE"
                )
                outcome.error = _transport_error(code, client.endpoint, exc)
            return
        if decoder is not None:
            remaining = decoder.close()
        else:
            body = b"".join(outcome.body_chunks if capture else body_parts)
            remaining = client.adapter.decode_body(body, self.request, self.context)
        if outcome.error is None:
            batch = self._route(remaining, clock, outcome)
            if batch:
                yield batch
        if outcome.error is None and held:
            # A response with no content at all (e.g. only usage): release what was held.
            yield list(held)
            held.clear()

    def _route(
        self, events: list[StreamEvent], clock: _Clock, outcome: _AttemptOutcome
    ) -> list[StreamEvent]:
        """The events to deliver now. Bookkeeping events are held until content flows
        (so a retry can discard them); an error is kept in ``outcome``, not delivered;
        first-reasoning / first-text times are recorded."""
        if not events:
            return events
        if (
            outcome.delivered
            and clock.first_text_ms is not None
            and clock.first_reasoning_ms is not None
            and type(events[-1]) is not Error  # an error is always a batch's last event
        ):
            return events  # the steady state: nothing to hold, time or intercept
        out: list[StreamEvent] = []
        for event in events:
            if outcome.error is not None:
                break
            if isinstance(event, Error):
                outcome.error = event
                break
            if not outcome.delivered:
                if isinstance(event, ResponseStarted | Usage | Warning):
                    outcome.held.append(event)
                    continue
                outcome.delivered = True
                out.extend(outcome.held)
                outcome.held.clear()
            if clock.first_text_ms is None or clock.first_reasoning_ms is None:
                if clock.first_reasoning_ms is None and isinstance(
                    event, ReasoningStart | ReasoningDelta
                ):
                    clock.first_reasoning_ms = clock.ms()
                elif clock.first_text_ms is None and isinstance(event, TextDelta):
                    clock.first_text_ms = clock.ms()
            out.append(event)
        return out

    def _exchange(
        self,
        wire: WireRequest,
        headers: dict[str, str],
        clock: _Clock,
        attempts: list[Attempt],
        status: int | None,
        response_headers: dict[str, str],
        body_chunks: list[bytes],
    ) -> Exchange:
        redactor = self._client.redactor
        body = (
            b"".join(body_chunks)
            if (self._client.capture_body or (status is not None and status >= 400))
            else None
        )
        return Exchange(
            endpoint=self._client.endpoint.name,
            wire_api=self._client.adapter.wire_api,
            method=wire.method,
            url=redactor.url(wire.url),
            request_headers=redactor.headers(headers),
            request_body=redactor.text(self._request_body.decode("utf-8")),
            status=status,
            response_headers=redactor.headers(response_headers),
            response_body=None if body is None else redactor.bytes(body),
            streamed=self.request.stream,
            timings=ExchangeTimings(
                started_at=clock.started_at,
                first_byte_ms=clock.first_byte_ms,
                first_reasoning_ms=clock.first_reasoning_ms,
                first_text_ms=clock.first_text_ms,
                total_ms=clock.ms(),
            ),
            attempts=tuple(attempts),
            capability=self.context.capability.describe(),
        )


@dataclass(slots=True)
class _AttemptOutcome:
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    error: Error | None = None
    retry_after_s: float | None = None
    delivered: bool = False
    held: list[StreamEvent] = field(default_factory=list)
    body_chunks: list[bytes] = field(default_factory=list)


def _body_chunks(response: httpx2.Response) -> AsyncIterator[bytes]:
    """The response body as it arrives. Without a content encoding the raw chunks are
    the body, and reading them directly skips httpx2's decoding layers on the hot path."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding == "identity" and not response.is_stream_consumed:
        return response.aiter_raw()
    return response.aiter_bytes()  # decodes gzip & co; also serves already-read bodies


async def _read_bounded(response: httpx2.Response) -> bytes:
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size >= MAX_ERROR_BODY_BYTES:
            break
    return b"".join(parts)


def _error_event(exc: ProviderError) -> Error:
    return Error(
        code=exc.code,
        message=exc.message,
        retryable=exc.retryable,
        status=exc.status,
        provider_error_type=exc.provider_error_type,
    )


def _transport_error(code: str, endpoint: Endpoint, exc: Exception) -> Error:
    detail = str(exc) or type(exc).__name__
    if code == "PROVIDER_TIMEOUT":
        message = (
            f"{endpoint.name} at {endpoint.base_url} did not answer in time ({detail}). "
            "Try again, or raise the timeout."
        )
    else:
        message = (
            f"Cannot reach {endpoint.name} at {endpoint.base_url} ({detail}). "
            "Check that the server is running and the base URL is right."
        )
    return Error(code=code, message=message, retryable=True)
