"""Checks every request passes before any route runs: the Host it was sent to, and for
state-changing requests where it came from and what it carries.

**Host allow-list (DNS rebinding).** A web page can point a hostname it controls at
127.0.0.1 and then talk to a loopback daemon as its own origin. Such a request still
names the page's hostname in ``Host``, so the daemon answers only the names it is
really served under:

- ``localhost``, any ``127.x.y.z``, ``[::1]``;
- the address it is bound to (``--host``);
- every name given with ``--allowed-host`` (or ``THOUGHTLINE_ALLOWED_HOSTS``).

The port in ``Host`` is not compared (a proxy may forward from another one); the name
is. Anything else gets a 421 ``HOST_NOT_ALLOWED``.

Bound to every address (``0.0.0.0`` / ``::``) the daemon requires a bearer token, and
a rebinding page never has it, so then any ``Host`` is answered: the token is the
protection, and the daemon cannot know every name and address that reaches the
machine. Naming hosts with ``--allowed-host`` turns the list back on there. Without a
token the list always applies.

**Cross-site requests.** Reads are protected by the browser (no CORS headers unless
configured), but a page on another site can still *send* a POST. So ``POST`` (and the
other unsafe methods) are refused with 403 ``CROSS_SITE_REQUEST`` when:

- ``Sec-Fetch-Site`` is ``cross-site`` or ``same-site`` (another origin of the same site,
  e.g. another port on localhost), or
- an ``Origin`` header is present and is neither the daemon's own origin (the scheme-less
  ``host:port`` of the request's allowed ``Host``) nor a configured CORS origin.

A configured CORS origin passes both checks: configuring it is the consent. Clients
that send neither header (curl, the CLI, scripts) are not browsers and pass.

A body on such a request must be ``application/json`` (415 ``UNSUPPORTED_MEDIA_TYPE``
otherwise): an HTML form can only send form encodings or ``text/plain``, and neither
is accepted.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from thoughtline.errors import ThoughtlineError
from thoughtline.server.errors import error_response
from thoughtline.server.gateway.failure import gateway_refusal

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$")
_PORT = re.compile(r"^[0-9]{1,5}$")
# Longer header values are cut in messages; the message names the problem, not the input.
_SHOWN = 80

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def split_host(value: str) -> tuple[str, str | None] | None:
    """``(name, port)`` of a ``Host`` header or an origin's authority, the name
    lowercased (IPv6 in brackets); ``None`` when it is not one."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
        try:
            ipaddress.IPv6Address(name[1:-1])
        except ValueError:
            return None
    else:
        name, colon, port_part = value.partition(":")
        rest = colon + port_part
        if not _NAME.match(name):
            return None
    if not rest:
        return name, None
    if not rest.startswith(":") or not _PORT.match(rest[1:]):
        return None
    return name, rest[1:]


