"""A run's MCP servers started side by side, and offered before they are up when their
tool lists are known.

Every server of the run starts at once, each in a task of its own
(:class:`~thoughtline.tools.server_start.ServerStart`). Without a cache, or when one
server has no cached list, the run waits for all of them, as before, and each live list
is cached for the next run. When every server has a cached list
(:class:`~thoughtline.tools.list_cache.ToolListCache`), :meth:`ServerStarts.begin` returns
at once: the run's first model call goes out with the cached tools while the servers
start. Then:

- a tool called on a server that is still starting waits for it (bounded by the start
  timeout), and a server that failed to start answers the call with its start error;
- before a task acts on a step that went out with a cached list, it waits for the
  servers that list came from (:meth:`ServerStarts.confirm`): a server that did not start
  fails the task with the same error a start failure gives; a live list that differs
  from the cached one is written back and the step is redone with it
  (:mod:`~thoughtline.runtime.engine.task_call`).

Each start tells the run's listener when it begins and how it ended
(:data:`~thoughtline.tools.server_start.SERVER_START`), so a front end shows the servers
starting while the run waits for them, or goes on without them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from thoughtline.errors import ThoughtlineError
from thoughtline.tools.list_cache import ToolListCache
from thoughtline.tools.mcp_client import McpConnection, ToolInfo, ToolOutcome
from thoughtline.tools.notices import Listener
from thoughtline.tools.server_start import ServerStart
from thoughtline.tools.settings import McpServerSettings


class StartingServer:
    """A run's MCP server, offered with its cached list until its live one arrives; a
    call waits for the server to be up."""

    def __init__(
        self,
        start: ServerStart,
        cached: tuple[ToolInfo, ...] | None,
        release: Callable[[], None],
    ) -> None:
        self.start = start
        self.cached = cached
        self._release = release
        self._live: McpConnection | None = None

    @property
    def settings(self) -> McpServerSettings:
        return self.start.settings

    @property
    def tools(self) -> tuple[ToolInfo, ...]:
        """The live list once the server is up, the cached one until then."""
        if self._live is not None:
            return self._live.tools
        return self.cached or ()

    @property
    def confirmed(self) -> bool:
        """Its tools are the live list (the server is up), not a cached one."""
        return self._live is not None

    async def up(self) -> McpConnection:
        """The started connection (waiting for it), whose live list is offered from now
        on; raises the start's error."""
        self._release()
        self._live = await self.start.ready()
        return self._live

    async def call(
        self, name: str, arguments: Mapping[str, Any], *, timeout_s: float
    ) -> ToolOutcome:
        self._release()
        try:  # the list it is offered with stays as it is until a task confirms it
            connection = await self.start.ready()
        except ThoughtlineError as exc:  # the start's error, as the call's result
            return ToolOutcome(text=exc.message, is_error=True, error_code=exc.code)
        return await connection.call(name, arguments, timeout_s=timeout_s)


class ServerStarts:
    """The run's servers, all starting at once (:meth:`begin`), stopped by
    :meth:`aclose`."""

    def __init__(
        self,
        servers: Mapping[str, McpServerSettings],
        *,
        environ: Mapping[str, str],
        secrets: Collection[str],
        start_timeout_s: float,
        lists: ToolListCache | None = None,
        listener: Listener | None = None,
    ) -> None:
        self._settings = servers
        self._listener = listener
        self._environ = environ
        self._secrets = secrets
        self._start_timeout_s = start_timeout_s
        self._lists = lists
        self.servers: dict[str, StartingServer] = {}
        self._released = asyncio.Event()

    def release(self) -> None:
        """Let servers offered with cached lists start: the run's first model request is
        on its way (or one of them is wanted). Until then their start, which imports the
        MCP client and spawns processes, would hold up that request."""
        self._released.set()

    async def begin(self) -> None:
        """Start every server. Returns once all are up, or at once when every one has
        a cached list; raises what the first server that failed raised (every other is
        stopped first)."""
        lists = self._lists
        cached = {
            name: None if lists is None else lists.load(settings)
            for name, settings in self._settings.items()
        }
        warm = all(tools is not None for tools in cached.values())
        for name, settings in self._settings.items():
            start = ServerStart(
                settings,
                environ=self._environ,
                secrets=self._secrets,
                start_timeout_s=self._start_timeout_s,
                after=self._released if warm else None,
                listener=self._listener,
            )
            server = self.servers[name] = StartingServer(start, cached[name], self.release)
            if lists is not None:
                start.when_settled(self._learned(server, lists))
        if warm:
            return
        try:
            await self._all_up()
        except BaseException:
            await self.aclose()
            raise

    async def _all_up(self) -> None:
        waiting = {
            asyncio.ensure_future(server.up()): name for name, server in self.servers.items()
        }
        try:
            while waiting:
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_EXCEPTION)
                failed = sorted(
                    (waiting[future], future) for future in done if future.exception() is not None
                )
                if failed:
                    raise failed[0][1].exception()  # type: ignore[misc]
                for future in done:
                    del waiting[future]
        finally:
            for future in waiting:
                future.cancel()

    def pending(self, servers: Iterable[str]) -> list[StartingServer]:
        """Those of ``servers`` still offered with a cached list."""
        return [
            server
            for name in sorted(set(servers))
            if (server := self.servers.get(name)) is not None and not server.confirmed
        ]

    async def confirm(self, servers: Iterable[str]) -> bool:
        """Wait for ``servers`` (those offered from the cache) to be up; whether a live
        list differs from the cached one it was offered with. Raises the start error of
        the first one that did not start."""
        changed = False
        for server in self.pending(servers):
            changed |= (await server.up()).tools != server.cached
        return changed

    async def aclose(self) -> None:
        """Stop every server, started or still starting, side by side."""
        await asyncio.gather(*(server.start.aclose() for server in self.servers.values()))

    @staticmethod
    def _learned(server: StartingServer, lists: ToolListCache) -> Callable[[ServerStart], None]:
        def learned(start: ServerStart) -> None:
            if start.started:
                live = start.connection.tools
                if live != server.cached:
                    lists.store(start.settings, live)

        return learned
