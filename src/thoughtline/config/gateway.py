"""``[gateway]``: the daemon's OpenAI- and Anthropic-compatible endpoints, their clients
(``[gateway.clients.NAME]``) and model aliases (``[gateway.models]``), as the config
holds them (checked in :mod:`thoughtline.config.gateway_checks`)."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from thoughtline.records import ChainOfThought

CLIENT_NAME: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
CLIENT_NAME_RULE: Final = (
    "use 1 to 64 lowercase letters, digits, '-' and '_', starting with a letter or digit"
)
TOKEN_SHA256: Final = re.compile(r"^[0-9a-f]{64}$")
GATEWAY_KEYS: Final = (
    "enabled",
    "clients",
    "models",
    "carriers_max",
    "carriers_ttl_s",
    "stream_backlog_max",
)
CLIENT_KEYS: Final = (
    "token_sha256",
    "chain_of_thought",
    "endpoints",
    "models",
    "max_cost",
    "max_active",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayClient:
    """One client of the gateway: who it is (its token's SHA-256, never the token), the
    one disclosure mode its calls get, what it may call and spend."""

    name: str
    token_sha256: str
    chain_of_thought: ChainOfThought = "hidden"
    endpoints: tuple[str, ...] | None = None
    """The endpoints it may call; ``None``: every one."""
    models: tuple[str, ...] | None = None
    """The models it may call (``ENDPOINT/MODEL`` or an alias); ``None``: every one."""
    max_cost: float | None = None
    """USD its calls may spend per UTC day; ``None``: no daily budget."""
    max_active: int | None = None
    """Calls it may have in flight at once; ``None``: only the daemon's limit."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewaySettings:
    """``[gateway]``: off unless ``enabled = true``."""

    enabled: bool = False
    clients: Mapping[str, GatewayClient] = field(default_factory=dict)
    models: Mapping[str, str] = field(default_factory=dict)
    """Aliases: a name a client sends as ``model`` → ``ENDPOINT/MODEL``."""
    carriers_max: int = 10_000
    """Assistant turns whose reasoning carriers the gateway holds in memory at most (the
    least recently used go first)."""
    carriers_ttl_s: float = 3600.0
    """How long a turn's carriers are held after they were last used."""
    stream_backlog_max: int = 4096
    """Live events a stream's client may leave unread before its call is stopped
    (``GATEWAY_CLIENT_STALLED``)."""


TOKEN_PREFIX: Final = "tlgw_"
"""Starts every client token, so one found in a file or a log is recognised."""


def new_token() -> str:
    """A client token: 256 random bits, URL-safe."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    """What the config keeps of a token (``token_sha256``): its SHA-256 in hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
