"""The HTTP transport provider calls go through by default: httpx2's client interface on
aiohttp's connections.

Reading a stream is most of what a provider call does, and most of a long-lived process's
work while many runs stream. httpx2's own transport parses HTTP in pure Python (h11) and
re-arms the socket's reader for every read; aiohttp parses with llhttp (C) and keeps
reading. On the same loopback streams (100 at once, one frame per read) it takes
0.60x-0.67x the CPU per chunk (``bench/README.md``, "Provider transport").

Everything above the transport stays httpx2: requests, responses, timeouts (from each
request's ``timeout`` extension), the error types the provider layer maps to
``PROVIDER_UNREACHABLE``/``PROVIDER_TIMEOUT``/interruptions. aiohttp's failures are
translated into httpx2's here, so nothing above knows the difference. Bodies are passed
through undecoded (``Content-Encoding`` is left to httpx2, as with its own transport), and
cookies are httpx2's business too (aiohttp keeps none); so is a base URL's userinfo
(``http://user:password@host``): httpx2's client sends it as Basic auth, and aiohttp gets
the URL without it, as httpx2's own transport sends it.
Proxies come from the environment (``HTTPS_PROXY``, ``NO_PROXY``...: ``proxies.py``), read
once when the transport is made, as httpx2 reads them when its client is made. aiohttp
speaks to ``http://`` proxies only: when the environment names one reached over TLS or
SOCKS, :func:`default_http_client` returns httpx2 on its own connections, which speak to
both, rather than go around the proxy (:class:`ProxyRouting`); either way each call's
route is :meth:`EnvironmentProxies.for_url`'s, ``NO_PROXY`` matched once, one way.
Certificates are checked against httpx2's default
trust store (or ``SSL_CERT_FILE``/``SSL_CERT_DIR``: one that cannot be read is a
:class:`~thoughtline.errors.ConfigError` naming the variable).

aiohttp's own ``trust_env`` is left off: it would read the environment and ``~/.netrc``
in a worker thread twice per request, and it sends the ``.netrc`` password of the
provider's host as Basic auth (a request that carries its own ``Authorization`` then
fails outright). A provider's credentials are its API key, or the userinfo its base URL
was written with.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import logging
import os
import ssl
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

import httpx2

from thoughtline.errors import ConfigError
from thoughtline.providers.proxies import EnvironmentProxies, Proxy, environment_proxies

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "DIRECT_BODY",
    "AiohttpTransport",
    "DirectBody",
    "default_http_client",
    "request_url",
]

logger = logging.getLogger(__name__)

KEEPALIVE_S = 30.0
"""How long an idle connection is kept for the next call to the same host."""
DIRECT_BODY = "thoughtline.direct_body"
"""The response extension holding the :class:`DirectBody` of a response."""
MAX_CHUNK_BYTES = 64 * 1024
"""The largest piece of a body handed up at once (httpx2's own transport reads as much)."""
READ_BYTES = 64 * 1024
"""The most one read of a provider's connection asks for. asyncio asks 256 KiB, into a new
buffer per read however little arrived (TLS twice: the read, then the one that finds
nothing more). glibc serves a buffer that size with mmap and takes it back with mremap and
munmap, so a streamed delta cost three to five more system calls and freshly zeroed pages:
a third of the CPU of reading a paced stream (``bench/README.md``, "Provider transport").
64 KiB is below malloc's mmap threshold, and more than a live stream has waiting."""


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport that sends requests with aiohttp.

    Build it anywhere (in a worker thread too: the TLS context, the costly part, is made
    here the first time, then shared); the aiohttp session is opened on the first
    request, on that request's event loop, and again if a later request runs on another
    loop. Connections are not capped: callers bound concurrency themselves
    (``max_concurrency``)."""

    def __init__(
        self,
        *,
        verify: ssl.SSLContext | bool = True,
        trust_env: bool = True,
        proxies: EnvironmentProxies | None = None,
    ) -> None:
        """``proxies``: the environment's, read here unless given (``trust_env``). Raises
        :class:`~thoughtline.errors.ConfigError` for a proxy aiohttp cannot speak to
        (:func:`default_http_client` picks httpx2's own transport for those)."""
        import aiohttp  # imported with the transport only: `status` and config never pay

        self._aiohttp = aiohttp
        self._ssl = verifying_context(verify, trust_env=trust_env)
        if proxies is None:
            proxies = environment_proxies() if trust_env else EnvironmentProxies({})
        self._environment = proxies
        self._proxies = _as_aiohttp_takes_them(proxies)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _session_for(self, loop: asyncio.AbstractEventLoop) -> Any:
        session = self._session
        if session is not None and self._loop is loop and not session.closed:
            return session
        aiohttp = self._aiohttp
        if session is not None:  # of another (finished) loop: it cannot be awaited here
            _abandon(session)
        opened = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ssl=self._ssl, keepalive_timeout=KEEPALIVE_S),
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,  # proxies are resolved here (see the module's docstring)
            timeout=aiohttp.ClientTimeout(total=None),
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
        )
        self._session, self._loop = opened, loop
        return opened

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        aiohttp = self._aiohttp
        session = self._session_for(asyncio.get_running_loop())
        limits: dict[str, float | None] = request.extensions.get("timeout", {})
        connect = limits.get("connect")
        timeout = aiohttp.ClientTimeout(
            total=None, connect=connect, sock_connect=connect, sock_read=limits.get("read")
        )
        content = await request.aread()
        proxy, proxy_headers = self._proxy_for(request.url)
        try:
            response = await session.request(
                request.method,
                # Without its userinfo: the client sent that as an Authorization header
                # (aiohttp refuses a URL holding credentials beside one), as httpx2's own
                # transports leave it out of the request they send.
                str(request.url.copy_with(userinfo=b"")),
                headers=request.headers.multi_items(),
                data=content or None,
                allow_redirects=False,
                timeout=timeout,
                proxy=proxy,
                proxy_headers=proxy_headers,
            )
        except Exception as exc:
            raise _sending_error(aiohttp, exc, request) from exc
        stream = DirectBody(aiohttp, response, request, limits.get("read"))
        return httpx2.Response(
            status_code=response.status,
            headers=[(name, value) for name, value in response.raw_headers],
            stream=stream,
            extensions={
                DIRECT_BODY: stream,
                "http_version": f"HTTP/{response.version.major}.{response.version.minor}".encode()
                if response.version is not None
                else b"HTTP/1.1",
                "reason_phrase": (response.reason or "").encode("latin-1", "replace"),
            },
            request=request,
        )

    def _proxy_for(self, url: httpx2.URL) -> tuple[str | None, dict[str, str] | None]:
        """The environment's proxy for ``url`` and the headers that carry its credentials
        (None: go direct)."""
        if self._environment.for_url(url) is None:  # none named, or NO_PROXY
            return None, None
        return self._proxies[url.scheme]

    async def aclose(self) -> None:
        session, loop = self._session, self._loop
        self._session = self._loop = None
        if session is None or session.closed:
            return
        if loop is asyncio.get_running_loop():
            await session.close()
        else:
            _abandon(session)

    def __del__(self) -> None:
        # Never closed (a ProviderClient its user did not close, a pool dropped with its
        # loop): close the sockets now, instead of aiohttp's "Unclosed" error at exit.
        session = getattr(self, "_session", None)
        if session is not None:
            _abandon(session)


