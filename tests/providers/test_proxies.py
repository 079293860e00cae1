"""Proxies and trust stores from the environment, against real loopback servers: every
proxy named is used (aiohttp for http://, httpx2's own transport for https:// and SOCKS),
and every setting that cannot be used is an error naming its variable, never a detour
around the proxy nor a traceback."""

from __future__ import annotations

import asyncio
import ssl
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest

from tests.providers.loopback import answering, raw_server, read_request
from tests.providers.proxy_servers import Socks5Proxy
from thoughtline import EndpointRegistry, ModelRequest, ProviderClient, RetryPolicy
from thoughtline.errors import ConfigError, ThoughtlineError
from thoughtline.providers.proxies import NoProxy
from thoughtline.providers.transport import DIRECT_BODY, AiohttpTransport, default_http_client
from thoughtline.testing import Simulator, Transcript

PROXY_VARIABLES = [
    f"{name}_{suffix}" for name in ("http", "https", "all", "no") for suffix in ("proxy", "PROXY")
]
PASSWORD = "proxy-canary-pw"


@pytest.fixture(autouse=True)
def no_proxies_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start from an environment that names no proxy and no trust store."""
    for variable in (*PROXY_VARIABLES, "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(variable, raising=False)


def client() -> httpx2.AsyncClient:
    return default_http_client(httpx2.Timeout(connect=2, read=5, write=2, pool=2))


async def test_a_socks5_proxy_with_credentials_carries_a_streamed_provider_call(
    monkeypatch: pytest.MonkeyPatch, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(Transcript(answer="through the tunnel " * 40, chunk_chars=7))
    endpoint = EndpointRegistry(environ=environ).resolve("anthropic")
    with Socks5Proxy(credentials=("agent", PASSWORD)).running() as proxy:
        monkeypatch.setenv("ALL_PROXY", f"socks5://agent:{PASSWORD}@{proxy.url}")
        async with ProviderClient(endpoint) as provider:
            call = await provider.complete(ModelRequest.simple("claude-sonnet-4-6", "hi"))
    assert call.response.error is None
    assert call.response.text == "through the tunnel " * 40
    origin = httpx2.URL(endpoint.base_url)
    assert [(t.host, t.port, t.username) for t in proxy.tunnels] == [
        (origin.host, origin.port, "agent")
    ]
    assert proxy.refused == []


async def test_socks5h_leaves_the_provider_name_to_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    received: list[bytes] = []
    async with raw_server(answering(b"resolved there", received)) as origin:
        port = httpx2.URL(origin).port
        with Socks5Proxy(names={"provider.invalid": "127.0.0.1"}).running() as proxy:
            monkeypatch.setenv("HTTP_PROXY", f"socks5h://{proxy.url}")
            async with client() as http:
                response = await http.get(f"http://provider.invalid:{port}/v1/models")
    assert response.text == "resolved there"
    assert [(t.host, t.port) for t in proxy.tunnels] == [("provider.invalid", port)]
    assert received[0].startswith(b"GET /v1/models HTTP/1.1\r\n")


async def test_wrong_socks_credentials_fail_the_call_without_showing_them(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str]
) -> None:
    endpoint = EndpointRegistry(environ=environ).resolve("anthropic")
    with Socks5Proxy(credentials=("agent", "the-right-one")).running() as proxy:
        monkeypatch.setenv("all_proxy", f"socks5://agent:{PASSWORD}@{proxy.url}")
        no_retry = RetryPolicy(max_retries=0)
        async with ProviderClient(endpoint, retry=no_retry) as provider:
            call = await provider.complete(ModelRequest.simple("claude-sonnet-4-6", "hi"))
    assert proxy.refused == ["wrong credentials for agent"]
    assert proxy.tunnels == []
    error = call.response.error
    assert error is not None and error.code == "PROVIDER_UNREACHABLE"
    assert f"through the proxy all_proxy=socks5://{proxy.url}" in error.message
    assert PASSWORD not in error.message


@asynccontextmanager
async def tls_proxy(cert: Path, key: Path, received: list[bytes]) -> AsyncIterator[str]:
    """A forward proxy reached over TLS, answering every request itself."""
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await read_request(reader))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nvia https")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_tls)
    try:
        yield f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


async def test_a_proxy_reached_over_tls_is_used_and_its_certificate_checked(
    monkeypatch: pytest.MonkeyPatch, self_signed: tuple[Path, Path]
) -> None:
    cert, key = self_signed
    received: list[bytes] = []
    async with tls_proxy(cert, key, received) as proxy_url:
        monkeypatch.setenv("HTTP_PROXY", proxy_url.replace("https://", f"https://u:{PASSWORD}@"))
        async with client() as http:  # nothing vouches for the proxy's certificate yet
            with pytest.raises(httpx2.ConnectError, match=r"(?i)certificate verify failed"):
                await http.get("http://provider.invalid/v1/models")
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        async with client() as http:
            response = await http.get("http://provider.invalid/v1/models")
    assert response.text == "via https"
    head = received[0].lower()
    assert head.startswith(b"get http://provider.invalid/v1/models http/1.1\r\n")
    assert b"proxy-authorization: basic " in head  # the credentials went to the proxy


async def test_an_http_all_proxy_keeps_the_default_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxied: list[bytes] = []
    async with raw_server(answering(b"proxied", proxied)) as proxy_url:
        monkeypatch.setenv("ALL_PROXY", proxy_url)
        async with client() as http, http.stream("GET", "http://provider.invalid/a") as response:
            body = await response.aread()
            assert DIRECT_BODY in response.extensions  # read on aiohttp's connection
    assert body == b"proxied"
    assert proxied[0].startswith(b"GET http://provider.invalid/a HTTP/1.1\r\n")


async def test_no_proxy_still_exempts_hosts_from_a_socks_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with raw_server(answering(b"direct")) as origin:
        with Socks5Proxy().running() as proxy:
            monkeypatch.setenv("ALL_PROXY", f"socks5://{proxy.url}")
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            async with client() as http:
                assert (await http.get(origin + "/v1/models")).text == "direct"
    assert proxy.tunnels == []


async def test_no_proxy_matches_hosts_as_the_default_transport_does_behind_a_socks_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NO_PROXY=example.invalid exempts that host and its subdomains, not every name that
    ends the same way: badexample.invalid still goes through the proxy, on httpx2's
    transport as on aiohttp's (one matcher for both, urllib's, as curl reads it)."""
    async with raw_server(answering(b"through the proxy")) as origin:
        port = httpx2.URL(origin).port
        names = {"badexample.invalid": "127.0.0.1"}
        with Socks5Proxy(names=names).running() as proxy:
            monkeypatch.setenv("ALL_PROXY", f"socks5h://{proxy.url}")
            monkeypatch.setenv("NO_PROXY", "example.invalid,.other.invalid")
            async with client() as http:
                response = await http.get(f"http://badexample.invalid:{port}/v1/models")
                with pytest.raises(httpx2.ConnectError):  # exempt: looked up here, and not found
                    await http.get(f"http://api.example.invalid:{port}/v1/models")
    assert response.text == "through the proxy"
    assert [(t.host, t.port) for t in proxy.tunnels] == [("badexample.invalid", port)]


