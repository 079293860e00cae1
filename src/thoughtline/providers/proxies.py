"""The proxies provider calls go through, read from the environment as curl and httpx2
read them: ``HTTP_PROXY``, ``HTTPS_PROXY`` and ``ALL_PROXY`` (lower case wins), with
``NO_PROXY`` exempting hosts (:class:`NoProxy`: one matcher, curl's rules, whichever
transport carries the call).

A proxy named there is always used, never gone around: the default transport's
connections (aiohttp) speak to ``http://`` proxies; a proxy reached over TLS
(``https://``) or SOCKS (``socks5://``, ``socks5h://``) sends provider calls through
httpx2's own transport instead (:func:`thoughtline.providers.transport.default_http_client`).
Any other kind is a :class:`~thoughtline.errors.ConfigError` naming the variable, and a
SOCKS proxy without the ``socksio`` package an ``EXTRA_MISSING`` error. Messages show a
proxy without the credentials its URL may carry."""

from __future__ import annotations

import ipaddress
import os
import re
import urllib.request
from dataclasses import dataclass
from importlib.util import find_spec

import httpx2

from thoughtline.errors import ConfigError, ThoughtlineError

__all__ = ["EnvironmentProxies", "NoProxy", "Proxy", "environment_proxies", "proxy_for"]

SCHEMES = ("http", "https", "socks5", "socks5h")
"""The proxies provider calls can go through."""
SOCKS_SCHEMES = ("socks5", "socks5h")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Proxy:
    """A proxy the environment names: the variable that names it, and its URL as
    written there (credentials included)."""

    variable: str
    url: httpx2.URL

    @property
    def shown(self) -> str:
        """The proxy for messages and logs: scheme, host and port, never credentials."""
        url = self.url
        host = f"[{url.host}]" if ":" in url.host else url.host  # an IPv6 address
        port = f":{url.port}" if url.port is not None else ""
        return f"{url.scheme}://{host}{port}"


_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class NoProxy:
    """The hosts ``NO_PROXY`` sends direct, matched as curl matches them:

    - entries are separated by commas or spaces, and compared without regard to case;
    - a name covers itself and its subdomains: ``example.com`` (or ``.example.com``, or
      ``*.example.com``) covers ``example.com`` and ``api.example.com``, never
      ``badexample.com``;
    - an IP address covers itself, a CIDR block (``10.0.0.0/8``, ``fd00::/8``) every
      address in it; IPv6 may be written in brackets;
    - ``host:port`` covers that host on that port only;
    - ``*`` alone covers every host.

    urllib's matcher knows no CIDR blocks, ports or bracketed IPv6, and httpx2's takes a
    leading dot differently: both transports use this one, so a host goes the same way
    whichever carries the call."""

    everything: bool = False
    names: tuple[tuple[str, int | None], ...] = ()
    networks: tuple[tuple[_Network, int | None], ...] = ()

    @classmethod
    def parse(cls, value: str) -> NoProxy:
        names: list[tuple[str, int | None]] = []
        networks: list[tuple[_Network, int | None]] = []
        for entry in re.split(r"[,\s]+", value.strip().lower()):
            if entry == "*":
                return cls(everything=True)
            host, port = _host_and_port(entry)
            if not host:
                continue
            try:
                networks.append((ipaddress.ip_network(host, strict=False), port))
            except ValueError:
                names.append((host.removeprefix("*").strip("."), port))
        return cls(names=tuple(names), networks=tuple(networks))

    def covers(self, host: str, port: int | None = None) -> bool:
        """Whether a call to ``host`` (on ``port``) goes direct."""
        if self.everything:
            return True
        host = host.lower().strip("[]").rstrip(".")
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return any(
                (host == name or host.endswith("." + name)) and wanted in (None, port)
                for name, wanted in self.names
                if name
            )
        return any(
            address in network and wanted in (None, port) for network, wanted in self.networks
        )


def _host_and_port(entry: str) -> tuple[str, int | None]:
    """A ``NO_PROXY`` entry's host and port (None: any port)."""
    if entry.startswith("["):  # [v6] or [v6]:port
        host, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":")
        return host, int(port) if port.isdigit() else None
    if entry.count(":") == 1:  # name:port or v4:port (a bare IPv6 address has more)
        host, _, port = entry.partition(":")
        if port.isdigit():
            return host, int(port)
    return entry, None


