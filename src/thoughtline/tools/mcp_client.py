"""A connection to one MCP server, through the official ``mcp`` client: start it (stdio)
or reach it (Streamable HTTP), list its tools, call one, stop it.

Every way a server can fail ends in one sentence with a stable code, never a traceback:
a server that does not start, dies or cannot be reached (``TOOL_SERVER_UNAVAILABLE``, with
the tail of what it wrote to stderr), one that does not answer in time (``TOOL_TIMEOUT``),
a tool it does not list (``TOOL_NOT_FOUND``). A tool's own failure (``isError``) is a
result, not an exception: the model is told, and the loop goes on. So is a JSON-RPC error
a live server answers a call with, or a result that is not a tool result
(``TOOL_CALL_FAILED``, with the server's code and its message, cut and on one line): the
connection stays, and the next call goes through.
Results are cut at ``max_result_chars`` and marked so.

A stdio server lives exactly as long as the ``async with`` block: the client stops it
(stdin closed, then SIGTERM, then SIGKILL) when the block ends or is cancelled, and when
its start is cancelled. The process starts before the client's modules load, which load
in a thread meanwhile (:mod:`thoughtline.tools.stdio_spawn`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Collection, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Final

from thoughtline.errors import ThoughtlineError
from thoughtline.providers.redaction import Redactor, shown_url
from thoughtline.tools.environment import server_environment, server_headers
from thoughtline.tools.settings import McpServerSettings

if TYPE_CHECKING:
    from thoughtline.tools.stdio_spawn import SpawnedServer

logger = logging.getLogger(__name__)

DEFAULT_START_TIMEOUT_S: Final = 30.0
DEFAULT_MAX_RESULT_CHARS: Final = 100_000
_STDERR_TAIL_CHARS: Final = 2_000
STDERR_KEEP_BYTES: Final = 1024 * 1024
"""What :meth:`McpConnection.trim_stderr` lets a server's stderr file grow to."""
_SERVER_MESSAGE_CHARS: Final = 500
"""How much of the message of a JSON-RPC error a server answers with is kept."""
_CONTROLS: Final = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONNECTION_CLOSED: Final = -32000
"""The code the ``mcp`` SDK (like MCP's other SDKs) gives a request whose connection
ended before its answer came: the server is gone, not answering."""
_SETTLE_S: Final = 1.0
"""How long :meth:`McpConnection.settle` lets the reader get to the end of a gone
server's output."""
_MIN_MESSAGE_BYTES: Final = 4 * 1024 * 1024
"""The least of a stdio server's message kept: a longer answer is cut as it is read
(:mod:`thoughtline.tools.stdio_transport`), 16 bytes per result character allowed above."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInfo:
    """One tool a server lists. ``destructive`` is what its annotations say
    (``destructiveHint`` on a tool not marked read-only); a tool without annotations is
    not called destructive."""

    server: str
    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    read_only: bool = False
    destructive: bool = False

    @property
    def spec(self) -> str:
        """``SERVER.TOOL``, as ``--tool`` and ``[roles.NAME] tools`` name it."""
        return f"{self.server}.{self.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutcome:
    """What one call returned: ``text`` for the model (cut to the limit when
    ``truncated``), ``is_error`` when the tool failed, and ``error_code`` when it could
    not be called at all (``TOOL_TIMEOUT``, ``TOOL_NOT_FOUND``, ``TOOL_SERVER_UNAVAILABLE``)
    or its server answered the call with a JSON-RPC error or a result that is not a tool
    result (``TOOL_CALL_FAILED``)."""

    text: str
    is_error: bool = False
    truncated: bool = False
    error_code: str | None = None


class McpConnection:
    """``async with McpConnection(settings, environ=..., secrets=...) as server:`` then
    ``server.tools`` and ``await server.call(name, arguments)``.

    ``secrets`` are the credential values thoughtline loaded: a stdio server's
    environment and an HTTP server's headers may hold none of them (see
    :mod:`thoughtline.tools.environment`)."""

    def __init__(
        self,
        settings: McpServerSettings,
        *,
        environ: Mapping[str, str],
        secrets: Collection[str] = (),
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        self.settings = settings
        self._environ = environ
        self._secrets = secrets
        self._start_timeout_s = start_timeout_s
        self._max_result_chars = max_result_chars
        self._stack = AsyncExitStack()
        self._stderr: IO[str] | None = None
        self._spawned: SpawnedServer | None = None
        self._client: Any = None
        self.tools: tuple[ToolInfo, ...] = ()
        self.ended = asyncio.Event()
        """Set once the connection is known to have ended: a stdio server's output ended
        (it exited), or a call found the connection gone. A session kept open across runs
        (:mod:`thoughtline.tools.pool`) is started again after it."""
        self.end_reason = ""
        """Why it ended, in a few words, once :attr:`ended` is set."""

    async def settle(self) -> None:
        """Set :attr:`ended` now when a stdio server is already gone though its output's
        end has not been read yet: a server killed a moment before a call is started
        again for it (:mod:`thoughtline.tools.pool`) rather than sent a request no one
        will read. What it wrote before it went is read first (an answer to a call in
        flight), within :data:`_SETTLE_S`."""
        spawned = self._spawned
        if self.ended.is_set() or spawned is None or not spawned.hung_up():
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_SETTLE_S):
                await self.ended.wait()
        self._end("it exited")

    async def __aenter__(self) -> McpConnection:
        settings = self.settings
        # Checked before anything starts: a ${VAR} not set, a provider key handed over.
        environment = (
            server_environment(settings, self._environ, self._secrets)
            if settings.command is not None
            else server_headers(settings, self._environ, self._secrets)
        )
        error: ThoughtlineError | None = None
        try:
            async with asyncio.timeout(self._start_timeout_s):
                # A stdio server starts first; the client's modules, which take half a
                # second to import, load in a thread meanwhile (and the event loop goes on).
                spawned = await self._spawn(environment)
                client = await asyncio.to_thread(_client_class, settings.transport)
                transport = self._transport(environment, spawned)
                self._client = await self._stack.enter_async_context(
                    client(transport, raise_exceptions=True)
                )
                listed = await self._client.list_tools()
        except ImportError as exc:  # not installed, or blocked or broken
            await self._close()
            raise ThoughtlineError(
                "EXTRA_MISSING",
                f"Tool servers ({settings.name}) need the [mcp] extra: "
                f"pip install 'thoughtline[mcp]' (missing module {exc.name or 'mcp'}).",
            ) from None
        except TimeoutError:
            error = self._unavailable(f"did not answer within {self._start_timeout_s:g} s")
        except Exception as exc:  # the SDK's and the transport's errors, in task groups
            error = self._unavailable(f"did not start ({_reason(exc)})")
        except BaseException:  # cancelled (the run ended first): what started stops
            await self._close()
            raise
        if error is not None:  # read its stderr before stopping it closes the file
            await self._close()
            raise error
        self.tools = tuple(
            ToolInfo(
                server=settings.name,
                name=tool.name,
                description=tool.description or "",
                input_schema=dict(tool.input_schema or {}),
                read_only=bool(tool.annotations and tool.annotations.read_only_hint),
                destructive=bool(
                    tool.annotations
                    and not tool.annotations.read_only_hint
                    and tool.annotations.destructive_hint
                ),
            )
            for tool in listed.tools
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._close()

    async def call(
        self, name: str, arguments: Mapping[str, Any], *, timeout_s: float
    ) -> ToolOutcome:
        """Call the tool ``name``; never raises for what the server or the tool did."""
        if all(tool.name != name for tool in self.tools):
            return ToolOutcome(
                text=f"The server {self.settings.name} has no tool {name!r}.",
                is_error=True,
                error_code="TOOL_NOT_FOUND",
            )
        if self._client is None:  # its connection ended with an earlier call's failure
            return self._unavailable_outcome(
                "is no longer connected: it stopped earlier in the run"
            )
        try:
            async with asyncio.timeout(timeout_s):
                result = await self._client.call_tool(name, dict(arguments))
        except TimeoutError:
            return ToolOutcome(
                text=f"The tool {self.settings.name}.{name} did not answer within "
                f"{timeout_s:g} s ([timeouts] tool).",
                is_error=True,
                error_code="TOOL_TIMEOUT",
            )
        except Exception as exc:  # the server answered an error, died or broke the protocol
            answered = _answered(exc)
            if answered is not None:
                return ToolOutcome(
                    text=f"The MCP server {self.settings.name} answered the call to {name} "
                    f"with {answered}",
                    is_error=True,
                    error_code="TOOL_CALL_FAILED",
                )
            self._end(f"its connection ended during a call to {name}")
            return self._unavailable_outcome(f"failed during the call ({_reason(exc)})")
        from thoughtline.tools.stdio_transport import CUT_META_KEY

        text = _result_text(result)
        sent_bytes = (result.meta or {}).get(CUT_META_KEY)
        if isinstance(sent_bytes, int):  # cut as it was read: far over the limit
            text = (
                text[: self._max_result_chars]
                + f"\n[result cut at {min(len(text), self._max_result_chars):,} characters; "
                f"the server sent {sent_bytes:,} bytes]"
            )
            # Sent back as an error only so that the client skips the tool's output
            # schema; like any result over the cap, it is a result, cut and marked.
            return ToolOutcome(text=text, truncated=True)
        text, truncated = cut_result(text, self._max_result_chars)
        return ToolOutcome(text=text, is_error=bool(result.is_error), truncated=truncated)

    async def _spawn(self, env: dict[str, str]) -> SpawnedServer | None:
        """A stdio server's process, started (stopped by :meth:`_close` unless the
        transport took it over); ``None`` for an HTTP server."""
        settings = self.settings
        if settings.command is None:
            return None
        from thoughtline.tools.stdio_spawn import discard, spawn_server

        self._stderr = self._stack.enter_context(
            tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115 (closed by the exit stack)
        )
        spawned = self._spawned = await spawn_server(
            settings.command, settings.args, env=env, cwd=settings.cwd, errlog=self._stderr
        )
        self._stack.push_async_callback(discard, spawned)
        return spawned

    def _transport(self, environment: dict[str, str], spawned: SpawnedServer | None) -> Any:
        settings = self.settings
        if spawned is not None:
            from thoughtline.tools.stdio_transport import stdio_transport

            assert settings.command is not None
            assert self._stderr is not None
            return stdio_transport(
                settings.command,
                settings.args,
                env=environment,
                cwd=settings.cwd,
                errlog=self._stderr,
                max_message_bytes=max(_MIN_MESSAGE_BYTES, 16 * self._max_result_chars),
                spawned=spawned,
                on_end=lambda: self._end("it exited"),
            )
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(
            headers=environment,
            timeout=httpx2.Timeout(self._start_timeout_s),
            trust_env=False,  # only loopback and configured URLs; no netrc, no proxies here
        )
        self._stack.push_async_callback(http.aclose)
        assert settings.url is not None
        return streamable_http_client(settings.url, http_client=http)

    def trim_stderr(self) -> None:
        """Cut what the server wrote to stderr to its tail once the file passes
        :data:`STDERR_KEEP_BYTES`: a session kept open for days (:mod:`thoughtline.tools.pool`)
        keeps a bounded file. The server shares the file's offset, so it writes on after
        the tail."""
        stderr = self._stderr
        if stderr is None:
            return
        try:
            if os.fstat(stderr.fileno()).st_size <= STDERR_KEEP_BYTES:
                return
            tail = self._stderr_tail()
            stderr.seek(0)
            stderr.truncate(0)
            stderr.write(tail + "\n")
            stderr.flush()
        except (OSError, ValueError):  # closed meanwhile: nothing to keep
            return

    def _end(self, reason: str) -> None:
        if not self.ended.is_set():
            self.end_reason = reason
            self.ended.set()

    async def _close(self) -> None:
        try:
            await self._stack.aclose()
        except Exception as exc:  # a server that broke the protocol on the way out is gone
            logger.debug("closing MCP server %s: %s", self.settings.name, _reason(exc))
        finally:
            self._client = None

    def _unavailable_outcome(self, what: str) -> ToolOutcome:
        return ToolOutcome(
            text=self._unavailable(what).message,
            is_error=True,
            error_code="TOOL_SERVER_UNAVAILABLE",
        )

    def _unavailable(self, what: str) -> ThoughtlineError:
        settings = self.settings
        message = f"The MCP server {settings.name} ({settings.describe()}) {what}."
        tail = self._stderr_tail()
        if tail:
            message += f" Its last output: {tail}"
        # Shown, logged and stored: no loaded credential in its command line either.
        return ThoughtlineError("TOOL_SERVER_UNAVAILABLE", Redactor(self._secrets).text(message))

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0, 2)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - _STDERR_TAIL_CHARS))
            tail = " ".join(self._stderr.read().split())
        except (OSError, ValueError):
            return ""
        # The tail goes into errors that are shown, logged and stored: a loaded
        # credential (or a key's shape) a server printed is not carried along.
        return Redactor(self._secrets).text(tail)


def _client_class(transport: str) -> Any:
    """``mcp.Client``, with what ``transport`` uses loaded (off the event loop:
    :meth:`McpConnection.__aenter__`)."""
    from mcp import Client

    if transport == "stdio":
        import thoughtline.tools.stdio_transport  # noqa: F401
    else:
        import mcp.client.streamable_http  # noqa: F401

    return Client


def cut_result(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut at ``limit`` characters and marked so, and whether it was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit] + f"\n[result cut at {limit:,} of {len(text):,} characters]", True


def _answered(exc: BaseException) -> str | None:
    """What a live server answered the call with, when ``exc`` (possibly grouped) says it
    answered: a JSON-RPC error (``an error (JSON-RPC CODE): MESSAGE``) or a result that
    is not a tool result. ``None`` for a connection that ended (the SDK's ``-32000``) and
    every other failure."""
    from mcp.shared.exceptions import MCPError
    from pydantic import ValidationError

    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, ValidationError):  # the SDK read the answer as a CallToolResult
        problem = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in problem["loc"]) or "the result"
        return (
            "a result that is not an MCP tool result "
            f"({_server_text(where + ': ' + problem['msg'])})."
        )
    if not isinstance(exc, MCPError) or exc.code == _CONNECTION_CLOSED:
        return None
    message = _server_text(str(exc.message)) or "(no message)"
    ended = message if message.endswith((".", "!", "?", "…")) else message + "."
    return f"an error (JSON-RPC {exc.code}): {ended}"


def _server_text(text: str) -> str:
    """A server's ``text`` as a message quotes it: on one line, its other control
    characters (and bidi overrides) written as escapes (``\\x1b``), cut at
    :data:`_SERVER_MESSAGE_CHARS`."""
    text = _CONTROLS.sub(_escaped, " ".join(text.split()))
    if len(text) > _SERVER_MESSAGE_CHARS:
        text = text[: _SERVER_MESSAGE_CHARS - 1] + "…"
    return text


def _escaped(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def _reason(exc: BaseException) -> str:
    """The innermost cause of a (possibly grouped) failure, in a few words."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = shown_url(str(exc) or type(exc).__name__)  # it may quote the server's URL
    return " ".join(text.split())[:300]


def _result_text(result: Any) -> str:
    """The text the model gets: text blocks joined; other blocks named; structured
    content as JSON when there is no text."""
    pieces: list[str] = []
    for block in result.content or ():
        kind = getattr(block, "type", "")
        if kind == "text":
            pieces.append(block.text)
        elif kind in ("image", "audio"):
            pieces.append(f"[{kind}: {getattr(block, 'mime_type', '') or 'data'}]")
        elif kind == "resource_link":
            pieces.append(f"[resource: {getattr(block, 'uri', '')}]")
        else:
            pieces.append(f"[{kind or 'content'}]")
    if not pieces and result.structured_content is not None:
        pieces.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(pieces)
