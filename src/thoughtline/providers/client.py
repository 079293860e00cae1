"""The transport: sends a wire request, retries, streams bytes through the adapter's
decoder, times the call and captures a redacted exchange. The same for every adapter.

Provider failures never raise out of a call: they arrive as the last event, an
:class:`~thoughtline.model.events.StreamError` with a stable code, so a consumer handles one channel.
Retries happen only while nothing of the response has reached the consumer.

Every call ends and stays bounded, whatever the server does: ``read`` bounds silence,
a timer bounds each attempt at ``total`` (pings do not keep it alive, see
:mod:`thoughtline.providers.timeouts`), the stream decoders cap one frame
(:mod:`thoughtline.wire.frames`), and whole bodies, error bodies and captured streams
are capped here. Reading stops at the first error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from types import TracebackType
from typing import Self

import httpx2

from thoughtline.errors import ProviderError
from thoughtline.model.accumulator import ModelResponse, ResponseAccumulator
from thoughtline.model.events import StreamError, StreamEvent
from thoughtline.model.requests import ModelRequest
from thoughtline.providers._attempt import AttemptOutcome, CallClock, route
from thoughtline.providers._capture import (
    MAX_BODY_BYTES,
    MAX_ERROR_BODY_BYTES,
    build_exchange,
    iter_body,
    read_bounded,
)
from thoughtline.providers._deadline import Deadline, DeadlineExceeded
from thoughtline.providers._silent_stream import ask_unstreamed, silent_stream
from thoughtline.providers._transport_errors import (
    body_too_large,
    error_event,
    lost_detail,
    total_timeout_error,
    transport_error,
)
from thoughtline.providers.base import (
    CallContext,
    OutputBounds,
    WireAdapter,
    WireRequest,
    interrupted_error,
    nothing_arrived,
)
from thoughtline.providers.capabilities import CapabilityTable, builtin_capabilities
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.exchange import Attempt, Exchange
from thoughtline.providers.redaction import Redactor
from thoughtline.providers.registry import wire_for
from thoughtline.providers.retry import RetryPolicy
from thoughtline.providers.timeouts import Timeouts
from thoughtline.providers.transport import default_http_client, request_url
from thoughtline.wire.jsonio import dumps_body

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_ERROR_BODY_BYTES",
    "ProviderCall",
    "ProviderClient",
    "RetryPolicy",
    "Timeouts",
]


class ProviderClient:
    """Calls one endpoint. Reuse it for many calls; it owns no state between calls.

    ``http_client`` is injectable (tests pass ``httpx2.AsyncClient(transport=
    httpx2.MockTransport(...))``); when omitted the client creates and owns one.
    ``redactor`` should know every credential the process loaded; the endpoint's own key
    is always added. ``timeouts`` apply to every call; keys the endpoint sets itself
    (``[providers.NAME.timeouts]``) win over them. ``max_body_bytes`` caps a whole
    non-streamed body and the captured bytes of a stream.

    ``capture_body`` (default on) keeps the response body in ``call.exchange``, redacted
    chunk by chunk as it streams (:class:`~thoughtline.providers._body_redaction.BodyRedactor`:
    about a microsecond per chunk, memory for the body itself). Off, a stream's bytes are
    neither kept nor scanned, and ``exchange.response_body`` is ``None`` except for an
    HTTP error. The runtime turns it on only for the ``provider_raw`` trace layer.
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
        self.adapter = adapter or wire_for(endpoint.wire_api)
        self.capabilities = capabilities or builtin_capabilities()
        self.retry = retry or RetryPolicy()
        self.timeouts = (timeouts or Timeouts()).overridden_by(endpoint.timeouts)
        base_redactor = redactor or Redactor()
        self.redactor = base_redactor.with_secrets([endpoint.api_key] if endpoint.api_key else [])
        self.capture_body = capture_body
        self.max_body_bytes = max_body_bytes
        self._sleep = sleep
        self._owns_http = http_client is None
        self._http = http_client or default_http_client(self.timeouts.for_httpx())

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def output_bounds(self, request: ModelRequest) -> OutputBounds:
        """How many tokens ``request`` lets the model generate as the endpoint's wire API
        sends it (:meth:`~thoughtline.providers.wire.Wire.output_bounds`)."""
        capability = self.capabilities.lookup(self.endpoint.capability_key, request.model)
        context = CallContext(endpoint=self.endpoint, capability=capability)
        return wire_for(self.endpoint.wire_api).output_bounds(request, context)

    def call(self, request: ModelRequest) -> ProviderCall:
        """Start a call. Use as ``async with client.call(request) as call: async for ...``."""
        return ProviderCall(self, request)

    async def complete(self, request: ModelRequest) -> ProviderCall:
        """Run a call to the end and return it (``.response``, ``.exchange``)."""
        async with self.call(request) as call:
            async for _ in call:
                pass
        return call


