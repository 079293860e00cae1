"""The HTTP connection pool and per-endpoint provider clients of one runtime, shared by
every run it executes.

Building an HTTP client costs tens of milliseconds (its TLS context most of all). Built
per run, a long-lived process (the daemon, the MCP server, the ACP agent) paid that on its
event loop for every run started, stalling every live stream meanwhile, and opened new
connections to the same provider each time. Here the pool is built once, off the event
loop, and reused: by concurrent runs always, and between runs while a long-lived owner
holds it (:meth:`SharedClients.hold`, which :class:`~thoughtline.runtime.engine.background.
RunManager` does). A one-shot process releases it when its last run ends.

A pool belongs to the event loop it was first used on; a runtime used from a new loop
(``thoughtline.run()`` called twice from a script) builds a new one there.

Calls are also counted per endpoint (:meth:`SharedClients.calling`): ``[providers.NAME]
max_concurrency`` bounds how many run at once across every run of the runtime (a local
server that serves one request at a time drops the stream it was serving when a second
request arrives), and a failed call learns whether another call to the same endpoint
overlapped it, so its error can name that likely cause.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx2

from thoughtline.providers.client import ProviderClient

__all__ = ["CallOverlap", "SharedClients"]


@dataclass(slots=True, eq=False)
class CallOverlap:
    """Whether another call to the same endpoint ran while this one did."""

    overlapped: bool = False


@dataclass(slots=True)
class _EndpointCalls:
    limit: asyncio.Semaphore | None
    active: set[CallOverlap] = field(default_factory=set)


class SharedClients:
    """The pool and the ``ProviderClient`` of each endpoint a runtime's runs call."""

    def __init__(
        self,
        *,
        build_http: Callable[[], httpx2.AsyncClient],
        build_client: Callable[[str, httpx2.AsyncClient], ProviderClient],
        limits: Mapping[str, int] | None = None,
    ) -> None:
        self._build_http = build_http
        self._build_client = build_client
        self._limits = dict(limits or {})
        self._calls: dict[str, _EndpointCalls] = {}
        self._http: httpx2.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: dict[str, ProviderClient] = {}
        self._users = 0
        self._held = False

    def hold(self) -> None:
        """Keep the pool open between runs, until :meth:`aclose` (long-lived owners)."""
        self._held = True

    async def acquire(self) -> None:
        """A run starts using the pool: build it (in a thread: the event loop keeps
        serving other runs meanwhile) unless this loop already has one."""
        self._users += 1
        loop = asyncio.get_running_loop()
        if self._http is not None and self._loop is loop:
            return
        # A pool of another (finished) loop cannot be closed from here; it is dropped.
        self._http, self._loop, self._clients, self._calls = None, loop, {}, {}
        try:
            http = await asyncio.to_thread(self._build_http)
        except BaseException:
            # A trust store or proxy that cannot be used (or a cancellation): this run
            # holds no pool, and the next one tries again.
            self._users -= 1
            raise
        if self._http is None and self._loop is loop:
            self._http = http
        else:  # another run on this loop built one meanwhile
            await http.aclose()

    async def release(self) -> None:
        """A run stopped using the pool; the last one closes it unless it is held."""
        self._users = max(0, self._users - 1)
        if self._users == 0 and not self._held:
            await self.aclose()

    def client_for(self, provider: str) -> ProviderClient:
        """The endpoint's client on the shared pool (:meth:`acquire` first)."""
        client = self._clients.get(provider)
        if client is None:
            if self._http is None:
                raise RuntimeError("SharedClients.client_for called before acquire()")
            client = self._clients[provider] = self._build_client(provider, self._http)
        return client

    @asynccontextmanager
    async def calling(self, provider: str) -> AsyncIterator[CallOverlap]:
        """Around one call to ``provider``: waits for a free slot when the endpoint's
        ``max_concurrency`` is set; the yielded :class:`CallOverlap` says, afterwards,
        whether another call to the endpoint ran at the same time."""
        calls = self._calls.get(provider)
        if calls is None:
            limit = self._limits.get(provider)
            calls = _EndpointCalls(None if limit is None else asyncio.Semaphore(limit))
            self._calls[provider] = calls
        if calls.limit is not None:
            await calls.limit.acquire()
        mine = CallOverlap()
        if calls.active:
            mine.overlapped = True
            for other in calls.active:
                other.overlapped = True
        calls.active.add(mine)
        try:
            yield mine
        finally:
            calls.active.discard(mine)
            if calls.limit is not None:
                calls.limit.release()

    async def aclose(self) -> None:
        """Close the pool (if it belongs to the running loop) and forget the clients."""
        http, loop = self._http, self._loop
        self._http, self._loop, self._clients = None, None, {}
        if http is not None and loop is asyncio.get_running_loop():
            await http.aclose()