def verifying_context(verify: ssl.SSLContext | bool, *, trust_env: bool) -> ssl.SSLContext:
    """The TLS context provider connections check certificates with: ``verify`` itself,
    httpx2's unverifying one for False, else httpx2's default trust store (or the one
    ``SSL_CERT_FILE``/``SSL_CERT_DIR`` name, with ``trust_env``).

    Raises :class:`~thoughtline.errors.ConfigError` naming the variable when the trust
    store it names cannot be loaded."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    if not verify:
        return httpx2.create_ssl_context(verify=False)
    cert_file = os.environ.get("SSL_CERT_FILE") if trust_env else None
    cert_dir = os.environ.get("SSL_CERT_DIR") if trust_env else None
    try:
        return _trust_store(trust_env, cert_file, cert_dir)
    except (OSError, ssl.SSLError) as exc:
        variable, value = ("SSL_CERT_FILE", cert_file) if cert_file else ("SSL_CERT_DIR", cert_dir)
        if not value:
            raise  # the system's own trust store: not a setting of the user's
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        # A path's bytes that are not UTF-8 (lone surrogates in os.environ) shown escaped:
        # the message is stored and printed.
        shown = os.fsencode(value).decode("utf-8", "backslashreplace")
        raise ConfigError(
            f"{variable}={shown} cannot be loaded as the certificates provider calls trust "
            f"({reason}). Point it at a PEM file (SSL_CERT_FILE) or a hashed directory "
            "(SSL_CERT_DIR) of CA certificates, or unset it to trust the system's."
        ) from None


@functools.lru_cache(maxsize=4)
def _trust_store(trust_env: bool, cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx2's verifying TLS context, made once per process for each setting of the
    variables it reads (loading the system's certificates takes 50-100 ms, for every
    ``ProviderClient`` otherwise). A context is safe to share between connections."""
    return httpx2.create_ssl_context(verify=True, trust_env=trust_env)


