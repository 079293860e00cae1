"""The ASGI application and the server that runs it.

:func:`create_app` wires the API, error handlers, the request guard (Host allow-list,
cross-site refusals: :mod:`thoughtline.server.guard`), the body-size limit, optional CORS,
the headers that keep the page from being framed (:mod:`thoughtline.server.page_headers`)
and the web page (``static/``, public: it holds no data). :class:`DaemonServer` serves it
with uvicorn on a pre-bound socket (on uvloop where it is installed; the connections
accepted by :mod:`thoughtline.server.listening`), its connections bounded (a header timeout, a keep-alive
timeout and a cap: :mod:`thoughtline.server.connections`), and shuts down gracefully: on SIGTERM/SIGINT (or
:meth:`DaemonServer.stop`) runs executing here are interrupted and record
``interrupted`` before the process exits.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import FrameType

import uvicorn
from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.config import STARTUP_FAILURE

from thoughtline import __version__
from thoughtline._user_files import describe_size
from thoughtline.errors import ThoughtlineError
from thoughtline.server.api import health_router, router
from thoughtline.server.auth import Tokens
from thoughtline.server.connections import (
    LISTEN_BACKLOG,
    ConnectionLimiter,
    bounded_protocol,
    connection_budget,
    open_file_limit,
)
from thoughtline.server.daemon import Daemon, body_limit
from thoughtline.server.daemon_token import refuse_weak_tokens
from thoughtline.server.docs_page import DOCS_HEADERS, docs_page
from thoughtline.server.errors import error_response, install_error_handlers
from thoughtline.server.gateway.failure import gateway_refusal
from thoughtline.server.guard import AllowedHosts, RequestGuard
from thoughtline.server.listening import listen
from thoughtline.server.page_headers import PageHeaders
from thoughtline.server.sse import ServerSend

logger = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
_PLACEHOLDER_PAGE = (
    "<!doctype html><meta charset='utf-8'><title>thoughtline</title>"
    "<h1>thoughtline</h1><p>The daemon is running; the API is under /v1 "
    "(<a href='/openapi.json'>OpenAPI document</a>).</p>"
)


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with a 413 JSON error, whether the
    client announced the length or streams the body."""

    def __init__(self, app: ASGIApp, limit: int, *, request_limit: int | None = None) -> None:
        self.app = app
        self.limit = limit
        self.request_limit = request_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await self._refuse(scope, receive, send)
            return
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        # Read the (small) body up front, so an oversized one is refused before the app
        # sees any of it; then replay it.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"The request body is larger than {describe_size(self.limit)}."
        if self.request_limit is not None:
            message = (
                f"The request body is larger than {describe_size(self.limit)}; the request "
                f"text may be up to {describe_size(self.request_limit)} "
                "(orchestration.max_request_bytes in thoughtline.toml)."
            )
        headers = {"Connection": "close"}
        response = gateway_refusal(scope["path"], 413, "REQUEST_TOO_LARGE", message, headers)
        if response is None:
            response = error_response(413, "REQUEST_TOO_LARGE", message, headers=headers)
        await response(scope, receive, send)


def create_app(daemon: Daemon) -> FastAPI:
    """The daemon's ASGI app. Its lifespan starts retention and, on shutdown, interrupts
    the runs executing here and waits until they recorded it."""
    settings = daemon.settings

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await daemon.startup()
        try:
            yield
        finally:
            await daemon.shutdown()

    app = FastAPI(
        title="thoughtline daemon",
        version=__version__,
        description="Runs of LLM specialist tasks, their live events (SSE) and traces.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.daemon = daemon
    app.state.tokens = Tokens(access=settings.token, operator=settings.operator_token)
    install_error_handlers(app, observe=daemon.note_store_error)
    app.include_router(router)
    app.include_router(health_router)
    # The gateway's paths (their own client tokens and error shapes): answered
    # GATEWAY_DISABLED unless [gateway] enabled = true.
    from thoughtline.server.gateway.routes import router as gateway_router

    gateway = daemon.runtime.config.gateway
    if gateway.enabled:
        from thoughtline.server.gateway.bridge import Bridge

        app.state.gateway = Bridge(daemon, gateway)
    app.include_router(gateway_router)

    @app.get("/", include_in_schema=False, response_model=None)
    async def index() -> Response:
        page = STATIC_DIR / "index.html"
        if page.is_file():
            return FileResponse(page, media_type="text/html")
        return HTMLResponse(_PLACEHOLDER_PAGE)

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return HTMLResponse(docs_page(app.openapi()), headers=DOCS_HEADERS)

    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID", "Prefer"],
            expose_headers=["Preference-Applied"],  # POST /v1/runs with Prefer: respond-async
        )
    max_request_bytes = daemon.runtime.config.max_request_bytes
    app.add_middleware(
        BodyLimit,
        limit=settings.max_body_bytes or body_limit(max_request_bytes),
        request_limit=max_request_bytes,
    )
    # Outermost: a request to a foreign Host, or a cross-site state change, is refused
    # before anything else looks at it.
    app.add_middleware(
        RequestGuard,
        hosts=AllowedHosts.build(
            settings.host, settings.allowed_hosts, token=settings.token is not None
        ),
        cors_origins=settings.cors_origins,
    )
    # Around everything, so refusals carry the page's headers too.
    app.add_middleware(PageHeaders)
    return app


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind_socket(host: str, port: int) -> socket.socket:
    """A bound socket with TCP_NODELAY (small SSE frames must not wait for Nagle)."""
    host = host.strip("[]")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ThoughtlineError(
            "SERVE_BIND_FAILED", f"Cannot listen on {host}:{port} ({exc})."
        ) from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ThoughtlineError(
            "SERVE_BIND_FAILED",
            f"Cannot listen on {host}:{port} ({exc.strerror or exc}); choose another --port.",
        ) from exc
    sock.set_inheritable(False)
    return sock