@pytest.mark.parametrize("kind", ["http", "socks5"])
async def test_a_cidr_block_in_no_proxy_sends_its_addresses_direct_on_either_transport(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """NO_PROXY=127.0.0.0/8 (as curl reads it): the loopback provider is called direct,
    whether the proxy is one aiohttp speaks to or one httpx2's own transport reaches."""
    proxied: list[bytes] = []
    async with (
        raw_server(answering(b"direct")) as origin,
        raw_server(answering(b"proxied", proxied)) as http_proxy,
    ):
        with Socks5Proxy().running() as socks:
            proxy = http_proxy if kind == "http" else f"socks5://{socks.url}"
            monkeypatch.setenv("ALL_PROXY", proxy)
            monkeypatch.setenv("NO_PROXY", "proxy.example, 127.0.0.0/8")
            async with client() as http:
                response = await http.get(origin + "/v1/models")
                assert (DIRECT_BODY in response.extensions) == (kind == "http")
    assert response.text == "direct"
    assert proxied == []
    assert socks.tunnels == []


async def test_behind_a_socks_proxy_a_netrc_entry_is_never_used_either(
    monkeypatch: pytest.MonkeyPatch, netrc_for_loopback: str
) -> None:
    """httpx2's own connections (a SOCKS proxy named, the provider exempt) send the API
    key only, as aiohttp's do: not the user's ``~/.netrc`` password for the host."""
    received: list[bytes] = []
    async with raw_server(answering(b"ok", received)) as origin:
        with Socks5Proxy().running() as proxy:
            monkeypatch.setenv("ALL_PROXY", f"socks5://{proxy.url}")
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            async with client() as http:
                assert (await http.get(origin + "/v1/models")).text == "ok"
    assert b"authorization" not in received[0].lower()
    assert netrc_for_loopback.encode() not in received[0]


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "direct"),
    [
        ("example.com", "example.com", 443, True),
        ("example.com", "api.example.com", 443, True),
        ("example.com", "badexample.com", 443, False),
        (".example.com", "example.com", 443, True),
        ("*.example.com", "api.EXAMPLE.com", 443, True),
        ("EXAMPLE.COM.", "example.com", 443, True),
        ("example.com:8443", "example.com", 8443, True),
        ("example.com:8443", "example.com", 443, False),
        ("10.0.0.0/8, fd00::/8", "10.20.30.40", 80, True),
        ("10.0.0.0/8 fd00::/8", "fd00::1", 80, True),
        ("10.0.0.0/8", "11.0.0.1", 80, False),
        ("[::1]", "::1", 80, True),
        ("[::1]:8080", "[::1]", 8080, True),
        ("::1", "::2", 80, False),
        ("127.0.0.1", "127.0.0.1", 80, True),
        ("127.0.0.1", "localhost", 80, False),
        ("*", "anything.example", 443, True),
        ("", "example.com", 443, False),
        (" , ,", "example.com", 443, False),
    ],
)
def test_no_proxy_entries_match_as_curl_reads_them(
    no_proxy: str, host: str, port: int, direct: bool
) -> None:
    assert NoProxy.parse(no_proxy).covers(host, port) is direct


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("ALL_PROXY", f"socks4://agent:{PASSWORD}@127.0.0.1:1080", "socks4://"),
        ("https_proxy", f"ftp://agent:{PASSWORD}@proxy.example:21", "ftp://"),
        ("HTTP_PROXY", "http://", "names no host"),
        ("all_proxy", f"socks4://agent:{PASSWORD}@[::1]:1080", "(socks4://[::1]:1080)"),
        # Not UTF-8: os.environ holds the bytes as lone surrogates.
        ("ALL_PROXY", f"socks5://agent:{PASSWORD}\udcfe@proxy.example:1080", "not UTF-8"),
        ("HTTPS_PROXY", f"http://agent:{PASSWORD}@proxy:port", "is not a URL"),
    ],
)
def test_a_proxy_that_cannot_be_used_is_an_error_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, named: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as raised:
        client()
    message = raised.value.message
    assert message.startswith(f"{variable} ")  # as the user spelled it
    assert named in message
    assert PASSWORD not in message