def _as_aiohttp_takes_them(
    proxies: EnvironmentProxies,
) -> dict[str, tuple[str, dict[str, str] | None]]:
    """By URL scheme: the proxy's URL without credentials, and the proxy headers that
    carry its credentials."""
    import yarl

    taken: dict[str, tuple[str, dict[str, str] | None]] = {}
    for scheme, proxy in proxies.by_scheme.items():
        if proxy.url.scheme != "http":
            raise ConfigError(
                f"{proxy.variable} names a proxy reached over {proxy.url.scheme}:// "
                f"({proxy.shown}), which aiohttp does not speak to: make the client with "
                "default_http_client(), which goes through httpx2's own transport for it."
            )
        url = yarl.URL(str(proxy.url))
        headers = None
        if url.user:
            credentials = f"{url.user}:{url.password or ''}".encode()
            # aiohttp moves an Authorization among the proxy's headers to the request's
            # Proxy-Authorization (or the CONNECT's, for an https:// provider), as it does
            # with the credentials it reads from the environment itself.
            headers = {"Authorization": "Basic " + base64.b64encode(credentials).decode()}
        taken[scheme] = (str(url.with_user(None)), headers)
    return taken


def _abandon(session: Any) -> None:
    """Close a session's connections without awaiting (its loop is gone or going)."""
    connector = session.connector
    if connector is None or connector.closed:
        return
    # The synchronous half of ``connector.close()``: the public one schedules a task on
    # the connector's loop, which may be closed by now.
    close_now = getattr(connector, "_close", None)
    if close_now is not None:
        with contextlib.suppress(Exception):
            close_now()


def _read_at_most(transport: asyncio.BaseTransport, size: int) -> None:
    """Make an asyncio connection's reads ask for ``size`` bytes at most: the socket's
    transport, or for TLS the protocol that reads its plaintext (its socket reads into
    one buffer kept for the connection). ``max_size`` is an attribute of CPython's
    selector transports and TLS protocol; a loop without it keeps its own reads."""
    reader = getattr(transport, "_ssl_protocol", transport)
    if getattr(reader, "max_size", 0) > size:
        reader.max_size = size  # type: ignore[union-attr]


class ReadTimedOut(Exception):
    """Nothing arrived on a response's connection for its read timeout."""