def url_for(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class DaemonServer:
    """uvicorn serving a :class:`Daemon` on a pre-bound socket, in this thread
    (:meth:`run`, with signal handling) or a background thread (:meth:`start`), on a new
    event loop: ``loop`` as uvicorn names them, ``"auto"`` being uvloop where it is
    installed (the ``server`` extra installs it, except on Windows), asyncio's otherwise."""

    def __init__(
        self, daemon: Daemon, sock: socket.socket | None = None, *, loop: str = "auto"
    ) -> None:
        self.daemon = daemon
        if not is_loopback(daemon.settings.host):
            refuse_weak_tokens(
                daemon.settings.host, daemon.settings.token, daemon.settings.operator_token
            )
        settings = daemon.runtime.config
        budget = connection_budget(settings.max_connections, open_file_limit())
        self.sock = sock or bind_socket(daemon.settings.host, daemon.settings.port)
        self.url = url_for(self.sock)
        self.app = create_app(daemon)
        self.connections = ConnectionLimiter(
            max_connections=budget.max_connections,
            header_timeout_s=settings.header_timeout_s,
            keep_alive_timeout_s=settings.keep_alive_timeout_s,
        )
        config = uvicorn.Config(
            ServerSend(self.app),
            http=bounded_protocol(self.connections),
            ws="none",  # no WebSocket route: an upgrade request is answered as plain HTTP
            loop=loop,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=int(daemon.settings.shutdown_timeout_s) + 5,
        )
        self.server = _Server(config, self._signalled, budget.accept_batch)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop serving (None before :meth:`run` or :meth:`start`)."""
        return self._loop

    def _signalled(self) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.daemon.begin_shutdown)

    async def serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            await self.server.serve(sockets=[self.sock])
        finally:
            self.sock.close()

    def _run_loop(self) -> None:
        with asyncio.Runner(loop_factory=self.server.config.get_loop_factory()) as runner:
            runner.run(self.serve())

    def run(self) -> None:
        """Serve until SIGTERM/SIGINT (this must be the main thread)."""
        self._run_loop()

    def start(self, timeout_s: float = 10.0) -> DaemonServer:
        """Serve from a background thread (tests, embedding)."""
        started = threading.Event()

        def target() -> None:
            try:
                self._run_loop()
            except BaseException as exc:  # reported to the starting thread
                self._failure = exc
            finally:
                started.set()

        self._thread = threading.Thread(target=target, name="thoughtline-daemon", daemon=True)
        self._thread.start()
        waited = 0.0
        while not self.server.started and waited < timeout_s and self._thread.is_alive():
            started.wait(0.01)
            waited += 0.01
        if not self.server.started:
            self.stop()
            raise RuntimeError(f"the daemon did not start: {self._failure!r}")
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        """Graceful shutdown: interrupt runs, let them record it, stop serving."""
        self._signalled()
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
            self._thread = None

    def __enter__(self) -> DaemonServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _Server(uvicorn.Server):
    """uvicorn's server, telling the daemon about SIGTERM/SIGINT first: runs are
    interrupted at once, so the SSE streams watching them end and the connections close
    instead of holding up the shutdown."""

    def __init__(
        self, config: uvicorn.Config, on_exit: Callable[[], None], accept_batch: int
    ) -> None:
        super().__init__(config)
        self._on_exit = on_exit
        self._accept_batch = accept_batch

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._on_exit()
        super().handle_exit(sig, frame)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start-up, the pre-bound sockets served by the daemon's listener
        (server/listening.py: a burst of connections accepted in one turn of the loop,
        under any loop) rather than by the loop's own server."""
        await self.lifespan.startup()
        if self.lifespan.should_exit:
            sys.exit(STARTUP_FAILURE)
        config = self.config

        def create_protocol() -> asyncio.Protocol:
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=self.server_state, app_state=self.lifespan.state
            )

        # Accepted up to the accept batch per turn, small under a low open-file limit; the
        # kernel's queue takes no descriptor of ours (server/connections.py). uvicorn only
        # closes them and waits (asyncio.AbstractServer), though it types them Server.
        self.servers = [
            await listen(sock, create_protocol, self._accept_batch, LISTEN_BACKLOG)  # type: ignore[misc]
            for sock in sockets or ()
        ]
        self.started = True
