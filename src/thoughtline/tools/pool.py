"""MCP server sessions kept open across runs: the daemon's configured servers, an ACP
session's servers.

A :class:`ServerPool` holds one session per server *definition* (its name, command, args,
environment, working directory, URL and headers, as written): runs naming the same
server share it, and a different ``env`` or ``args`` is another session. A run takes a
:meth:`~ServerPool.lease` on each server it uses and gives it back when it ends; the
lease is what the run calls (:class:`PooledServer`, the runtime's ``ToolServer``).

- **Concurrent calls.** Every run's calls go over the one session at once: MCP requests
  carry ids, and the ``mcp`` client matches each answer to its request, so a slow call
  holds up no other. A server that handles one request at a time answers them in turn.
- **Death.** A stdio server's output ending (it exited) or a call finding the connection
  gone marks the session ended (:attr:`McpConnection.ended`); its process is stopped at
  once. Before each lease and call the kernel is asked whether the server is still there
  (:meth:`McpConnection.settle`), so a server killed a moment earlier is started again
  rather than sent a call no one will read. The next lease or call starts it again, and the lease that did so tells its run
  (a :data:`SERVER_RESTARTED` notice, which the run writes to its trace; and, as every
  start of a session does, :data:`~thoughtline.tools.server_start.SERVER_START` notices,
  which the run tells live). A lease that comes while a start is under way waits for
  it and gets that start's notices too, its ``starting`` with the time since it began. A call that
  was in flight when the server died ends as before: ``TOOL_SERVER_UNAVAILABLE``, back
  to the model; nothing waits for an answer that cannot come.
- **Its stderr.** What a server writes to stderr goes to a file (its tail ends up in
  a failure's message); before each call the file is cut to its tail once over 1 MiB.
- **Idle.** A session no lease holds for ``[mcp_servers.NAME] idle_s`` seconds (default
  :data:`~thoughtline.tools.settings.DEFAULT_IDLE_S`) is closed; the next lease starts
  it again (no notice: nothing died).
- **Close.** :meth:`ServerPool.aclose` stops every session (stdin closed, then SIGTERM,
  then SIGKILL to its group, as any server stops); a lease asked for afterwards is
  refused.

Each session is entered and left in a task of its own (the ``mcp`` client holds
task-bound cancel scopes), so any task may start it and any other close it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Mapping
from typing import Any, Final, TypeAlias

from thoughtline.errors import ThoughtlineError
from thoughtline.tools.mcp_client import (
    DEFAULT_START_TIMEOUT_S,
    McpConnection,
    ToolInfo,
    ToolOutcome,
)
from thoughtline.tools.notices import HeldNotices, Listener
from thoughtline.tools.server_start import StartClock
from thoughtline.tools.settings import McpServerSettings

logger = logging.getLogger(__name__)

SERVER_RESTARTED: Final = "tool.server_restarted"
"""The notice a run gets when it started again a pooled server that had ended: metadata
``server`` and ``reason`` (why the earlier session ended)."""

Definition: TypeAlias = tuple[object, ...]


def definition(settings: McpServerSettings) -> Definition:
    """What makes two servers one: everything that shapes the process or the connection
    (not ``allow`` or ``allow_destructive``, which only filter what a run is offered)."""
    return (
        settings.name,
        settings.command,
        settings.args,
        tuple(sorted(settings.env.items())),
        settings.cwd,
        settings.url,
        tuple(sorted(settings.headers.items())),
        settings.literal,
    )


class ServerPool:
    """``lease = await pool.lease(settings)`` then ``lease.call(...)`` and
    ``await lease.release()``; ``await pool.aclose()`` stops every session.

    ``environ`` and ``secrets`` are as for :class:`McpConnection`: a server's environment
    holds none of the credential values loaded."""

    def __init__(
        self,
        *,
        environ: Mapping[str, str],
        secrets: Collection[str] = (),
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
    ) -> None:
        self._environ = environ
        self._secrets = secrets
        self._start_timeout_s = start_timeout_s
        self._sessions: dict[Definition, _Session] = {}
        self._closed = False

    async def lease(
        self, settings: McpServerSettings, *, listener: Listener | None = None
    ) -> PooledServer:
        """The server ``settings`` defines, started when no session of it is open (raises
        ``TOOL_SERVER_UNAVAILABLE`` as starting any server does). Give it back with
        :meth:`PooledServer.release`. ``listener`` hears the lease's notices from the
        first (its start's too, when it starts the session)."""
        if self._closed:
            raise ThoughtlineError(
                "TOOL_SERVER_UNAVAILABLE",
                f"The MCP server {settings.name} was not started: the process is shutting down.",
            )
        key = definition(settings)
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = _Session(self, settings)
        lease = PooledServer(session, settings)
        if listener is not None:
            lease.listen(listener)
        session.hold()
        try:
            lease.tools = (await session.connection(lease)).tools
        except BaseException:
            session.let_go()
            raise
        return lease

    @property
    def closed(self) -> bool:
        return self._closed

    async def aclose(self) -> None:
        """Stop every session (idempotent); later leases are refused."""
        self._closed = True
        sessions = list(self._sessions.values())
        self._sessions.clear()
        await asyncio.gather(*(session.close() for session in sessions), return_exceptions=True)

    def _connect(self, settings: McpServerSettings) -> McpConnection:
        return McpConnection(
            settings,
            environ=self._environ,
            secrets=self._secrets,
            start_timeout_s=self._start_timeout_s,
        )


class PooledServer:
    """One run's hold on a pooled session: what the run calls (``settings``, ``tools``,
    :meth:`call`), and the notices it gets (:meth:`listen`)."""

    def __init__(self, session: _Session, settings: McpServerSettings) -> None:
        self._session = session
        self.settings = settings
        self.tools: tuple[ToolInfo, ...] = ()
        """What the server listed when the run took it: the run's view for its life (a
        tool a server started again no longer lists is ``TOOL_NOT_FOUND`` when called)."""
        self._notices = HeldNotices()
        self._released = False

    def listen(self, listener: Listener) -> None:
        """Send this lease's notices to ``listener``, those already given first."""
        self._notices.listen(listener)

    def notice(self, kind: str, metadata: dict[str, object]) -> None:
        self._notices(kind, metadata)

    async def call(
        self, name: str, arguments: Mapping[str, Any], *, timeout_s: float
    ) -> ToolOutcome:
        """Call ``name`` on the session, started again first when it ended; never raises
        for what the server did."""
        try:
            connection = await self._session.connection(self)
        except ThoughtlineError as exc:
            return ToolOutcome(text=exc.message, is_error=True, error_code=exc.code)
        connection.trim_stderr()
        return await connection.call(name, arguments, timeout_s=timeout_s)

    async def release(self) -> None:
        """Give the session back (idempotent): it stays open for the next run."""
        if not self._released:
            self._released = True
            self._session.let_go()


class _Session:
    """One definition's session: started on first use, started again after it ended,
    closed when idle or with the pool."""

    def __init__(self, pool: ServerPool, settings: McpServerSettings) -> None:
        self.pool = pool
        self.settings = settings
        self._current: McpConnection | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._starting = asyncio.Lock()
        self._clock: StartClock | None = None
        """The start under way, which a lease arriving meanwhile joins."""
        self._leases = 0
        self._idle: asyncio.TimerHandle | None = None
        self._closing: asyncio.Task[None] | None = None

    def hold(self) -> None:
        self._leases += 1
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def let_go(self) -> None:
        self._leases -= 1
        if self._leases == 0 and self._holder is not None:
            loop = asyncio.get_running_loop()
            self._idle = loop.call_later(self.settings.idle_s, self._close_idle)

    async def connection(self, lease: PooledServer) -> McpConnection:
        """The open connection; started (again) when there is none or it ended, telling
        ``lease`` when an earlier one had ended. A lease that finds a start under way
        waits for it, told of it as of its own start (when it began, how it ended), and
        raises its error when it failed."""
        current = self._current
        if current is not None:
            await current.settle()
            if not current.ended.is_set():
                return current
        joined = self._clock
        if joined is not None:
            joined.join(lease.notice)
        async with self._starting:
            current = self._current
            if current is not None and not current.ended.is_set():
                return current
            if joined is not None and joined.error is not None:
                raise joined.error  # the start it waited for failed: not one of its own
            if self.pool.closed:
                raise ThoughtlineError(
                    "TOOL_SERVER_UNAVAILABLE",
                    f"The MCP server {self.settings.name} was stopped: the process is "
                    "shutting down.",
                )
            ended = None if current is None else current.end_reason
            await self._stop_holder()
            if self._closing is not None:  # closed for idleness: let that finish first
                await asyncio.shield(self._closing)
            clock = self._clock = StartClock(self.settings, lease.notice)
            try:
                started = await self._start()
            except Exception as exc:
                clock.ended(None, exc)
                raise
            finally:
                self._clock = None
            clock.ended(started, None)
            if ended is not None:
                logger.info("MCP server %s started again: %s", self.settings.name, ended)
                lease.notice(SERVER_RESTARTED, {"server": self.settings.name, "reason": ended})
            return started

    async def _start(self) -> McpConnection:
        connection = self.pool._connect(self.settings)
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        holder = asyncio.ensure_future(self._hold(connection, ready, stop))
        try:
            await asyncio.shield(ready)
        except BaseException:
            holder.cancel()
            await asyncio.gather(holder, return_exceptions=True)
            raise
        self._current, self._holder, self._stop = connection, holder, stop
        return connection

    @staticmethod
    async def _hold(
        connection: McpConnection, ready: asyncio.Future[None], stop: asyncio.Event
    ) -> None:
        """Enter the connection, and leave it when asked or as soon as it ended (a dead
        server's process and files are let go at once, not at the next call)."""
        try:
            async with connection:
                ready.set_result(None)
                stopping = asyncio.ensure_future(stop.wait())
                ending = asyncio.ensure_future(connection.ended.wait())
                try:
                    await asyncio.wait((stopping, ending), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stopping.cancel()
                    ending.cancel()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                logger.warning("stopping MCP server %s failed: %s", connection.settings.name, exc)

    async def _stop_holder(self) -> None:
        holder, stop = self._holder, self._stop
        self._holder = self._stop = None
        if holder is None or stop is None:
            return
        stop.set()
        await asyncio.shield(asyncio.gather(holder, return_exceptions=True))

    def _close_idle(self) -> None:
        self._idle = None
        if self._leases == 0 and self._holder is not None and self._closing is None:
            logger.info(
                "MCP server %s stopped after %g s unused", self.settings.name, self.settings.idle_s
            )
            self._current = None
            self._closing = asyncio.ensure_future(self._stop_holder())
            self._closing.add_done_callback(self._closed)

    def _closed(self, _task: asyncio.Task[None]) -> None:
        self._closing = None

    async def close(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        self._current = None
        closing = self._closing
        await self._stop_holder()
        if closing is not None:
            await asyncio.shield(closing)
