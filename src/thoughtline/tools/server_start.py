"""One MCP server starting in a task of its own, so that a run's servers start side by
side and a run can go on while they do.

The ``mcp`` client holds task-bound cancel scopes: a connection is entered and left in
one task. :class:`ServerStart` is that task: it enters the
:class:`~thoughtline.tools.mcp_client.McpConnection` (bounded by the connection's start
timeout), hands it over through :meth:`ready`, holds it open until :meth:`aclose`, and
leaves it there. A start that failed raises the same error from every :meth:`ready`.

A start tells a :data:`~thoughtline.tools.notices.Listener` when it begins, and when the
server is ready or failed, with how long that took (:data:`SERVER_START`): the run turns
these into its ``tool_server.start`` live events.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import Final

from thoughtline.errors import ThoughtlineError
from thoughtline.tools.mcp_client import DEFAULT_START_TIMEOUT_S, McpConnection
from thoughtline.tools.notices import Listener
from thoughtline.tools.settings import McpServerSettings

logger = logging.getLogger(__name__)

SERVER_START: Final = "tool.server_start"
"""A notice of a server's start: metadata ``server``, ``state`` (``starting``, ``ready``
or ``failed``) and, once it ended, ``duration_ms``, then ``tools`` (how many it lists)
or ``error`` (``{"code", "message"}``)."""


class StartClock:
    """Tells ``listener`` that ``settings``' server is starting, then (:meth:`ended`) that
    it is ready or failed, and how long that took. A listener that joins a start under
    way (:meth:`join`: another run waits for the same pooled server) is told so at once,
    with the time since the start began, and then its end too."""

    def __init__(self, settings: McpServerSettings, listener: Listener | None) -> None:
        self.server = settings.name
        self.listeners: list[Listener] = [] if listener is None else [listener]
        self.began = time.monotonic()
        self.error: ThoughtlineError | None = None
        """Why the start failed, once it did (what a listener that joined it raises)."""
        self._ended = False
        self._tell({"server": self.server, "state": "starting"})

    def join(self, listener: Listener) -> None:
        """Tell ``listener`` of this start: ``starting`` with ``duration_ms`` since it
        began, then how it ends (nothing when it has ended already)."""
        if self._ended:
            return
        self.listeners.append(listener)
        listener(
            SERVER_START, {"server": self.server, "state": "starting", "duration_ms": self._ms()}
        )

    def ended(self, connection: McpConnection | None, error: BaseException | None) -> None:
        self._ended = True
        notice: dict[str, object] = {
            "server": self.server,
            "state": "failed" if connection is None else "ready",
            "duration_ms": self._ms(),
        }
        if connection is not None:
            notice["tools"] = len(connection.tools)
        else:
            if not isinstance(error, ThoughtlineError):
                error = ThoughtlineError(
                    "TOOL_SERVER_UNAVAILABLE",
                    f"The MCP server {self.server} did not start ({type(error).__name__}).",
                )
            self.error = error
            notice["error"] = {"code": error.code, "message": error.message}
        self._tell(notice)

    def _ms(self) -> int:
        return round((time.monotonic() - self.began) * 1000)

    def _tell(self, metadata: dict[str, object]) -> None:
        for listener in self.listeners:
            # Each listener gets its own dict: a run may keep what it is told.
            listener(SERVER_START, dict(metadata))


class ServerStart:
    """``start = ServerStart(settings, ...)``; ``await start.ready()`` for the started
    connection (or the start's error); ``await start.aclose()`` stops it, started or
    not. ``after``: the start begins once that event is set (and the start timeout
    counts from then). ``listener``: told when the start begins and ends
    (:class:`StartClock`)."""

    def __init__(
        self,
        settings: McpServerSettings,
        *,
        environ: Mapping[str, str],
        secrets: Collection[str],
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
        after: asyncio.Event | None = None,
        listener: Listener | None = None,
    ) -> None:
        self.settings = settings
        self._after = after
        self._listener = listener
        self._connection = McpConnection(
            settings, environ=environ, secrets=secrets, start_timeout_s=start_timeout_s
        )
        loop = asyncio.get_running_loop()
        self._ready: asyncio.Future[McpConnection] = loop.create_future()
        self._ready.add_done_callback(_retrieved)
        self._stop = asyncio.Event()
        self._holder = asyncio.ensure_future(self._hold())

    @property
    def connection(self) -> McpConnection:
        """The connection (its :attr:`~McpConnection.tools` are live once :attr:`started`)."""
        return self._connection

    @property
    def started(self) -> bool:
        """The server is up (its list is :attr:`McpConnection.tools`)."""
        return self._ready.done() and not self._ready.cancelled() and not self._ready.exception()

    @property
    def settled(self) -> bool:
        """The start ended, one way or the other."""
        return self._ready.done()

    def when_settled(self, callback: Callable[[ServerStart], None]) -> None:
        """Call ``callback`` once the start ended (at once when it has)."""
        self._ready.add_done_callback(lambda _: callback(self))

    async def ready(self) -> McpConnection:
        """The started connection; raises what starting it raised
        (``TOOL_SERVER_UNAVAILABLE`` with the tail of its stderr, ``EXTRA_MISSING``, a
        ``ConfigError`` for a ``${VAR}`` that is not set). A cancelled caller does not
        cancel the start."""
        return await asyncio.shield(self._ready)

    async def aclose(self) -> None:
        """Stop the server, or its start (a cancelled caller does not stop the stopping)."""
        self._stop.set()
        if not self._ready.done():
            self._holder.cancel()
        await asyncio.shield(asyncio.gather(self._holder, return_exceptions=True))

    async def _hold(self) -> None:
        try:
            if self._after is not None:
                await self._after.wait()
            clock = StartClock(self.settings, self._listener)
            try:
                async with self._connection as connection:
                    self._ready.set_result(connection)
                    clock.ended(connection, None)
                    await self._stop.wait()
            except Exception as exc:
                if not self._ready.done():
                    clock.ended(None, exc)
                raise
        except asyncio.CancelledError:
            if not self._ready.done():
                self._ready.cancel()
            raise
        except Exception as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            else:  # the server was in use: its calls answer as errors on their own
                logger.warning("stopping the tool server %s failed: %s", self.settings.name, exc)


def _retrieved(future: asyncio.Future[McpConnection]) -> None:
    # A start nobody waited for (the run ended first) must not log "never retrieved".
    if not future.cancelled():
        future.exception()
