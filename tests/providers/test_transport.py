"""The default transport (httpx2 on aiohttp) against real loopback servers: what it sends,
what it hands back undecoded, and every failure as the httpx2 error the provider layer
maps."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import os
import ssl
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import httpx2
import pytest

from tests.providers.loopback import answering, raw_server, read_request
from thoughtline import EndpointRegistry, ModelRequest, ProviderClient, RetryPolicy, Timeouts
from thoughtline.providers.transport import (
    MAX_CHUNK_BYTES,
    READ_BYTES,
    AiohttpTransport,
    _read_at_most,
    default_http_client,
)


def client() -> httpx2.AsyncClient:
    return default_http_client(httpx2.Timeout(connect=2, read=0.3, write=2, pool=2))


async def test_the_request_goes_out_as_httpx2_built_it_and_bodies_come_back_undecoded() -> None:
    seen: list[bytes] = []
    compressed = gzip.compress(b'{"answer": "<b>not markup</b> \xc3\xa9"}')

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
            b"Content-Length: " + str(len(compressed)).encode() + b"\r\n\r\n" + compressed
        )
        await writer.drain()
        writer.close()

    async with raw_server(handler) as url, client() as http:
        response = await http.post(url + "/v1/messages", json={"q": 1}, headers={"x-k": "v"})
    assert response.status_code == 200
    assert response.json() == {"answer": "<b>not markup</b> é"}  # httpx2 decoded the gzip once
    request = seen[0].decode()
    assert request.startswith("POST /v1/messages HTTP/1.1\r\n")
    assert "x-k: v" in request.lower()
    assert f"user-agent: python-httpx2/{httpx2.__version__}" in request.lower()
    assert "aiohttp" not in request.lower()
    assert request.endswith('{"q":1}')


async def test_a_stream_arrives_chunk_by_chunk_as_the_server_writes_it() -> None:
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        await writer.drain()
        await release.wait()
        writer.write(b"6\r\nsecond\r\n0\r\n\r\n")
        await writer.drain()
        writer.close()

    async with raw_server(handler) as url, client() as http, http.stream("GET", url) as response:
        chunks = response.aiter_raw()
        assert await anext(chunks) == b"first"  # before the server sent the rest
        release.set()
        assert [chunk async for chunk in chunks] == [b"second"]


@pytest.mark.parametrize(
    ("ending", "error"),
    [
        ("cut", httpx2.RemoteProtocolError),  # the chunked body ends without its last chunk
        ("stall", httpx2.ReadTimeout),  # nothing more within the read timeout (0.3 s)
        ("stall later", httpx2.ReadTimeout),  # the same after more chunks came in
    ],
)
async def test_a_body_that_stops_is_the_httpx2_error_the_provider_layer_maps(
    ending: str, error: type[Exception]
) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\npart\r\n")
        await writer.drain()
        if ending == "stall later":
            for _ in range(3):
                await asyncio.sleep(0.1)
                writer.write(b"4\r\npart\r\n")
                await writer.drain()
        if ending.startswith("stall"):
            await asyncio.sleep(5)
        writer.close()

    received: list[bytes] = []

    async def read_to_the_end(response: httpx2.Response) -> None:
        async for chunk in response.aiter_raw():
            received.append(chunk)

    async with raw_server(handler) as url, client() as http, http.stream("GET", url) as response:
        started = time.monotonic()
        with pytest.raises(error):
            await read_to_the_end(response)
    assert b"".join(received) == b"part" * (4 if ending == "stall later" else 1)
    if ending != "cut":  # silent for the read timeout (0.3 s), never twice as long
        assert 0.3 <= time.monotonic() - started - 0.1 * (received.count(b"part") - 1) < 1.5


async def test_a_server_that_is_not_there_is_a_connect_error_naming_host_and_port() -> None:
    async with raw_server(read_request) as url:
        pass  # closed again: nothing listens on the port now
    async with client() as http:
        with pytest.raises(httpx2.ConnectError) as raised:
            await http.get(url)
    host_port = url.removeprefix("http://")
    assert str(raised.value).startswith(f"cannot connect to {host_port}: ")
    assert "SSLContext" not in str(raised.value)


async def test_an_unreachable_provider_reads_as_provider_unreachable_with_the_base_url() -> None:
    async with raw_server(read_request) as url:
        pass
    environ = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-canary-transport-0000"}
    endpoint = EndpointRegistry(environ=environ).resolve("anthropic")
    retry = RetryPolicy(max_retries=0)
    async with ProviderClient(endpoint, retry=retry, timeouts=Timeouts(connect=2)) as provider:
        call = await provider.complete(ModelRequest.simple("claude-sonnet-4-6", "hi"))
    error = call.response.error
    assert error is not None and error.code == "PROVIDER_UNREACHABLE"
    assert url in error.message and "cannot connect to" in error.message
    assert "sk-ant-canary" not in error.message


def test_one_transport_serves_one_event_loop_after_another() -> None:
    transport = AiohttpTransport()

    async def one_request() -> int:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await writer.drain()

        async with raw_server(handler) as url:
            http = httpx2.AsyncClient(transport=transport)
            return (await http.get(url)).status_code

    assert asyncio.run(one_request()) == 204
    assert asyncio.run(one_request()) == 204  # the first loop's session is gone with it


def test_a_client_its_user_never_closed_leaves_no_error_at_exit(
    environ: dict[str, str],
) -> None:
    script = (
        "import asyncio\n"
        "from thoughtline import EndpointRegistry, ModelRequest, ProviderClient\n"
        "client = ProviderClient(EndpointRegistry().resolve('anthropic'))\n"
        "call = asyncio.run(client.complete(ModelRequest.simple('claude-sonnet-4-6', 'hi')))\n"
        "print(call.response.text[:5])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, **environ},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    assert done.stderr == ""


async def test_a_body_that_piled_up_comes_in_bounded_pieces() -> None:
    body = bytes(range(256)) * 1024  # 256 KiB, written at once, read after it arrived

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        writer.close()

    async with raw_server(handler) as url, client() as http, http.stream("GET", url) as response:
        await asyncio.sleep(0.2)  # let it all arrive before reading
        chunks = [chunk async for chunk in response.aiter_raw()]
    assert b"".join(chunks) == body
    assert max(len(chunk) for chunk in chunks) <= MAX_CHUNK_BYTES


async def test_the_proxy_in_the_environment_carries_the_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HTTP_PROXY is honoured as with httpx2's own transport (a forward proxy gets the
    absolute URL), and NO_PROXY still exempts a host."""
    proxied: list[bytes] = []
    proxy, origin = answering(b"proxied", proxied), answering(b"direct")
    async with raw_server(proxy) as proxy_url, raw_server(origin) as origin_url:
        monkeypatch.setenv("HTTP_PROXY", proxy_url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        async with client() as http:
            assert (await http.get(origin_url + "/v1/models")).text == "proxied"
        assert proxied[0].startswith(f"GET {origin_url}/v1/models HTTP/1.1".encode())
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        async with client() as http:
            assert (await http.get(origin_url + "/v1/models")).text == "direct"


async def test_proxy_credentials_in_the_url_go_to_the_proxy_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxied: list[bytes] = []
    async with raw_server(answering(b"ok", proxied)) as proxy_url:
        authenticated = proxy_url.replace("http://", "http://agent:pa%3Ass@")
        monkeypatch.setenv("HTTP_PROXY", authenticated)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.setenv("HTTPS_PROXY", authenticated)
        async with client() as http:
            await http.get("http://provider.invalid/v1/models")
            # An https:// provider is reached through a CONNECT tunnel (refused here).
            with pytest.raises(httpx2.HTTPError):
                await http.get("https://provider.invalid/v1/models")
    credentials = b"proxy-authorization: basic " + base64.b64encode(b"agent:pa:ss").lower()
    plain, tunnel = (head.lower() for head in proxied)
    assert plain.startswith(b"get http://provider.invalid/v1/models http/1.1")
    assert tunnel.startswith(b"connect provider.invalid:443 http/1.1")
    for head in (plain, tunnel):
        assert credentials in head
        assert b"\r\nauthorization:" not in head


async def test_a_netrc_entry_for_the_provider_host_is_never_used(
    netrc_for_loopback: str,
) -> None:
    """A provider is called with its API key only: the user's ``~/.netrc`` password for
    the same host is not sent, and a request with its own Authorization still goes."""
    received: list[bytes] = []
    async with raw_server(answering(b"ok", received)) as url, client() as http:
        assert (await http.get(url + "/a")).text == "ok"
        bearer = {"Authorization": "Bearer sk-canary"}
        assert (await http.get(url + "/b", headers=bearer)).text == "ok"
    assert b"authorization" not in received[0].lower()
    assert b"authorization: bearer sk-canary" in received[1].lower()
    assert not any(
        b"someone" in head or b"Basic" in head or netrc_for_loopback.encode() in head
        for head in received
    )


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_a_streamed_read_allocates_a_heap_sized_buffer_not_asyncios_256_kib(
    scheme: str, self_signed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """asyncio reads a socket (and TLS reads its plaintext) into a new 256 KiB buffer per
    read, however little arrived: above glibc's mmap threshold, so every streamed delta
    cost three more system calls and freshly zeroed pages (bench/README.md, "Provider
    transport"). The connections a provider is read on ask for 64 KiB at most."""
    cert, key = self_signed
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server_tls = None
    if scheme == "https":
        server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_tls.load_cert_chain(cert, key)
    pieces = 40

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _read_at_most(writer.transport, READ_BYTES)  # the server shares this process's heap
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(pieces):  # one small piece at a time, as a model streams
            writer.write(b"6\r\ndelta\n\r\n")
            await writer.drain()
            await asyncio.sleep(0.005)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=server_tls)
    url = f"{scheme}://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    tracemalloc.start()
    try:
        async with client() as http, http.stream("GET", url) as response:
            chunks = response.aiter_raw()
            received = [await anext(chunks)]  # connected: TLS's own buffers are made
            before, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            received += [chunk async for chunk in chunks]
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        server.close()
        await server.wait_closed()
    assert b"".join(received) == b"delta\n" * pieces
    assert len(received) > pieces // 2  # most pieces were reads of their own
    assert peak - before < 128 * 1024


async def test_tls_is_checked_against_ssl_cert_file_when_set(
    self_signed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose certificate nothing vouches for is refused, naming why; the same
    server is trusted once SSL_CERT_FILE names its certificate (as with httpx2's own)."""
    cert, key = self_signed
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\ntrusted")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=server_tls)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    try:
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        async with client() as http:
            with pytest.raises(httpx2.ConnectError) as refused:
                await http.get(url)
        assert "certificate verify failed" in str(refused.value).lower()
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        async with client() as http:  # the trust store is read when the client is built
            assert (await http.get(url)).text == "trusted"
    finally:
        server.close()
        await server.wait_closed()


def test_transports_share_one_tls_context_per_trust_setting(
    monkeypatch: pytest.MonkeyPatch, self_signed: tuple[Path, Path]
) -> None:
    """Loading the system's certificates is made once, not once per client; naming
    other certificates gives another context (the TLS test above uses them)."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first, second = AiohttpTransport(), AiohttpTransport()
    assert isinstance(first._ssl, ssl.SSLContext)
    assert first._ssl is second._ssl
    monkeypatch.setenv("SSL_CERT_FILE", str(self_signed[0]))
    assert AiohttpTransport()._ssl is not first._ssl
    assert AiohttpTransport(trust_env=False)._ssl is not AiohttpTransport()._ssl
    assert AiohttpTransport(verify=False)._ssl is not first._ssl


async def test_cookies_are_httpx2s_alone() -> None:
    """A cookie the server sets comes back once, from httpx2's jar; cleared there, it is
    gone (aiohttp keeps no jar of its own)."""
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                seen.append(await read_request(reader))
            except asyncio.IncompleteReadError:
                break
            writer.write(
                b"HTTP/1.1 200 OK\r\nSet-Cookie: edge=abc; Path=/\r\nContent-Length: 0\r\n\r\n"
            )
            await writer.drain()
        writer.close()

    def cookie_lines(request: bytes) -> list[str]:
        lines = request.decode().split("\r\n")
        return [line.lower() for line in lines if line.lower().startswith("cookie:")]

    async with raw_server(handler) as url, client() as http:
        named = url.replace("127.0.0.1", "localhost")  # a jar keeps no cookie of an IP host
        await http.get(named)
        await http.get(named)
        http.cookies.clear()
        await http.get(named)
    assert cookie_lines(seen[1]) == ["cookie: edge=abc"]
    assert cookie_lines(seen[2]) == []
