"""The gateway's HTTP paths on the daemon: ``/openai/v1`` (``GET /models``,
``POST /chat/completions``) and ``/anthropic``; each answers in its client API's shapes,
errors included (thoughtline's code inside).

The daemon's own guards apply as to every path (``Host`` allow-list, cross-site
refusals, the body cap, ``max_active_runs``); the daemon's bearer token does not: a
gateway path takes a client token (:mod:`.clients`), and a daemon whose config does not
turn the gateway on answers ``GATEWAY_DISABLED`` (404).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from thoughtline.config.gateway import GatewayClient, GatewaySettings
from thoughtline.gateway.dialects import chat_completions
from thoughtline.gateway.dialects._common import DialectError, Rendering
from thoughtline.server.daemon import body_limit
from thoughtline.server.gateway.bridge import Bridge, Call
from thoughtline.server.gateway.clients import find_client, given_token
from thoughtline.server.gateway.failure import GatewayFailure
from thoughtline.server.gateway.live import closing_events, live_events
from thoughtline.server.gateway.routing import listed, route

router = APIRouter(include_in_schema=False)

ErrorRender = Callable[..., tuple[int, dict[str, Any]]]


def _openai_error(failure: GatewayFailure) -> Response:
    status, body = chat_completions.error_response(
        failure.code,
        failure.message,
        status=failure.status,
    )
    return JSONResponse(body, status_code=status, headers=failure.headers)


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
        return _openai_error(failure)
    data = [
        {"id": name, "object": "model", "created": 0, "owned_by": name.split("/", 1)[0]}
        for name in listed(bridge.settings, client)
    ]
    return JSONResponse({"object": "list", "data": data})


@router.post("/openai/v1/chat/completions")
async def openai_chat_completions(request: Request) -> Response:
    try:
        bridge = _bridge(request)
        client = _client(request, bridge.settings)
        raw = await request.body()
        limit = body_limit(bridge.daemon.runtime.config.max_request_bytes)
        try:
            call = chat_completions.parse(raw, max_bytes=limit)
        except DialectError as exc:
            status, body = chat_completions.error_response(
                exc.code, exc.message, status=exc.status, param=exc.param
            )
            return JSONResponse(body, status_code=status)
        started = await bridge.start(client, call, route(bridge.settings, client, call.model))
    except GatewayFailure as failure:
        return _openai_error(failure)
    rendering = Rendering(shows_reasoning=started.shows_reasoning)
    if not call.stream:
        try:
            task = await started.until_end()
        except GatewayFailure as failure:
            return _openai_error(failure)
        assert task.reply is not None
        body = chat_completions.render(call, rendering, task.reply)
        return JSONResponse(body, headers=started.headers)
    stream = chat_completions.ChatCompletionsStream(call, rendering)
    return StreamingResponse(
        _streamed(started, stream.feed, stream.close),
        media_type="text/event-stream",
        headers={**started.headers, "Cache-Control": "no-cache"},
    )


async def _streamed(
    started: Call, feed: Callable[[Any], bytes], close: Callable[[], bytes]
) -> AsyncIterator[bytes]:
    """The run's gated deltas as they come, then its tool calls, usage and finish (or
    its failure) from the task's end, through the dialect's stream."""
    try:
        async for event in live_events(started):
            if chunk := feed(event):
                yield chunk
        for event in closing_events(started):
            if chunk := feed(event):
                yield chunk
        yield close()
    except asyncio.CancelledError:
        # The client went away: the run is cancelled like any run a caller stops.
        started.bridge.daemon.runs.cancel(started.handle.run_id)
        raise