def test_a_socks_proxy_without_socksio_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "socksio", None)  # as if it were not installed
    monkeypatch.setenv("ALL_PROXY", f"socks5h://agent:{PASSWORD}@127.0.0.1:1080")
    with pytest.raises(ThoughtlineError) as raised:
        client()
    assert raised.value.code == "EXTRA_MISSING"
    assert "pip install 'thoughtline[socks]'" in raised.value.message
    assert "ALL_PROXY names a SOCKS proxy (socks5h://127.0.0.1:1080)" in raised.value.message
    assert PASSWORD not in raised.value.message


def test_the_aiohttp_transport_alone_refuses_a_proxy_it_cannot_speak_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Built directly (not through default_http_client), it never goes around the proxy."""
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.example:8443")
    with pytest.raises(ConfigError, match=r"HTTPS_PROXY .* default_http_client\(\)"):
        AiohttpTransport()


def test_a_trust_store_path_that_is_not_utf_8_is_named_escaped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", f"{tmp_path}/bundle-\udcff.pem")  # the byte 0xff
    with pytest.raises(ConfigError) as raised:
        client()
    message = raised.value.message
    assert message.startswith(f"SSL_CERT_FILE={tmp_path}/bundle-\\xff.pem cannot be loaded")
    message.encode("utf-8")  # storable and printable: no lone surrogate


@pytest.mark.parametrize("problem", ["missing", "not a certificate", "a directory"])
def test_a_trust_store_that_cannot_be_loaded_is_an_error_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, problem: str
) -> None:
    path = tmp_path / "bundle.pem"
    if problem == "not a certificate":
        path.write_text("<html>not a certificate</html>\n")
    elif problem == "a directory":
        path.mkdir()
    monkeypatch.setenv("SSL_CERT_FILE", str(path))
    with pytest.raises(ConfigError) as raised:
        client()
    assert raised.value.message.startswith(f"SSL_CERT_FILE={path} cannot be loaded")
    assert "unset it" in raised.value.message