class DirectBody(httpx2.AsyncByteStream):
    """A response's body as aiohttp reads it, chunk by chunk as it arrives.

    httpx2 reads it through its own layers; the provider client reads :meth:`chunks`
    directly (found in the response's ``extensions[DIRECT_BODY]``).

    The read timeout of the body is kept here, by one timer per response that looks
    every quarter of the timeout whether bytes came in since its last look (aiohttp's own
    cancels and re-arms a timer for every chunk received, about 15 µs a chunk). So a
    silent connection fails after 1 to 1.25 times the timeout."""

    def __init__(
        self,
        aiohttp: Any,
        response: aiohttp.ClientResponse,
        request: httpx2.Request,
        read_timeout: float | None,
    ) -> None:
        self._aiohttp = aiohttp
        self._response = response
        self._request = request
        self._read_timeout = read_timeout
        self._watch: asyncio.TimerHandle | None = None
        self._seen_bytes = -1
        self._quiet_since = 0.0
        connection = response.connection
        if connection is not None and connection.transport is not None:
            _read_at_most(connection.transport, READ_BYTES)
        if read_timeout and connection is not None and connection.protocol is not None:
            # The headers are in: from here on the timer below keeps the read timeout.
            connection.protocol.read_timeout = None
            loop = asyncio.get_running_loop()
            self._quiet_since = loop.time()
            self._watch = loop.call_later(read_timeout / 4, self._look)

    def _look(self) -> None:
        timeout = self._read_timeout
        assert timeout is not None
        content = self._response.content
        if content.at_eof():
            self._watch = None
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        if content.total_bytes != self._seen_bytes:
            self._seen_bytes, self._quiet_since = content.total_bytes, now
        elif now - self._quiet_since >= timeout:
            self._watch = None
            content.set_exception(ReadTimedOut(f"nothing arrived for {timeout:g} s"))
            return
        self._watch = loop.call_later(timeout / 4, self._look)

    def _stop_watching(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self.chunks()

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's chunks, at most :data:`MAX_CHUNK_BYTES` each."""
        content = self._response.content
        try:
            while True:
                chunk = await content.readany()
                if not chunk:
                    return
                if len(chunk) <= MAX_CHUNK_BYTES:
                    yield chunk
                    continue
                # What piled up while the reader was busy comes as one buffer; pieces
                # keep every live delta and log record made from one chunk bounded.
                with memoryview(chunk) as view:
                    for start in range(0, len(chunk), MAX_CHUNK_BYTES):
                        yield bytes(view[start : start + MAX_CHUNK_BYTES])
        except Exception as exc:
            raise _reading_error(self._aiohttp, exc, self._request) from exc
        finally:
            self._stop_watching()

    async def aclose(self) -> None:
        self._stop_watching()
        response = self._response
        if response.content.at_eof():
            response.release()  # the connection goes back to the pool
        else:
            response.close()  # stopped early: the rest of the body is not wanted


def _sending_error(aiohttp: Any, exc: Exception, request: httpx2.Request) -> Exception:
    """An aiohttp failure before the response started, as httpx2's exception. Messages
    are rebuilt where aiohttp's would carry the URL (credentials in a base URL) or its
    TLS context's repr."""
    message = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx2.ConnectTimeout(message, request=request)
    if isinstance(exc, aiohttp.SocketTimeoutError | asyncio.TimeoutError):
        return httpx2.ReadTimeout(message, request=request)
    if isinstance(exc, aiohttp.ClientConnectorError):
        reason = exc.strerror or str(exc.os_error) or type(exc.os_error).__name__
        return httpx2.ConnectError(
            f"cannot connect to {exc.host}:{exc.port}: {reason}", request=request
        )
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return httpx2.RemoteProtocolError(message, request=request)
    if isinstance(exc, aiohttp.ClientResponseError):
        return httpx2.RemoteProtocolError(f"{exc.status}, {exc.message}", request=request)
    if isinstance(exc, aiohttp.InvalidURL):
        return httpx2.UnsupportedProtocol("the URL is not one HTTP can reach", request=request)
    if isinstance(exc, aiohttp.ClientError | OSError):
        return httpx2.ConnectError(message, request=request)
    return exc


def _reading_error(aiohttp: Any, exc: Exception, request: httpx2.Request) -> Exception:
    """An aiohttp failure while a body was streaming, as httpx2's exception."""
    message = str(exc) or type(exc).__name__
    if isinstance(exc, ReadTimedOut | aiohttp.SocketTimeoutError | asyncio.TimeoutError):
        return httpx2.ReadTimeout(message, request=request)
    if isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError):
        return httpx2.RemoteProtocolError(message, request=request)
    if isinstance(exc, aiohttp.ClientError | OSError):
        return httpx2.ReadError(message, request=request)
    return exc


