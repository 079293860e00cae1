"""The transport: sends a wire request, retries, streams bytes through the adapter's
decoder, times the call and captures a redacted exchange. The same for every adapter.

Provider failures never raise out of a call: they arrive as the last event, an
:class:`~thoughtline.events.Error` with a stable code, so a consumer handles one channel.
Retries happen only while nothing of the response has reached the consumer.

Every call ends and stays bounded, whatever the server does: ``read`` bounds silence,
a timer bounds each attempt at ``total`` (pings do not keep it alive, see
:mod:`thoughtline.providers.timeouts`), the stream decoders cap one frame
(:mod:`thoughtline.wire.frames`), and whole bodies, error bodies and captured streams
are capped here. Reading stops at the first error.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import TracebackType
from typing import Final, Self

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
from thoughtline.providers.timeouts import Timeouts
from thoughtline.requests import ModelRequest
from thoughtline.wire.jsonio import dumps_bytes

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_ERROR_BODY_BYTES",
    "ProviderCall",
    "ProviderClient",
    "RetryPolicy",
    "Timeouts",
]

MAX_ERROR_BODY_BYTES: Final = 1_000_000
"""An HTTP error body is read up to this size; the rest is not read."""
MAX_BODY_BYTES: Final = 64 * 1024 * 1024
"""Cap on a whole non-streamed response body, and on the bytes of a stream kept for the
exchange (capture stops there; decoding goes on)."""


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
    is always added. ``timeouts`` apply to every call; keys the endpoint sets itself
    (``[providers.NAME.timeouts]``) win over them. ``max_body_bytes`` caps a whole
    non-streamed body and the captured bytes of a stream.
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
        max_body_bytes: int = MAX_BODY_BYTES,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.endpoint = endpoint
        self.adapter = adapter or adapter_for(endpoint.wire_api)
        self.capabilities = capabilities or builtin_capabilities()
        self.retry = retry or RetryPolicy()
        self.timeouts = (timeouts or Timeouts()).overridden_by(endpoint.timeouts)
        base_redactor = redactor or Redactor()
        self.redactor = base_redactor.with_secrets([endpoint.api_key] if endpoint.api_key else [])
        self.capture_body = capture_body
        self.max_body_bytes = max_body_bytes
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
        capability = client.capabilities.lookup(client.endpoint.capability_key, request.model)
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
            deadline = _Deadline(client.timeouts.total)
            try:
                response = await self._open(wire, headers, clock, outcome, deadline)
                if response is not None:
                    try:
                        async for batch in self._decode(response, clock, outcome, deadline):
                            yield batch
                    finally:
                        await response.aclose()
            finally:
                deadline.disarm()
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
            if error is None or outcome.delivered or not error.retryable or outcome.final:
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
            body_truncated=outcome.capture_truncated,
        )

    async def _open(
        self,
        wire: WireRequest,
        headers: dict[str, str],
        clock: _Clock,
        outcome: _AttemptOutcome,
        deadline: _Deadline,
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
        deadline.waiting = True
        try:
            response = await http.send(request, stream=True)
        except asyncio.CancelledError:
            if not deadline.absorb():
                raise
            outcome.error = self._total_timeout(outcome)
            return None
        except httpx2.TransportError as exc:
            outcome.error = (
                self._total_timeout(outcome)
                if deadline.expired
                else _transport_error(client.endpoint, client.timeouts, exc)
            )
            return None
        finally:
            deadline.waiting = False
        outcome.status = response.status_code
        outcome.response_headers = dict(response.headers)
        if response.status_code < 400:
            return response
        deadline.waiting = True
        try:
            body = await _read_bounded(response)
        except asyncio.CancelledError:
            if not deadline.absorb():
                raise
            body = b""  # the status still says what went wrong
        except (httpx2.TransportError, httpx2.StreamError):
            body = b""
        finally:
            deadline.waiting = False
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
        deadline: _Deadline,
    ) -> AsyncIterator[list[StreamEvent]]:
        """Bytes → decoder → batches of events to deliver (see ``_route``).

        Reading stops at the first error (a hostile stream may never end), when the
        attempt's deadline expires, and when a non-streamed body passes the size cap."""
        client = self._client
        held = outcome.held
        streamed = self.request.stream
        decoder = client.adapter.new_decoder(self.request, self.context) if streamed else None
        capture = client.capture_body or not streamed
        captured = outcome.body_chunks
        room = client.max_body_bytes
        next_chunk = _body_chunks(response).__anext__
        try:
            while True:
                if deadline.expired:
                    raise _DeadlineExceeded
                deadline.waiting = True
                try:
                    chunk = await next_chunk()
                except StopAsyncIteration:
                    break
                except asyncio.CancelledError:
                    if deadline.absorb():
                        raise _DeadlineExceeded from None
                    raise
                finally:
                    deadline.waiting = False
                if clock.first_byte_ms is None:
                    clock.first_byte_ms = clock.ms()
                if capture:
                    room -= len(chunk)
                    if room >= 0:
                        captured.append(chunk)
                    elif decoder is None:
                        outcome.error = _body_too_large(client.max_body_bytes)
                        return
                    else:  # the exchange keeps the start of a very long stream
                        outcome.capture_truncated = True
                        capture = False
                if decoder is not None:
                    batch = self._route(decoder.feed(chunk), clock, outcome)
                    if batch:
                        yield batch
                    if outcome.error is not None:
                        return
        except _DeadlineExceeded:
            outcome.error = self._total_timeout(outcome)
            return
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            if deadline.expired:
                outcome.error = self._total_timeout(outcome)
            elif outcome.delivered:
                outcome.error = interrupted_error(_lost_detail(client.timeouts, exc))
            else:
                outcome.error = _transport_error(client.endpoint, client.timeouts, exc)
            return
        if decoder is not None:
            remaining = decoder.close()
        else:
            body = b"".join(captured)
            remaining = client.adapter.decode_body(body, self.request, self.context)
        if outcome.error is None:
            batch = self._route(remaining, clock, outcome)
            if batch:
                yield batch
        if outcome.error is None and held:
            # A response with no content at all (e.g. only usage): release what was held.
            yield list(held)
            held.clear()

    def _total_timeout(self, outcome: _AttemptOutcome) -> Error:
        """The error for an attempt stopped by its total timeout. Not retried: the attempt
        used the whole budget, and what arrived has been delivered already."""
        outcome.final = True
        endpoint = self._client.endpoint
        seconds = self._client.timeouts.total
        kept = " What arrived before that is kept." if outcome.delivered else ""
        if endpoint.timeouts.total is not None:
            key = f"[providers.{endpoint.name}.timeouts] total"
        else:
            key = (
                f"[timeouts] total (or [providers.{endpoint.name}.timeouts] total for "
                "this endpoint alone)"
            )
        return Error(
            code="PROVIDER_TIMEOUT",
            message=f"The call to {endpoint.name} exceeded the total timeout of "
            f"{seconds:g} s and was stopped.{kept} If the provider needs longer, raise "
            f"{key} in thoughtline.toml.",
            retryable=True,
        )

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
        *,
        body_truncated: bool = False,
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
            response_body_truncated=body_truncated and body is not None,
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
    final: bool = False  # not to be retried whatever its code says
    capture_truncated: bool = False


