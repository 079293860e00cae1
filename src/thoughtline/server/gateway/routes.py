"""The gateway's HTTP paths on the daemon, each answering in its client API's shapes,
errors included (thoughtline's code inside):

- ``/openai/v1``: ``GET /models`` and ``/models/{model}``, ``POST /chat/completions``,
  ``POST /responses``;
- ``/anthropic``: ``POST /v1/messages`` and ``POST /v1/messages/count_tokens`` (the
  provider's own count, :mod:`.counting`; never estimated).

The daemon's own guards apply as to every path (``Host`` allow-list, cross-site
refusals, the body cap, ``max_active_runs``); the daemon's bearer token does not: a
gateway path takes a client token (:mod:`.clients`), and a daemon whose config does not
turn the gateway on answers ``GATEWAY_DISABLED`` (404).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from thoughtline.config.gateway import GatewayClient, GatewaySettings
from thoughtline.gateway.call import Dialect, GatewayCall
from thoughtline.gateway.dialects import (
    DialectError,
    Rendering,
    ReplyStream,
    client_api,
    messages,
)
from thoughtline.model.events import StreamEvent
from thoughtline.records import Task
from thoughtline.server.connections import hang_up
from thoughtline.server.daemon import body_limit
from thoughtline.server.gateway.bridge import MODE_HEADER, Bridge, Call
from thoughtline.server.gateway.clients import find_client, given_token
from thoughtline.server.gateway.counting import count_tokens
from thoughtline.server.gateway.failure import GatewayFailure
from thoughtline.server.gateway.live import closing_events, live_events
from thoughtline.server.gateway.routing import listed, route
from thoughtline.server.sse import EventStreamResponse

logger = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)


class Api:
    """One client API: its dialect (:func:`~thoughtline.gateway.dialects.client_api`)
    and how a gateway refusal is answered in it."""

    def __init__(self, name: Dialect) -> None:
        self.dialect = client_api(name)

    def error(self, failure: GatewayFailure) -> Response:
        status, body = self.dialect.failure(failure.code, failure.message, status=failure.status)
        return JSONResponse(body, status_code=status, headers=failure.headers)

    def refused(self, exc: DialectError) -> Response:
        status, body = self.dialect.error(exc)
        return JSONResponse(body, status_code=status)


CHAT = Api("chat_completions")
RESPONSES = Api("responses")
MESSAGES = Api("messages")


def _bridge(request: Request) -> Bridge:
    bridge: Bridge | None = getattr(request.app.state, "gateway", None)
    if bridge is None:
        raise GatewayFailure(
            404,
            "GATEWAY_DISABLED",
            "This daemon's gateway is off; set [gateway] enabled = true in its config "
            "and restart `thoughtline serve`.",
        )
    return bridge


def _client(request: Request, settings: GatewaySettings) -> GatewayClient:
    try:
        return find_client(settings.clients, given_token(request.headers))
    except GatewayFailure as failure:
        failure.headers.setdefault("WWW-Authenticate", "Bearer")
        raise


@router.get("/openai/v1/models")
async def openai_models(request: Request) -> Response:
    try:
        bridge = _bridge(request)
        client = _client(request, bridge.settings)
    except GatewayFailure as failure:
        return CHAT.error(failure)
    data = [
        {"id": name, "object": "model", "created": 0, "owned_by": "thoughtline"}
        for name in listed(bridge.settings, client)
    ]
    return JSONResponse({"object": "list", "data": data})


@router.get("/openai/v1/models/{model:path}")
async def openai_model(request: Request, model: str) -> Response:
    """One model the client may name (an alias or ``ENDPOINT/MODEL`` it may call), as
    OpenAI's API describes one; else its refusal."""
    try:
        bridge = _bridge(request)
        client = _client(request, bridge.settings)
        route(bridge.settings, client, model, bridge.daemon.runtime.registry.names)
    except GatewayFailure as failure:
        return CHAT.error(failure)
    return JSONResponse({"id": model, "object": "model", "created": 0, "owned_by": "thoughtline"})


@router.post("/openai/v1/chat/completions")
async def openai_chat_completions(request: Request) -> Response:
    return await _answer(request, CHAT)


@router.post("/openai/v1/responses")
async def openai_responses(request: Request) -> Response:
    return await _answer(request, RESPONSES)


@router.post("/anthropic/v1/messages")
async def anthropic_messages(request: Request) -> Response:
    return await _answer(request, MESSAGES)


@router.post("/anthropic/v1/messages/count_tokens")
async def anthropic_count_tokens(request: Request) -> Response:
    """The provider's count of the input a call with this body would send
    (:mod:`.counting`), checked as a call is: the client, the body, the model."""
    try:
        return await _count(request)
    except Exception:
        logger.exception("the gateway failed on a token count")
        return MESSAGES.error(_FAILED)


async def _count(request: Request) -> Response:
    try:
        bridge = _bridge(request)
        client = _client(request, bridge.settings)
        limit = body_limit(bridge.daemon.runtime.config.max_request_bytes)
        try:
            call = messages.parse_count_tokens(await request.body(), max_bytes=limit)
        except DialectError as exc:
            return MESSAGES.refused(exc)
        target = route(bridge.settings, client, call.model, bridge.daemon.runtime.registry.names)
        counted = await count_tokens(bridge, client, call, target)
    except GatewayFailure as failure:
        return MESSAGES.error(failure)
    return JSONResponse(
        messages.count_tokens_body(counted), headers={MODE_HEADER: client.chain_of_thought}
    )