def _address(name: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return None


def normalize_allowed_host(value: str) -> str:
    """One ``--allowed-host`` value as the name the allow-list compares: a host name or
    an IP address, optionally with a port (ignored). Raises for anything else, URLs
    included."""
    text = value.strip()
    if ":" in text and not text.startswith("[") and _address(text) is not None:
        text = f"[{text}]"  # a bare IPv6 address
    parts = split_host(text) if text else None
    if parts is None:
        raise ThoughtlineError(
            "SERVE_ALLOWED_HOST_INVALID",
            f"--allowed-host takes a host name or an IP address such as myhost.local or "
            f"192.168.1.20 (no scheme or path), not {value[:_SHOWN]!r}.",
        )
    return parts[0]


@dataclass(frozen=True, slots=True)
class AllowedHosts:
    """Which ``Host`` names the daemon answers (see the module docstring)."""

    names: frozenset[str]
    addresses: frozenset[IPAddress]
    any_host: bool

    @classmethod
    def build(cls, bound: str, extra: tuple[str, ...], *, token: bool) -> AllowedHosts:
        """For a daemon bound to ``bound``; ``extra`` are ``--allowed-host`` values."""
        names = {"localhost"}
        addresses: set[IPAddress] = set()
        for value in (bound, *extra):
            name = normalize_allowed_host(value)
            address = _address(name)
            if address is None:
                names.add(name)
            else:
                addresses.add(address)
        bound_address = _address(bound.strip("[]"))
        wildcard = bound_address is not None and bound_address.is_unspecified
        return cls(
            names=frozenset(names),
            addresses=frozenset(addresses),
            any_host=wildcard and token and not extra,
        )

    def allows(self, host: str) -> bool:
        """Whether a request whose ``Host`` header is ``host`` may be answered."""
        if self.any_host:
            return True
        parts = split_host(host)
        if parts is None:
            return False
        name = parts[0]
        address = _address(name)
        if address is None:
            return name in self.names
        if address.is_unspecified:
            return False  # never a destination a browser page could have used
        return address.is_loopback or address in self.addresses


class RequestGuard:
    """ASGI middleware refusing requests to a Host the daemon is not served under, and
    cross-site or non-JSON state-changing requests, before any route runs."""

    def __init__(
        self, app: ASGIApp, hosts: AllowedHosts, cors_origins: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.hosts = hosts
        self.cors_origins = frozenset(origin.rstrip("/").lower() for origin in cors_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host")
        refusal = self._check_host(host)
        if refusal is None and scope["type"] == "http" and scope["method"] in UNSAFE_METHODS:
            refusal = self._check_origin(headers, host or "") or _check_body_type(headers)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        status, code, message = refusal
        response = gateway_refusal(scope["path"], status, code, message)
        if response is None:
            response = error_response(status, code, message)
        await response(scope, receive, send)

    def _check_host(self, host: str | None) -> tuple[int, str, str] | None:
        if host is None:
            if self.hosts.any_host:
                return None
            return (400, "HOST_MISSING", "The request has no Host header; HTTP/1.1 needs one.")
        if self.hosts.allows(host):
            return None
        return (
            421,
            "HOST_NOT_ALLOWED",
            f"This daemon does not answer to the host {host[:_SHOWN]!r}; if that name "
            "really reaches it, start it with --allowed-host NAME.",
        )

    def _check_origin(self, headers: dict[str, str], host: str) -> tuple[int, str, str] | None:
        origin = headers.get("origin")
        allowed_cors = origin is not None and origin.rstrip("/").lower() in self.cors_origins
        site = headers.get("sec-fetch-site", "").strip().lower()
        if site in ("cross-site", "same-site") and not allowed_cors:
            return (
                403,
                "CROSS_SITE_REQUEST",
                "The daemon refuses state-changing requests sent by a page of another "
                "origin; use the daemon's own page, or allow that origin with --cors-origin.",
            )
        if origin is None or allowed_cors or _same_origin(origin, host):
            return None
        return (
            403,
            "CROSS_SITE_REQUEST",
            f"The daemon refuses state-changing requests from the origin {origin[:_SHOWN]!r}; "
            "use the daemon's own page, or allow that origin with --cors-origin.",
        )


def _same_origin(origin: str, host: str) -> bool:
    """Whether ``origin`` is the daemon's own origin as the request reached it (its
    ``Host``; scheme-less, so a TLS proxy in front does not matter)."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False  # includes "null" (sandboxed frames, file: pages)
    origin_host = split_host(parts.netloc)
    request_host = split_host(host)
    if origin_host is None or request_host is None:
        return False
    default = "443" if parts.scheme == "https" else "80"
    return origin_host[0] == request_host[0] and (origin_host[1] or default) == (
        request_host[1] or default
    )


def _check_body_type(headers: dict[str, str]) -> tuple[int, str, str] | None:
    content_type = headers.get("content-type")
    length = headers.get("content-length", "")
    has_body = "transfer-encoding" in headers or (length not in ("", "0"))
    if content_type is None and not has_body:
        return None  # e.g. POST .../cancel: nothing to parse
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type == "application/json":
        return None
    return (
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        "Request bodies must be JSON sent with 'Content-Type: application/json'.",
    )


def _headers(scope: Scope) -> dict[str, str]:
    """Request headers by lowercase name (latin-1, as HTTP defines them); a repeated
    header keeps its first value."""
    headers: dict[str, str] = {}
    for key, value in scope["headers"]:
        headers.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return headers