class _DeadlineExceeded(Exception):
    """The attempt's total timeout expired (internal; it becomes an ``Error`` event)."""


class _Deadline:
    """The ``total`` timeout of one attempt, kept by a timer, not by chunk arrival.

    ``asyncio.timeout`` cannot wrap a generator that yields to its consumer: it would
    cancel whatever the consumer is awaiting. So the transport marks the moments it
    awaits the network (``waiting``). When the timer fires during one, it cancels the
    task, the await raises ``CancelledError`` and :meth:`absorb` turns that back into a
    timeout; otherwise it sets ``expired``, which the read loop checks before each
    read. Per chunk that costs two attribute stores and one load, no clock call.

    The task that starts the attempt must be the one that iterates the call (as
    ``async for`` does).
    """

    __slots__ = ("_cancelled", "_cancelling", "_handle", "_task", "expired", "waiting")

    def __init__(self, seconds: float | None) -> None:
        self.expired = False
        self.waiting = False
        self._cancelled = False
        self._task = asyncio.current_task()
        self._cancelling = 0 if self._task is None else self._task.cancelling()
        self._handle: asyncio.TimerHandle | None = None
        if seconds is not None and self._task is not None:
            self._handle = asyncio.get_running_loop().call_later(seconds, self._fire)

    def _fire(self) -> None:
        self.expired = True
        if self.waiting and self._task is not None:
            self._cancelled = True
            self._task.cancel()

    def absorb(self) -> bool:
        """For a ``CancelledError`` raised while waiting: True when the timer caused it
        (the cancellation is withdrawn), False when the task was cancelled by someone
        else, which must propagate."""
        if not self._cancelled or self._task is None:
            return False
        self._cancelled = False
        return self._task.uncancel() <= self._cancelling

    def disarm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        if self._cancelled and self._task is not None:
            # The timer's cancellation was turned into another error on the way (the
            # read still failed, and was reported as a timeout): withdraw it.
            self._cancelled = False
            self._task.uncancel()


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
    return b"".join(parts)[:MAX_ERROR_BODY_BYTES]