_FAILED = GatewayFailure(
    500, "INTERNAL_ERROR", "The gateway failed on this call; the daemon's log says why."
)
"""What a client gets for anything unforeseen (logged, with no internals in the message)."""


async def _answer(request: Request, api: Api) -> Response:
    """One client call in its API's shapes; anything unforeseen is a 500 in that API's
    error shape too (logged, with no internals in the message)."""
    try:
        return await _answer_call(request, api)
    except Exception:
        logger.exception("the gateway failed on a call")
        return api.error(_FAILED)


async def _answer_call(request: Request, api: Api) -> Response:
    """One client call: who it is, what it asks, the run it is, the answer in its API."""
    try:
        bridge = _bridge(request)
        client = _client(request, bridge.settings)
        raw = await request.body()
        limit = body_limit(bridge.daemon.runtime.config.max_request_bytes)
        try:
            call: GatewayCall = api.dialect.parse(raw, max_bytes=limit)
        except DialectError as exc:
            return api.refused(exc)
        endpoints = bridge.daemon.runtime.registry.names
        started = await bridge.start(
            client, call, route(bridge.settings, client, call.model, endpoints)
        )
    except GatewayFailure as failure:
        return api.error(failure)
    rendering = Rendering(shows_reasoning=started.shows_reasoning)
    if not call.stream:
        try:
            task = await _answered(request, started)
        except GatewayFailure as failure:
            return api.error(failure)
        if task is None:  # the client left first: its run was cancelled
            return Response(status_code=499)  # nobody reads it (nginx's "client closed")
        body: dict[str, Any] = api.dialect.render(call, rendering, started.reply(task))
        return JSONResponse(body, headers=started.headers)
    # Nothing is sent before the run has something to stream, for STATUS_HOLD_S at
    # most: a run that fails first (a rate limit, an overloaded or unreachable provider,
    # a timeout before the first byte) is answered with its status and error body, as
    # the provider's API does.
    started.hang_up = partial(hang_up, request.scope)
    batches = live_events(started)
    try:
        first = await _first_batch(request, batches)
    except asyncio.CancelledError:
        started.bridge.daemon.runs.cancel(started.handle.run_id)
        raise
    if first is None:  # the client left first: as one that leaves a stream
        started.bridge.daemon.runs.cancel(started.handle.run_id)
        return Response(status_code=499)  # nobody reads it (nginx's "client closed")
    if first.done() and not first.result():  # the run ended with nothing streamed
        try:
            started.outcome()
        except GatewayFailure as failure:
            return api.error(failure)
    stream = api.dialect.stream(call, rendering)
    # Frames go straight to the server's send, past the middlewares' wrappers (as the
    # daemon's own event streams do).
    return EventStreamResponse(
        _streamed(started, stream, first, batches),
        media_type=stream.content_type,
        headers={**started.headers, "Cache-Control": "no-cache"},
    )


STATUS_HOLD_S = 5.0
"""How long a streamed call's status waits for the run's first delta. A provider's
refusal (a rate limit, an overload, a bad key) comes well within it and is answered as
a status and error body; a model that reasons longer than this before its answer (all
of it hidden from the client) gets its headers then, so that no client's own wait for
them runs out, and a later failure is the stream's error event."""


async def _first_batch(
    request: Request, batches: AsyncIterator[list[StreamEvent]]
) -> asyncio.Future[list[StreamEvent]] | None:
    """The run's first batch of deltas (empty: it ended with none): done when the run
    streamed or ended within :data:`STATUS_HOLD_S`, else still to come; or ``None`` when
    the client closed its connection first (its request read, the next message the
    server gives is the disconnect): the response that streams would have learnt it."""
    first = asyncio.ensure_future(anext(batches))
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        done, _ = await asyncio.wait(
            {first, gone}, timeout=STATUS_HOLD_S, return_when=asyncio.FIRST_COMPLETED
        )
    except BaseException:
        first.cancel()
        raise
    finally:
        gone.cancel()
    if gone in done and first not in done:
        first.cancel()
        return None
    return first


async def _answered(request: Request, started: Call) -> Task | None:
    """The call's ended task (:meth:`Call.until_end`), or ``None`` when the client closed
    its connection first: the run is cancelled then, as for a client that leaves a
    stream, rather than answer (and cost) for nobody."""
    ended = asyncio.ensure_future(started.until_end())
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({ended, gone}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        ended.cancel()  # until_end cancels the run
        raise
    finally:
        gone.cancel()
    if not ended.done():
        ended.cancel()
        await asyncio.wait({ended})
        return None
    return ended.result()


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _streamed(
    started: Call,
    stream: ReplyStream,
    first: asyncio.Future[list[StreamEvent]],
    batches: AsyncIterator[list[StreamEvent]],
) -> AsyncIterator[bytes]:
    """The run's gated deltas as they come (``first``, then the rest of ``batches``),
    then its tool calls, usage and finish (or its failure) from the task's end, through
    the dialect's stream. A client that goes away before the end cancels the run, as any
    caller that stops one."""
    ended = False
    try:
        if chunk := b"".join(stream.feed(event) for event in await first):
            yield chunk
        async for batch in batches:
            # The deltas the run queued while the client's last write went out leave in
            # one write: a stream that fell behind catches up in one send, not one each.
            if chunk := b"".join(stream.feed(event) for event in batch):
                yield chunk
        for event in closing_events(started):
            if chunk := stream.feed(event):
                yield chunk
        ended = True
        yield stream.close()
    finally:
        if not ended:
            started.bridge.daemon.runs.cancel(started.handle.run_id)