class ProviderCall:
    """One call: an async iterator of events; afterwards ``response`` and ``exchange``."""

    def __init__(self, client: ProviderClient, request: ModelRequest) -> None:
        self._client = client
        self.request = request
        capability = client.capabilities.lookup(client.endpoint.capability_key, request.model)
        self.context = CallContext(endpoint=client.endpoint, capability=capability)
        self._accumulator = ResponseAccumulator(provider=client.endpoint.name, model=request.model)
        self._iterator: AsyncIterator[StreamEvent] | None = None
        self._batches: AsyncIterator[list[StreamEvent]] | None = None
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

    def batches(self) -> AsyncIterator[list[StreamEvent]]:
        """The same events as iterating the call, one list per network chunk: what
        arrived together, for a consumer that handles it together (iterate the call or
        its batches, not both)."""
        if self._batches is None:
            self._batches = self._run_batches()
        return self._batches

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for iterator in (self._iterator, self._batches):
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

    async def _run_batches(self) -> AsyncIterator[list[StreamEvent]]:
        add = self._accumulator.add
        async for batch in self._attempts():
            for event in batch:
                add(event)
            yield batch

    def _did_you_mean(self, message: str) -> str:
        """``message`` of a not-found answer, with the known model id closest to the one
        sent when it looks like a typo (the data knows ids; a model it does not know is
        still sent, since providers add models)."""
        client = self._client
        known = client.capabilities.did_you_mean(client.endpoint.capability_key, self.request.model)
        if known is None:
            return message
        return f"{message.rstrip()} Did you mean {known}?"

    async def _attempts(self) -> AsyncIterator[list[StreamEvent]]:
        client = self._client
        clock = CallClock()
        attempts: list[Attempt] = []
        wire = client.adapter.build_request(self.request, self.context)
        # Serialized once: every attempt sends these bytes and the exchange records them.
        self._request_body = dumps_body(wire.body)
        if wire.warnings:
            yield list(wire.warnings)
        try:
            headers = {**wire.headers, **client.endpoint.auth_headers()}
        except ProviderError as exc:
            yield [error_event(exc)]
            self.exchange = self._exchange(wire, {}, clock, attempts, None, {}, [])
            return
        waited = 0.0
        retry_number = 0
        probed = False
        while True:
            attempt_started = time.perf_counter()
            outcome = AttemptOutcome()
            deadline = Deadline(client.timeouts.total)
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
            if error is not None and not probed and silent_stream(self.request, outcome):
                # Accepted, then closed without a byte: some servers (llama-cpp-python
                # when the prompt exceeds its context) say why only when asked unstreamed.
                probed = True
                said = await ask_unstreamed(client, self.request, self.context, headers)
                if said is not None:
                    outcome.error, outcome.final = said, True
                    error = said
            if error is None or outcome.delivered or not error.retryable or outcome.final:
                break
            if retry_number >= client.retry.max_retries:
                break
            if (
                outcome.retry_after_s is not None
                and outcome.retry_after_s > client.retry.max_retry_after_s
            ):
                error = replace(
                    error,
                    message=f"{error.message} The provider asked to wait "
                    f"{outcome.retry_after_s:.0f}s, longer than the "
                    f"{client.retry.max_retry_after_s:.0f}s thoughtline waits.",
                )
                outcome.error = error
                break
            retry_number += 1
            waited = client.retry.delay(retry_number, outcome.retry_after_s)
            await client._sleep(waited)
        if outcome.error is not None:
            error = outcome.error if outcome.delivered else nothing_arrived(outcome.error)
            # Error bodies sometimes echo what was sent, credentials included.
            error = replace(error, message=client.redactor.text(error.message))
            if error.code == "PROVIDER_NOT_FOUND":
                error = replace(error, message=self._did_you_mean(error.message))
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
            body_redacted=outcome.body_redacted,
        )

    async def _open(
        self,
        wire: WireRequest,
        headers: dict[str, str],
        clock: CallClock,
        outcome: AttemptOutcome,
        deadline: Deadline,
    ) -> httpx2.Response | None:
        """Send one attempt. Returns the open response to stream from, or ``None`` when
        the attempt already failed (the error is in ``outcome``, so the caller can retry)."""
        client = self._client
        http = client._http
        request = http.build_request(
            wire.method,
            request_url(wire.url),
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
                else transport_error(client.endpoint, client.timeouts, exc)
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
            body = await read_bounded(response)
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
        outcome.error = error_event(error)
        outcome.retry_after_s = error.retry_after_s
        return None

    async def _decode(
        self,
        response: httpx2.Response,
        clock: CallClock,
        outcome: AttemptOutcome,
        deadline: Deadline,
    ) -> AsyncIterator[list[StreamEvent]]:
        """Bytes → decoder → batches of events to deliver (see ``_attempt.route``).

        Reading stops at the first error (a hostile stream may never end), when the
        attempt's deadline expires, and when a non-streamed body passes the size cap."""
        client = self._client
        held = outcome.held
        streamed = self.request.stream
        decoder = client.adapter.new_decoder(self.request, self.context) if streamed else None
        # A whole body is kept to decode it; a stream only when capture is on, and then
        # redacted chunk by chunk as it arrives (never held raw, never scanned whole).
        capture = client.capture_body or not streamed
        captured = outcome.body_chunks
        redact = client.redactor.body() if streamed and client.capture_body else None
        outcome.body_redacted = redact is not None
        room = client.max_body_bytes
        next_chunk = iter_body(response).__anext__
        try:
            while True:
                if deadline.expired:
                    raise DeadlineExceeded
                deadline.waiting = True
                try:
                    chunk = await next_chunk()
                except StopAsyncIteration:
                    break
                except asyncio.CancelledError:
                    if deadline.absorb():
                        raise DeadlineExceeded from None
                    raise
                finally:
                    deadline.waiting = False
                if clock.first_byte_ms is None:
                    clock.first_byte_ms = clock.ms()
                outcome.received_bytes += len(chunk)
                if capture:
                    room -= len(chunk)
                    if room >= 0:
                        if redact is None:
                            captured.append(chunk)
                        elif released := redact.feed(chunk):
                            captured.append(released)
                    elif decoder is None:
                        outcome.error = body_too_large(client.max_body_bytes)
                        return
                    else:  # the exchange keeps the start of a very long stream
                        outcome.capture_truncated = True
                        capture = False
                if decoder is not None:
                    batch = route(decoder.feed(chunk), clock, outcome)
                    if batch:
                        yield batch
                    if outcome.error is not None:
                        return
        except DeadlineExceeded:
            outcome.error = self._total_timeout(outcome)
            return
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            if deadline.expired:
                outcome.error = self._total_timeout(outcome)
            elif outcome.delivered:
                outcome.error = interrupted_error(lost_detail(client.timeouts, exc))
            else:
                outcome.error = transport_error(client.endpoint, client.timeouts, exc)
            return
        finally:
            if redact is not None:
                captured.append(redact.flush())  # the end of what was kept, redacted
        if decoder is not None:
            remaining = decoder.close()
        else:
            body = b"".join(captured)
            remaining = client.adapter.decode_body(body, self.request, self.context)
        if outcome.error is None:
            batch = route(remaining, clock, outcome)
            if batch:
                yield batch
        if outcome.error is None and held:
            # A response with no content at all (e.g. only usage): release what was held.
            yield list(held)
            held.clear()

    def _total_timeout(self, outcome: AttemptOutcome) -> StreamError:
        """The error for an attempt stopped by its total timeout. Not retried: the attempt
        used the whole budget, and what arrived has been delivered already."""
        outcome.final = True
        client = self._client
        return total_timeout_error(
            client.endpoint, client.timeouts.total, delivered=outcome.delivered
        )

    def _exchange(
        self,
        wire: WireRequest,
        headers: dict[str, str],
        clock: CallClock,
        attempts: list[Attempt],
        status: int | None,
        response_headers: dict[str, str],
        body_chunks: list[bytes],
        *,
        body_truncated: bool = False,
        body_redacted: bool = False,
    ) -> Exchange:
        client = self._client
        return build_exchange(
            redactor=client.redactor,
            endpoint_name=client.endpoint.name,
            wire_api=client.adapter.wire_api,
            wire=wire,
            headers=headers,
            request_body=self._request_body,
            streamed=self.request.stream,
            capability=self.context.capability.describe(),
            capture_body=client.capture_body,
            clock=clock,
            attempts=attempts,
            status=status,
            response_headers=response_headers,
            body_chunks=body_chunks,
            body_truncated=body_truncated,
            body_redacted=body_redacted,
        )
