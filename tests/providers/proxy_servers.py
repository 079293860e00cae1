"""A SOCKS5 proxy on 127.0.0.1 for tests: threads, so async tests and CLI children alike
can go through it. It speaks RFC 1928 (CONNECT; IPv4 and host names) with RFC 1929
username/password authentication when given credentials, records every connection it
made, and resolves names from its own table (``socks5h``: the proxy resolves)."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

RELAY_TIMEOUT_S = 30.0
"""A relayed connection silent this long is dropped: no test leaves a thread behind."""


@dataclass
class Tunnel:
    """One connection the proxy made: where to (as the client named it), and who asked."""

    host: str
    port: int
    username: str | None


@dataclass
class Socks5Proxy:
    credentials: tuple[str, str] | None = None
    names: dict[str, str] = field(default_factory=dict)
    """Host names the proxy resolves itself (``provider.invalid`` -> ``127.0.0.1``)."""
    tunnels: list[Tunnel] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    url: str = ""

    @contextlib.contextmanager
    def running(self) -> Iterator[Socks5Proxy]:
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.request)

        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        self.url = f"127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)

    def _serve(self, client: socket.socket) -> None:
        client.settimeout(RELAY_TIMEOUT_S)
        with contextlib.suppress(OSError, ValueError), client:
            username = self._greet(client)
            if username is False:
                return
            version, command, _, kind = _exactly(client, 4)
            if version != 5 or command != 1:
                client.sendall(b"\x05\x07\x00\x01" + bytes(6))  # command not supported
                return
            if kind == 1:
                host = socket.inet_ntoa(_exactly(client, 4))
            elif kind == 3:
                host = _exactly(client, _exactly(client, 1)[0]).decode()
            else:
                client.sendall(b"\x05\x08\x00\x01" + bytes(6))  # address type not supported
                return
            (port,) = struct.unpack("!H", _exactly(client, 2))
            self.tunnels.append(Tunnel(host, port, username if isinstance(username, str) else None))
            upstream = socket.create_connection((self.names.get(host, host), port), timeout=5)
            upstream.settimeout(RELAY_TIMEOUT_S)
            with upstream:
                client.sendall(b"\x05\x00\x00\x01" + bytes(6))
                back = threading.Thread(target=_copy, args=(upstream, client), daemon=True)
                back.start()
                _copy(client, upstream)
                back.join(timeout=RELAY_TIMEOUT_S)

    def _greet(self, client: socket.socket) -> str | bool | None:
        """The method negotiation: the username that authenticated, None without
        authentication, False when the client was turned away."""
        version, count = _exactly(client, 2)
        methods = _exactly(client, count)
        if version != 5:
            return False
        if self.credentials is None:
            client.sendall(b"\x05\x00")
            return None
        if 2 not in methods:
            client.sendall(b"\x05\xff")
            self.refused.append("no username/password offered")
            return False
        client.sendall(b"\x05\x02")
        _, length = _exactly(client, 2)
        username = _exactly(client, length).decode()
        password = _exactly(client, _exactly(client, 1)[0]).decode()
        if (username, password) != self.credentials:
            client.sendall(b"\x01\x01")
            self.refused.append(f"wrong credentials for {username}")
            return False
        client.sendall(b"\x01\x00")
        return username


def _exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        piece = sock.recv(size - len(data))
        if not piece:
            raise ValueError("the client closed the connection mid-handshake")
        data += piece
    return data


def _copy(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while piece := source.recv(65536):
            target.sendall(piece)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)