@dataclass(frozen=True, slots=True)
class EnvironmentProxies:
    """The proxy for each scheme of provider URL (``http``, ``https``), if any, and the
    hosts ``NO_PROXY`` exempts."""

    by_scheme: dict[str, Proxy]
    exempt: NoProxy = NoProxy()

    @property
    def aiohttp_can_reach(self) -> bool:
        """Whether every proxy is one aiohttp speaks to (plain HTTP)."""
        return all(proxy.url.scheme == "http" for proxy in self.by_scheme.values())

    def for_url(self, url: httpx2.URL) -> Proxy | None:
        """The proxy a call to ``url`` goes through (None: direct)."""
        proxy = self.by_scheme.get(url.scheme)
        port = url.port or _DEFAULT_PORTS.get(url.scheme)
        if proxy is None or self.exempt.covers(url.host, port):
            return None
        return proxy


def environment_proxies() -> EnvironmentProxies:
    """The environment's proxies, checked: a kind nothing here speaks to raises
    :class:`ConfigError`, a SOCKS proxy without ``socksio`` an ``EXTRA_MISSING`` error."""
    named = urllib.request.getproxies_environment()
    exempt = NoProxy.parse(named.get("no", ""))
    if exempt.everything:
        return EnvironmentProxies({}, exempt)  # NO_PROXY=*: every host goes direct
    by_scheme: dict[str, Proxy] = {}
    for scheme in ("http", "https"):
        key = scheme if named.get(scheme) else "all"
        value = named.get(key, "").strip()
        if not value:
            continue
        if "://" not in value:
            value = f"http://{value}"  # "proxy.example:3128", as curl and httpx2 take it
        variable = _variable(key)
        try:
            proxy = Proxy(variable, httpx2.URL(value))
        except (httpx2.InvalidURL, UnicodeError) as exc:
            # Bytes that are not UTF-8 (os.environ keeps them as lone surrogates) say
            # nothing a person can read; another reason may quote the credentials.
            reason = "it holds bytes that are not UTF-8" if isinstance(exc, UnicodeError) else exc
            raise ConfigError(
                f"{variable} is not a URL ({_without_credentials(str(reason), value)}): set "
                "it to the proxy's URL, e.g. http://proxy.example:3128, or unset it."
            ) from None
        _check(proxy)
        by_scheme[scheme] = proxy
    return EnvironmentProxies(by_scheme, exempt)


def proxy_for(url: str) -> Proxy | None:
    """The proxy the environment names for ``url`` (None: it goes direct, NO_PROXY
    included), for messages about a call that failed."""
    try:
        return environment_proxies().for_url(httpx2.URL(url))
    except (ThoughtlineError, httpx2.InvalidURL):
        return None


def _without_credentials(text: str, url: str) -> str:
    """``text`` with the user name and password of ``url`` (as written) masked."""
    authority = url.split("://", 1)[-1].split("/", 1)[0]
    if "@" in authority:
        for secret in authority.rsplit("@", 1)[0].split(":", 1):
            if secret:
                text = text.replace(secret, "***")
    return text


def _variable(key: str) -> str:
    """The variable that named the proxy: the lower-case one wins, as urllib reads them."""
    lower = f"{key}_proxy"
    return lower if os.environ.get(lower) else lower.upper()


def _check(proxy: Proxy) -> None:
    scheme = proxy.url.scheme
    if scheme not in SCHEMES:
        raise ConfigError(
            f"{proxy.variable} names a {scheme}:// proxy ({proxy.shown}); provider calls go "
            "through http://, https://, socks5:// or socks5h:// proxies. Set it to one of "
            "those, unset it, or exempt the providers' hosts with NO_PROXY."
        )
    if not proxy.url.host:
        raise ConfigError(
            f"{proxy.variable} names no host ({scheme}://...): set it to the proxy's URL, "
            "e.g. http://proxy.example:3128, or unset it."
        )
    if scheme in SOCKS_SCHEMES and not _installed("socksio"):
        raise ThoughtlineError(
            "EXTRA_MISSING",
            f"{proxy.variable} names a SOCKS proxy ({proxy.shown}): provider calls reach it "
            "with the socks extra: pip install 'thoughtline[socks]' (missing module socksio).",
        )


def _installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or blocked package is not usable either
        return False