def _error_event(exc: ProviderError) -> Error:
    return Error(
        code=exc.code,
        message=exc.message,
        retryable=exc.retryable,
        status=exc.status,
        provider_error_type=exc.provider_error_type,
    )


def _transport_error(endpoint: Endpoint, timeouts: Timeouts, exc: Exception) -> Error:
    """A failure before any content arrived (retryable: the next attempt may work)."""
    detail = str(exc) or type(exc).__name__
    where = f"{endpoint.name} at {endpoint.base_url}"
    name = endpoint.name
    if isinstance(exc, httpx2.ConnectTimeout):
        message = (
            f"Could not connect to {where} within {timeouts.connect:g} s. Check that the "
            f"server is reachable, or raise [timeouts] connect (or "
            f"[providers.{name}.timeouts] connect)."
        )
    elif isinstance(exc, httpx2.ReadTimeout):
        message = (
            f"{where} sent nothing for {timeouts.read:g} s (the read timeout). Try again, "
            f"or raise [timeouts] read (or [providers.{name}.timeouts] read) if the model "
            "needs longer before it starts answering."
        )
    elif isinstance(exc, httpx2.PoolTimeout):
        message = (
            f"No connection to {where} became free within {timeouts.pool:g} s. "
            "Lower max_concurrency."
        )
    elif isinstance(exc, httpx2.TimeoutException):
        message = f"{where} did not answer in time ({detail}). Try again."
    else:
        message = (
            f"Cannot reach {where} ({detail}). "
            "Check that the server is running and the base URL is right."
        )
    code = (
        "PROVIDER_TIMEOUT" if isinstance(exc, httpx2.TimeoutException) else "PROVIDER_UNREACHABLE"
    )
    return Error(code=code, message=message, retryable=True)


def _lost_detail(timeouts: Timeouts, exc: Exception) -> str:
    """Why a stream that had delivered content stopped, for the interruption error."""
    if isinstance(exc, httpx2.ReadTimeout):
        return (
            f"nothing arrived for {timeouts.read:g} s, the read timeout; raise "
            "[timeouts] read to wait longer"
        )
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return f"connection lost: {detail}"


def _body_too_large(limit: int) -> Error:
    return Error(
        code="PROVIDER_MALFORMED_RESPONSE",
        message=f"The provider's response body is larger than {limit // (1024 * 1024)} MiB; "
        "thoughtline stopped reading it. Use streaming, or check the base URL points at "
        "the provider's API.",
        retryable=False,
    )
