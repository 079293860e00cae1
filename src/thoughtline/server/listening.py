"""The daemon's listening socket: a burst of connections is accepted in one turn of the
loop, under any event loop.

asyncio's own server accepts up to its ``backlog`` argument's worth of connections each
time the listening socket is readable; libuv, under uvloop, accepts one per turn of the
loop (since libuv 1.45, libuv/libuv#3696: one ``accept()`` per readiness). A daemon serving hundreds of live streams spends milliseconds on a turn, so under
libuv a burst of connections waited one turn each in the kernel's queue: with 50 runs
started at once and 5 subscribers connecting to each as its start returned
(``bench/bench_daemon.py``), the last were accepted seconds later, and 88-130 of the 250
were accepted only after their run had ended (they got its snapshot and its end, nothing
live). :class:`Listener` accepts the connections itself, up to the accept batch of
:func:`~thoughtline.server.connections.connection_budget` per turn, and hands each to the
loop as an accepted socket (``loop.connect_accepted_socket``): the same rule on asyncio's
loop and on uvloop.

A loop that cannot watch a socket (``add_reader``: Windows' proactor loop) serves with its
own server instead (:func:`listen`).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import Callable
from typing import Any, Final

logger = logging.getLogger(__name__)

ACCEPT_RETRY_S: Final = 1.0
"""After ``accept()`` failed for want of a resource (open files, memory), the listener
waits this long before accepting again (asyncio's server does the same)."""
_OUT_OF_RESOURCES: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class Listener(asyncio.AbstractServer):
    """Accepts connections on ``sock``, up to ``batch`` in each turn of the loop, each
    served by a protocol from ``protocol_factory``; stopped by :meth:`close` (the
    connections already accepted stay open)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.Protocol],
        batch: int,
    ) -> None:
        self._loop = loop
        self._sock = sock
        self._protocol_factory = protocol_factory
        self._batch = batch
        self._serving = False
        self._retry: asyncio.TimerHandle | None = None
        self._handing_over: set[asyncio.Task[Any]] = set()

    # -- accepting -----------------------------------------------------------------
    def _watch(self) -> None:
        self._retry = None
        if self._serving:
            self._loop.add_reader(self._sock.fileno(), self._accept)

    def _accept(self) -> None:
        """Take what the kernel's queue holds, up to the batch; the rest next turn."""
        for _ in range(self._batch):
            try:
                connection, _address = self._sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return  # the queue is empty (or the client gave up first)
            except OSError as exc:
                # Out of descriptors or memory: the connections wait in the kernel's
                # queue, which holds no descriptor of ours, until some are released.
                level = logging.WARNING if exc.errno in _OUT_OF_RESOURCES else logging.ERROR
                logger.log(
                    level, "accept() failed (%s); accepting again in %g s", exc, ACCEPT_RETRY_S
                )
                self._loop.remove_reader(self._sock.fileno())
                self._retry = self._loop.call_later(ACCEPT_RETRY_S, self._watch)
                return
            connection.setblocking(False)
            task = self._loop.create_task(self._hand_over(connection))
            self._handing_over.add(task)
            task.add_done_callback(self._handing_over.discard)

    async def _hand_over(self, connection: socket.socket) -> None:
        """The loop makes ``connection`` a transport served by a new protocol."""
        try:
            await self._loop.connect_accepted_socket(self._protocol_factory, connection)
        except Exception as exc:  # the client reset it before it was served
            logger.debug("an accepted connection could not be served: %r", exc)
            connection.close()

    # -- asyncio.AbstractServer ----------------------------------------------------
    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def is_serving(self) -> bool:
        return self._serving

    async def start_serving(self) -> None:
        if not self._serving:
            self._sock.setblocking(False)
            self._loop.add_reader(self._sock.fileno(), self._accept)
            self._serving = True

    def close(self) -> None:
        """Stop accepting (the socket itself is its owner's to close)."""
        if not self._serving:
            return
        self._serving = False
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        else:
            self._loop.remove_reader(self._sock.fileno())

    async def wait_closed(self) -> None:
        """Returns once the connections accepted before :meth:`close` have transports
        (the server waits for the connections themselves)."""
        if self._handing_over:
            await asyncio.gather(*self._handing_over, return_exceptions=True)

    async def serve_forever(self) -> None:
        await self.start_serving()
        closed = self._loop.create_future()
        try:
            await closed
        finally:
            self.close()

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return (self._sock,)


async def listen(
    sock: socket.socket,
    protocol_factory: Callable[[], asyncio.Protocol],
    batch: int,
    backlog: int,
) -> asyncio.AbstractServer:
    """Serve ``sock`` on the running loop: a :class:`Listener` where the loop can watch a
    socket, the loop's own server otherwise. The kernel's queue holds up to ``backlog``
    connections not yet accepted."""
    loop = asyncio.get_running_loop()
    listener = Listener(loop, sock, protocol_factory, batch)
    try:
        await listener.start_serving()
    except NotImplementedError:  # no add_reader (Windows' proactor loop)
        # The loop's server accepts up to its backlog argument's worth per turn.
        server: asyncio.AbstractServer = await loop.create_server(
            protocol_factory, sock=sock, backlog=batch
        )
    else:
        server = listener
    sock.listen(backlog)
    return server
