"""Bounds on the daemon's HTTP connections, kept where uvicorn reads them: its protocol.

uvicorn's ``httptools`` protocol waits for a request's head for ever and, unless told
``limit_concurrency`` (which answers 503 to requests past it but still accepts and holds
their sockets), holds any number of connections. Half-open connections then pile up
until ``accept()`` fails with ``EMFILE`` and nobody is answered, health checks included.
:class:`BoundedHttpProtocol` adds what a server facing the network needs:

- **Header timeout** (``[server] header_timeout_s``): a request's head must be complete
  within it, counted from the connection's start for the first request and from the
  first byte of each later one (not restarted by further bytes, so a client dribbling
  a byte at a time gains nothing). While the body comes, a silence as long closes the
  connection too. A client that had sent part of a request gets a 408
  ``REQUEST_TIMEOUT``; one that sent nothing is closed without a word.
- **Keep-alive timeout** (``[server] keep_alive_timeout_s``): a connection idle after a
  response is closed that long after it; stray bytes do not restart the count.
- **A cap** (``[server] max_connections``, lowered to what the open-file limit allows:
  :func:`connection_budget`). A connection that arrives at the cap takes the place of
  the one that has waited longest without a request being served (half-open, sending
  its request, or idle between requests), which is closed; when every connection is
  being served (live event streams, mostly), the new one gets a 503
  ``SERVER_AT_CAPACITY`` and is closed. So a pile of unauthenticated half-open sockets
  never keeps a health check or an authenticated client out: each newcomer that sends
  its request promptly is served.

A request being served (its head and body read, its response not finished) has no
deadline at all: a live event stream lasts as long as its run.

**Open files.** The cap, the connections accepted in one turn of the loop and the
descriptors kept for the store, provider connections and tool servers
(:data:`FD_RESERVE`) fit under the process's open-file limit, so ``accept()`` itself never
runs out: the daemon's listener (:mod:`thoughtline.server.listening`) accepts up to the
accept batch of connections per turn before any of them is seen (and refused), and the
sockets closed are released on the next turn, so two such batches are kept free.
Connections waiting in the kernel's queue hold no descriptor of this process, so that
queue is wider (:data:`LISTEN_BACKLOG`): a burst of connections under a low limit waits
there instead of having its SYNs dropped (a second lost per retry).
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
import socket
import struct
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from thoughtline.errors import ThoughtlineError
from thoughtline.server.page_headers import PAGE_HEADERS

logger = logging.getLogger(__name__)

FD_RESERVE: Final = 64
"""Descriptors left to everything but client connections: the store's files, provider
connections, tool servers' pipes, the loop's own."""
MIN_CONNECTIONS: Final = 16
"""Fewer connections than this, and the open-file limit is too low to serve."""
MAX_ACCEPT_BATCH: Final = 2048
"""Connections accepted in one turn of the loop at most (uvicorn's default backlog)."""
LISTEN_BACKLOG: Final = 2048
"""The kernel's queue of connections not yet accepted (capped by ``somaxconn``)."""
_WARN_EVERY_S: Final = 60.0


@dataclass(frozen=True, slots=True)
class ConnectionBudget:
    """What the daemon may hold under an open-file limit."""

    max_connections: int
    accept_batch: int
    """Connections accepted per turn of the loop (server/listening.py)."""


def open_file_limit() -> int:
    """This process's soft limit on open files (``ulimit -n``)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 1 << 20 if soft == resource.RLIM_INFINITY else soft


def files_needed(max_connections: int) -> int:
    """The open-file limit under which ``max_connections`` fit whole."""
    return max_connections + 2 * MAX_ACCEPT_BATCH + FD_RESERVE


def raise_open_file_limit(max_connections: int) -> None:
    """Raise the soft open-file limit toward what ``max_connections`` need, as far as the
    hard limit allows (as Go's runtime does at start); never lowers it. For the process
    that serves (``thoughtline serve``), not for an embedding one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = files_needed(max_connections)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError) as exc:  # a sandbox may forbid it: the budget shrinks
            logger.warning("could not raise the open-file limit to %d: %s", wanted, exc)


def connection_budget(max_connections: int, file_limit: int) -> ConnectionBudget:
    """The cap and accept batch for ``[server] max_connections`` under ``file_limit`` open
    files; ``SERVE_FILE_LIMIT_LOW`` when it leaves room for too few connections."""
    room = file_limit - FD_RESERVE
    batch = max(MIN_CONNECTIONS, min(MAX_ACCEPT_BATCH, room // 8))
    fitting = room - 2 * batch
    if fitting < min(MIN_CONNECTIONS, max_connections):
        raise ThoughtlineError(
            "SERVE_FILE_LIMIT_LOW",
            f"The open-file limit (ulimit -n) is {file_limit}, too low to serve: the daemon "
            f"keeps {FD_RESERVE} files for its store and providers and needs room for at "
            f"least {MIN_CONNECTIONS} connections; raise it to at least "
            f"{FD_RESERVE + 3 * MIN_CONNECTIONS} (ulimit -n).",
        )
    cap = min(max_connections, fitting)
    if cap < max_connections:
        logger.warning(
            "the open-file limit (%d) leaves room for %d connections, not "
            "server.max_connections (%d); raise ulimit -n to %d for all of them",
            file_limit,
            cap,
            max_connections,
            files_needed(max_connections),
        )
    return ConnectionBudget(max_connections=cap, accept_batch=batch)


class ConnectionLimiter:
    """The connections of one server: every open one, and in order those waiting (no
    request being served), the longest-waiting first."""

    def __init__(
        self, *, max_connections: int, header_timeout_s: float, keep_alive_timeout_s: float
    ) -> None:
        self.max_connections = max_connections
        self.header_timeout_s = header_timeout_s
        self.keep_alive_timeout_s = keep_alive_timeout_s
        self.open: set[BoundedHttpProtocol] = set()
        self.waiting: dict[BoundedHttpProtocol, None] = {}
        self._warned_at: float | None = None

    def admit(self, connection: BoundedHttpProtocol, now: float) -> bool:
        """Count ``connection`` in, closing the longest-waiting one at the cap; ``False``
        when every open connection is being served (the caller refuses it)."""
        if len(self.open) >= self.max_connections:
            victim = next(iter(self.waiting), None)
            self._warn(now, evicting=victim is not None)
            if victim is None:
                return False
            self.forget(victim)
            victim.close_quietly()
        self.open.add(connection)
        self.waiting[connection] = None
        return True

    def forget(self, connection: BoundedHttpProtocol) -> None:
        self.open.discard(connection)
        self.waiting.pop(connection, None)

    def mark_waiting(self, connection: BoundedHttpProtocol) -> None:
        if connection in self.open and connection not in self.waiting:
            self.waiting[connection] = None  # the newest to wait: closed last

    def mark_serving(self, connection: BoundedHttpProtocol) -> None:
        self.waiting.pop(connection, None)

    def _warn(self, now: float, *, evicting: bool) -> None:
        if self._warned_at is not None and now - self._warned_at < _WARN_EVERY_S:
            return
        self._warned_at = now
        if evicting:
            logger.warning(
                "%d connections open (server.max_connections): closing the ones waiting "
                "longest for a request to make room",
                len(self.open),
            )
        else:
            logger.warning(
                "%d connections open, each serving a request (server.max_connections): "
                "refusing new ones with 503",
                len(self.open),
            )


Deadline = Literal["head", "body", "idle"]


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's ``httptools`` protocol with a header timeout, a keep-alive timeout that
    stray bytes do not restart, and the cap of its :class:`ConnectionLimiter`; one
    subclass per server (:func:`bounded_protocol`)."""

    limiter: ClassVar[ConnectionLimiter]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._deadline_kind: Deadline | None = None
        self._in_message = False
        """Bytes of a request arrived that the parser has not finished reading."""

    # -- the connection's life -----------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.limiter.admit(self, self.loop.time()):
            self._answer_and_close(
                503,
                "SERVER_AT_CAPACITY",
                f"This daemon has {self.limiter.max_connections} connections open, each "
                "serving a request (server.max_connections); try again later.",
                retry_after_s=5,
            )
            return
        self._arm("head")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.limiter.forget(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._settle()

    def close_quietly(self) -> None:
        """Close at once, without an answer (room for a newer connection)."""
        self._disarm()
        if not self.transport.is_closing():
            self.transport.close()

    # -- parser callbacks (httptools) ----------------------------------------------
    def on_message_begin(self) -> None:
        super().on_message_begin()
        # For hang_up; weak, so the scope does not keep its connection alive.
        self.scope[CONNECTION] = weakref.ref(self)  # type: ignore[typeddict-unknown-key]
        self._in_message = True
        if self._deadline_kind != "head":
            self._arm("head")  # from the first byte of this request

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._arm("body")  # ended at once by on_message_complete when there is none

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        if self._deadline_kind == "body":
            self._arm("body")  # a silence, not a total: bodies may be large

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_message = False
        self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # uvicorn's own keep-alive timer is restarted by every byte that arrives; ours
        # (in _settle) counts from the response's end.
        self._unset_keepalive_if_required()
        self._settle()

    # -- deadlines ---------------------------------------------------------------
    def _serving(self) -> bool:
        """Whether a request was read whole and its response is not finished."""
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete and not cycle.more_body

    def _settle(self) -> None:
        if self.transport.is_closing():
            return
        if self._serving():
            self.limiter.mark_serving(self)
            if not self._in_message:  # a pipelined head keeps its deadline
                self._disarm()
            return
        self.limiter.mark_waiting(self)
        if self._deadline is None:
            self._arm("head" if self._in_message else "idle")

    def _arm(self, kind: Deadline) -> None:
        self._disarm()
        limiter = self.limiter
        delay = limiter.keep_alive_timeout_s if kind == "idle" else limiter.header_timeout_s
        self._deadline = self.loop.call_later(delay, self._expired)
        self._deadline_kind = kind

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None
        self._deadline_kind = None

    def _expired(self) -> None:
        kind = self._deadline_kind
        self._deadline = None
        self._deadline_kind = None
        if self.transport.is_closing() or self._serving():
            return
        cycle = self.cycle
        answering = cycle is not None and cycle.response_started and not cycle.response_complete
        if kind == "idle" or not self._in_message or answering:
            self.transport.close()  # nothing asked, or an answer already under way
            return
        what = "its body" if kind == "body" else "the request's head"
        self._answer_and_close(
            408,
            "REQUEST_TIMEOUT",
            f"The daemon waited {self.limiter.header_timeout_s:g} s for {what} "
            "(server.header_timeout_s); send the whole request without pausing.",
        )

    def _answer_and_close(
        self, status: int, code: str, message: str, *, retry_after_s: int | None = None
    ) -> None:
        """Write one error response, in the daemon's error shape and with the page's
        headers (as every response of the daemon), and close."""
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        reason = {408: b"Request Timeout", 503: b"Service Unavailable"}[status]
        head = [
            b"HTTP/1.1 %d %s\r\n" % (status, reason),
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n",
            *(
                b"%s: %s\r\n" % (name.lower().encode(), value.encode())
                for name, value in PAGE_HEADERS.items()
            ),
        ]
        if retry_after_s is not None:
            head.append(b"retry-after: %d\r\n" % retry_after_s)
        self.transport.write(b"".join([*head, b"\r\n", body]))
        self.transport.close()


CONNECTION: Final = "thoughtline.connection"
"""Scope key of a weak reference to the request's connection (its
:class:`BoundedHttpProtocol`)."""


def hang_up(scope: Mapping[str, Any]) -> None:
    """Close the request's connection at once with a reset, dropping what is still
    unsent, in the process and in the kernel: for a client that stopped reading, whose
    socket would never take the rest (a plain close would wait for it to drain). Its
    response's further writes are then dropped."""
    reference = scope.get(CONNECTION)
    connection = reference() if isinstance(reference, weakref.ref) else None
    if not isinstance(connection, BoundedHttpProtocol) or connection.transport is None:
        return
    sock = connection.transport.get_extra_info("socket")
    if sock is not None:
        # A reset, not a FIN queued behind what the kernel still holds for the client.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.transport.abort()


def bounded_protocol(limiter: ConnectionLimiter) -> type[BoundedHttpProtocol]:
    """The protocol class uvicorn builds each connection of one server with."""
    return type("BoundedHttpProtocol", (BoundedHttpProtocol,), {"limiter": limiter})