UNCAPPED = httpx2.Limits(
    max_connections=None, max_keepalive_connections=None, keepalive_expiry=KEEPALIVE_S
)
"""httpx2's pool as the default transport keeps its own: callers bound concurrency."""


@functools.lru_cache(maxsize=256)
def request_url(url: str) -> httpx2.URL:
    """``url`` parsed, once: a provider's URLs are few (one per endpoint and wire path,
    Gemini's one per model too) and httpx2 parses a string URL again for every request
    (about 20 microseconds, a tenth of a tool loop step's own cost without thoughtline's
    recording). A parsed URL is immutable, so every request may share it."""
    return httpx2.URL(url)


def default_http_client(
    timeout: httpx2.Timeout, *, verify: ssl.SSLContext | bool = True
) -> httpx2.AsyncClient:
    """The HTTP client provider calls use unless one is given: httpx2 on aiohttp, or on
    httpx2's own transport when the environment names a proxy reached over TLS or SOCKS
    (aiohttp speaks to plain HTTP proxies only).

    Raises :class:`~thoughtline.errors.ConfigError` (or ``EXTRA_MISSING``) for a proxy or
    trust store in the environment that cannot be used, naming the variable."""
    context = verifying_context(verify, trust_env=True)
    proxies = environment_proxies()
    if proxies.aiohttp_can_reach:
        return httpx2.AsyncClient(
            timeout=timeout, transport=AiohttpTransport(verify=context, proxies=proxies)
        )
    shown = ", ".join(f"{p.variable}={p.shown}" for p in _distinct(proxies.by_scheme.values()))
    logger.info("provider calls go through httpx2's own transport, for the proxy (%s)", shown)
    # trust_env off: the proxies and NO_PROXY are routed here, as on aiohttp's path
    # (httpx2 would mount its own from the environment, with its own NO_PROXY rules, and
    # the system's proxy settings on macOS and Windows).
    return httpx2.AsyncClient(
        timeout=timeout, transport=ProxyRouting(proxies, verify=context), trust_env=False
    )


class ProxyRouting(httpx2.AsyncBaseTransport):
    """httpx2's own connections, each call sent through the proxy the environment names
    for its URL or direct (:meth:`EnvironmentProxies.for_url`, the same decision as
    :class:`AiohttpTransport`'s): one connection pool per proxy, and one for direct
    calls, each made when first used."""

    def __init__(self, proxies: EnvironmentProxies, *, verify: ssl.SSLContext) -> None:
        self._environment = proxies
        self._verify = verify
        self._pools: dict[Proxy | None, httpx2.AsyncHTTPTransport] = {}

    def _pool(self, proxy: Proxy | None) -> httpx2.AsyncHTTPTransport:
        pool = self._pools.get(proxy)
        if pool is None:
            pool = self._pools[proxy] = httpx2.AsyncHTTPTransport(
                verify=self._verify,
                trust_env=False,
                limits=UNCAPPED,
                proxy=None if proxy is None else httpx2.Proxy(proxy.url),
            )
        return pool

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._pool(self._environment.for_url(request.url)).handle_async_request(
            request
        )

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()


def _distinct(proxies: Iterable[Proxy]) -> list[Proxy]:
    return list(dict.fromkeys(proxies))
