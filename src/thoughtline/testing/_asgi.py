"""ASGI plumbing for the simulator's app: reading a request body, starting a response,
plain JSON answers, holding a response open, and the lifespan protocol."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any, TypeAlias

Scope: TypeAlias = MutableMapping[str, Any]
Message: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[Message]]
Send: TypeAlias = Callable[[Message], Awaitable[None]]


async def hold_open(
    send: Send, receive: Receive, keep_alive: bytes | None, *, interval_s: float, max_s: float
) -> None:
    """Keep the response open, sending ``keep_alive`` every ``interval_s`` (or nothing),
    until the client disconnects or ``max_s`` has passed; then end the body unfinished
    as far as the protocol is concerned."""
    loop = asyncio.get_running_loop()
    gone = asyncio.ensure_future(until_disconnected(receive))
    ends = loop.time() + max_s
    try:
        while not gone.done() and loop.time() < ends:
            if keep_alive is not None:
                await send({"type": "http.response.body", "body": keep_alive, "more_body": True})
            await asyncio.wait({gone}, timeout=min(interval_s, max(ends - loop.time(), 0.0)))
        if not gone.done():
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        gone.cancel()


async def until_disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def start_stream(send: Send, content_type: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"cache-control", b"no-cache"),
            ],
        }
    )


async def read_body(receive: Receive) -> bytes:
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


async def plain(
    send: Send, status: int, body: bytes, headers: Mapping[str, str] | None = None
) -> None:
    raw_headers = [(b"content-type", b"application/json")]
    raw_headers += [(key.encode(), value.encode()) for key, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
