"""The MCP servers one run's tasks may call: started once for the run, stopped with it.

A run that names tools starts each server it needs when it begins executing, and stops
them all when it ends, fails or is cancelled: a server never outlives its run. The
servers' environment holds none of the credential values the runtime loaded
(:mod:`thoughtline.tools.environment`).

The model sees each tool under a name every wire API accepts (``^[a-zA-Z0-9_-]{1,64}$``):
``SERVER.TOOL`` becomes ``SERVER__TOOL`` with other characters replaced, cut to 64, and
made unique. :meth:`Toolbox.offer` gives a task its tools under those names, and
:class:`TaskTools` maps a name back to the server and tool.

The servers start side by side, each in a task of its own (the ``mcp`` client holds
task-bound cancel scopes), and with a tool list cache the run goes on with their cached
lists while they start (:mod:`~thoughtline.runtime.planning.tool_starts`):
:class:`StartedTools` holds them open in a task of its own, so a front end can start
them, check a run's tool names against what they list before the run is stored, and hand
them to the run, which stops them when it ends. Servers ``pooled`` are taken from a
:class:`~thoughtline.tools.pool.ServerPool` instead (the daemon's, an ACP session's),
leased beside those that start: open already when another run used them, and given back,
still open, when the run ends. Python callables given through the library API
(:mod:`thoughtline.tools.python_tools`) are one more server, ``python``, with nothing to
start.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Protocol

from thoughtline.errors import ThoughtlineError
from thoughtline.model.requests import ToolSpec
from thoughtline.records import now_iso
from thoughtline.records.run_events import ToolServerStart, tool_server_start
from thoughtline.runtime.planning.tool_starts import ServerStarts, StartingServer
from thoughtline.tools.list_cache import ToolListCache
from thoughtline.tools.listing import ServerListing
from thoughtline.tools.mcp_client import DEFAULT_START_TIMEOUT_S, ToolInfo, ToolOutcome
from thoughtline.tools.notices import HeldNotices, Listener
from thoughtline.tools.pool import PooledServer, ServerPool
from thoughtline.tools.server_start import SERVER_START
from thoughtline.tools.settings import McpServerSettings
from thoughtline.tools.specs import parse_tool_spec

logger = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_NAME_LIMIT: Final = 64


class ToolServer(Protocol):
    """A started server, as the loop calls it: an MCP connection, or the run's Python
    callables."""

    @property
    def settings(self) -> McpServerSettings: ...

    @property
    def tools(self) -> tuple[ToolInfo, ...]: ...

    async def call(
        self, name: str, arguments: Mapping[str, Any], *, timeout_s: float
    ) -> ToolOutcome: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class OfferedTool:
    """A tool as one task may call it: the name the model sees, the tool, whether its
    server lets it run (a destructive tool runs only with ``allow_destructive``), and
    whether each call ``asks`` the run's approver first (a destructive tool, when the run
    has one: :mod:`~thoughtline.runtime.planning.run_tools`)."""

    wire_name: str
    tool: ToolInfo
    runs: bool
    asks: bool = False


class TaskTools:
    """The tools one task may call, by the names the model sees."""

    __slots__ = ("_by_name", "specs")

    def __init__(self, offered: Iterable[OfferedTool]) -> None:
        self._by_name = {tool.wire_name: tool for tool in offered}
        self.specs: tuple[ToolSpec, ...] = tuple(
            ToolSpec(
                name=tool.wire_name,
                description=tool.tool.description,
                parameters=tool.tool.input_schema or {"type": "object", "properties": {}},
            )
            for tool in self._by_name.values()
        )

    def __bool__(self) -> bool:
        return bool(self._by_name)

    def get(self, wire_name: str) -> OfferedTool | None:
        """The tool the model called by ``wire_name``, or ``None`` when the task has none
        of that name."""
        return self._by_name.get(wire_name)


class Toolbox:
    """``async with Toolbox(servers, ...) as toolbox:`` starts the named servers side by
    side; then :meth:`offer` per task, and :meth:`connection` to call a tool. With
    ``lists`` (the tool list cache), it is entered at once when every server has a
    cached list: :meth:`pending` and :meth:`confirm` then tell a task when the lists it
    was offered are live."""

    def __init__(
        self,
        servers: Mapping[str, McpServerSettings],
        *,
        environ: Mapping[str, str],
        secrets: Collection[str],
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
        python: ToolServer | None = None,
        lists: ToolListCache | None = None,
        pool: ServerPool | None = None,
        pooled: Collection[str] = (),
    ) -> None:
        self._servers = servers
        self._pool = pool
        leased = set(pooled) if pool is not None else set()
        self._leased = {name: servers[name] for name in servers if name in leased}
        self._stack = AsyncExitStack()
        self._python = python
        self._notices = HeldNotices()
        self._starts = ServerStarts(
            {name: settings for name, settings in servers.items() if name not in self._leased},
            environ=environ,
            secrets=secrets,
            start_timeout_s=start_timeout_s,
            lists=lists,
            listener=self._notices,
        )
        self._connections: dict[str, ToolServer] = {}
        self._wire_names: dict[tuple[str, str], str] = {}

    async def __aenter__(self) -> Toolbox:
        leasing = [self._lease(name, settings) for name, settings in self._leased.items()]
        try:
            outcomes = await asyncio.gather(self._starts.begin(), *leasing, return_exceptions=True)
            failed = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
            if failed:
                raise failed[0]
        except BaseException:  # the servers started, or leased, stop or go back with it
            await self.__aexit__(None, None, None)
            raise
        leases = self._connections
        self._connections = {  # in the run's order, which the model's tool names follow
            name: leases.get(name) or self._starts.servers[name] for name in self._servers
        }
        if self._python is not None:
            self._connections[self._python.settings.name] = self._python
        self._name_tools()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            await self._starts.aclose()
        finally:
            await self._stack.aclose()  # the leased servers go back to the pool

    async def _lease(self, name: str, settings: McpServerSettings) -> None:
        assert self._pool is not None
        lease = await self._pool.lease(settings, listener=self._notices)
        self._stack.push_async_callback(lease.release)
        self._connections[name] = lease

    def release(self) -> None:
        """The run's first model request is on its way: servers offered with cached lists
        start now (:meth:`ServerStarts.release`)."""
        self._starts.release()

    def pending(self, specs: Iterable[str]) -> bool:
        """Whether a server ``specs`` name is still offered with its cached list."""
        return bool(self._starts.pending(parse_tool_spec(spec).server for spec in specs))

    async def confirm(self, specs: Iterable[str]) -> None:
        """Wait for the servers ``specs`` name that are offered with a cached list (the
        names the model sees are made again when a live list differs). Raises the start
        error of one that did not start (``TOOL_SERVER_UNAVAILABLE``)."""
        if await self._starts.confirm(parse_tool_spec(spec).server for spec in specs):
            self._name_tools()

    def connection(self, server: str) -> ToolServer:
        """The started server ``server``."""
        return self._connections[server]

    def listen(self, listener: Listener) -> None:
        """Send the servers' notices to ``listener``, those given before first: each
        start's (:data:`~thoughtline.tools.server_start.SERVER_START`), and a pooled
        server's started again after it ended
        (:data:`~thoughtline.tools.pool.SERVER_RESTARTED`)."""
        self._notices.listen(listener)

    def offer(self, specs: Iterable[str], *, asks: bool = False) -> TaskTools:
        """The tools ``specs`` name (``SERVER`` or ``SERVER.TOOL``), as one task sees them.

        A whole server offers the tools its ``allow`` lets through, its destructive ones
        only with ``allow_destructive``; a tool named on its own is offered unless
        ``allow`` leaves it out, and a destructive one is refused when called. A tool the
        server does not list is ``TOOL_NOT_FOUND``; one ``allow`` leaves out,
        ``TOOL_NOT_ALLOWED``. When the run ``asks`` an approver, ``allow_destructive`` is
        not read: destructive tools are offered, and each call to one asks first."""
        offered: dict[str, OfferedTool] = {}
        for spec in specs:
            named = parse_tool_spec(spec)
            connection = self._connections[named.server]
            listing = ServerListing(settings=connection.settings, tools=connection.tools)
            settings = connection.settings
            if named.tool is None:
                chosen = [
                    tool
                    for tool in connection.tools
                    if listing.allows(tool)
                    or (asks and (settings.allow is None or tool.name in settings.allow))
                ]
            else:
                found = [tool for tool in connection.tools if tool.name == named.tool]
                if not found:
                    listed = ", ".join(tool.name for tool in connection.tools) or "none"
                    raise ThoughtlineError(
                        "TOOL_NOT_FOUND",
                        f"The {_kind(connection)} {named.server} has no tool {named.tool!r} "
                        f"(it lists: {listed}).",
                    )
                if settings.allow is not None and named.tool not in settings.allow:
                    raise ThoughtlineError(
                        "TOOL_NOT_ALLOWED",
                        f"The tool {spec!r} is not in [mcp_servers.{named.server}] allow "
                        f"({settings.source}).",
                    )
                chosen = found
            for tool in chosen:
                wire_name = self._wire_names[(tool.server, tool.name)]
                offered[wire_name] = OfferedTool(
                    wire_name=wire_name,
                    tool=tool,
                    runs=asks or settings.allow_destructive or not tool.destructive,
                    asks=asks and tool.destructive,
                )
        return TaskTools(offered.values())

    def _name_tools(self) -> None:
        self._wire_names.clear()
        taken: set[str] = set()
        for connection in self._connections.values():
            for tool in connection.tools:
                name = wire_name(tool.server, tool.name, taken)
                taken.add(name)
                self._wire_names[(tool.server, tool.name)] = name


def _kind(server: ToolServer) -> str:
    return "MCP server" if isinstance(server, StartingServer | PooledServer) else "tool server"


def wire_name(server: str, tool: str, taken: Collection[str]) -> str:
    """``SERVER__TOOL`` as every wire API accepts a tool name, unique among ``taken``."""
    base = _UNSAFE.sub("_", f"{server}__{tool}")[:_NAME_LIMIT]
    name, number = base, 1
    while name in taken:
        number += 1
        suffix = f"_{number}"
        name = base[: _NAME_LIMIT - len(suffix)] + suffix
    return name


class StartedTools:
    """A run's started servers (:meth:`start`), held open by a task of their own until
    :meth:`aclose`: they can be started before the run exists and handed to it. (What a
    front end adds to a run, servers, callables and an approver, is
    :class:`~thoughtline.runtime.planning.run_tools.RunTools`.)

    Until the run takes them over (:meth:`hand_over`), each server's start is a
    ``tool_server.start`` event of the run, numbered from 1 (:attr:`early`) and told to
    ``observer`` at once: a front end shows the servers starting before the run is
    stored. The run then tells them first, and numbers the next ones itself."""

    def __init__(
        self,
        toolbox: Toolbox,
        *,
        run_id: str,
        observer: Callable[[ToolServerStart], None] | None = None,
    ) -> None:
        self.toolbox = toolbox
        self.run_id = run_id
        self.observer = observer
        self.early: list[ToolServerStart] = []
        """The start events so far, numbered from 1, before the run took them over."""
        self._notices: list[tuple[str, dict[str, object]]] = []
        self._stop = asyncio.Event()
        self._holder: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls,
        toolbox: Toolbox,
        *,
        run_id: str,
        observer: Callable[[ToolServerStart], None] | None = None,
        listener: Listener | None = None,
    ) -> StartedTools:
        """Start ``toolbox``'s servers; raises what starting one raised (every server
        already started is stopped first). ``listener``: the run executing already, which
        hears the servers' notices itself (as after :meth:`hand_over`)."""
        tools = cls(toolbox, run_id=run_id, observer=observer)
        toolbox.listen(listener or tools._before_run)
        ready = asyncio.get_running_loop().create_future()
        holder = tools._holder = asyncio.ensure_future(tools._hold(ready))
        try:
            await asyncio.shield(ready)
        except BaseException:
            holder.cancel()
            await asyncio.gather(holder, return_exceptions=True)
            raise
        return tools

    def check(self, tasks: Iterable[tuple[str, Iterable[str]]], *, asks: bool = False) -> None:
        """Raise ``TOOL_NOT_FOUND`` or ``TOOL_NOT_ALLOWED`` for the first tool of
        ``(task name, tool names)`` the started servers (and the run's Python callables)
        do not offer; ``asks``: the run has an approver (:meth:`Toolbox.offer`)."""
        for task, specs in tasks:
            try:
                self.toolbox.offer(specs, asks=asks)
            except ThoughtlineError as exc:
                raise ThoughtlineError(exc.code, f"Task {task}: {exc.message}") from None

    def hand_over(self, listener: Listener) -> list[ToolServerStart]:
        """The run takes the servers over: the start events numbered so far (1 to n, for
        it to tell first and go on from), and every notice from now on (those held
        first) goes to ``listener``."""
        early, self.early = self.early, []
        held, self._notices = self._notices, []
        for kind, metadata in held:
            listener(kind, metadata)
        self.toolbox.listen(listener)
        return early

    def _before_run(self, kind: str, metadata: dict[str, object]) -> None:
        if kind != SERVER_START:
            self._notices.append((kind, metadata))
            return
        event = tool_server_start(
            metadata, run_id=self.run_id, seq=len(self.early) + 1, at=now_iso()
        )
        self.early.append(event)
        if self.observer is not None:
            self.observer(event)

    async def aclose(self) -> None:
        """Stop the servers (a cancelled caller does not stop the stopping)."""
        holder = self._holder
        if holder is None:
            return
        self._stop.set()
        await asyncio.shield(asyncio.gather(holder, return_exceptions=True))

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        try:
            async with self.toolbox:
                ready.set_result(None)
                await self._stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:  # the servers were in use: their calls answer as errors on their own
                logger.warning("stopping the run's tool servers failed: %s", exc)
