"""Who is calling: a client token (``Authorization: Bearer`` or ``x-api-key``, as each
SDK sends its key) to its ``[gateway.clients.NAME]``, and what the client spent today
and has in flight.

The config keeps each token's SHA-256 only; the token a request carries is hashed and
compared with every client's in constant time (all of them, so timing does not tell
which one nearly matched). A token is never logged or stored.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from thoughtline.config.gateway import GatewayClient, token_digest
from thoughtline.records import iso
from thoughtline.server.gateway.failure import GatewayFailure

_DAY_S = 86_400


def given_token(headers: Mapping[str, str]) -> str | None:
    """The key a client sent: ``Authorization: Bearer T`` (OpenAI's SDKs) or
    ``x-api-key: T`` (Anthropic's)."""
    authorization = headers.get("authorization")
    if authorization is not None:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    key = headers.get("x-api-key")
    return key.strip() if key and key.strip() else None


def find_client(clients: Mapping[str, GatewayClient], token: str | None) -> GatewayClient:
    """The client ``token`` belongs to, or 401 ``UNAUTHORIZED``."""
    found: GatewayClient | None = None
    if token is not None:
        digest = token_digest(token).encode("ascii")
        for client in clients.values():
            if hmac.compare_digest(digest, client.token_sha256.encode("ascii")):
                found = client
    if found is None:
        said = (
            "No client token was sent"
            if token is None
            else "The API key sent is no client's token (a typo, or a client removed)"
        )
        raise GatewayFailure(
            401,
            "UNAUTHORIZED",
            f"{said}: send a client's token as the API key (Authorization: Bearer or "
            "x-api-key); make one with `thoughtline gateway add-client NAME`.",
        )
    return found


def usd(amount: float | None) -> str:
    """``$0.00003``, ``$2.5``: dollars as a person writes them."""
    return "$" + f"{amount or 0:,.6f}".rstrip("0").rstrip(".")


@dataclass(slots=True)
class _Day:
    day: int
    spent: float = 0.0


def today() -> int:
    """The current UTC day, as days since the epoch."""
    return int(time.time() // _DAY_S)


def day_start(day: int) -> str:
    """The first moment of ``day`` in the store's timestamp form."""
    return iso(day * _DAY_S)


@dataclass(slots=True)
class ClientLedger:
    """Each client's spend for the current UTC day and its calls in flight. The day's
    spend starts from what the store says the client's runs spent since midnight UTC
    (:meth:`seed`, once a day), so a restarted daemon keeps counting; then each call's
    cost is added as its run ends."""

    _days: dict[str, _Day] = field(default_factory=dict)
    _active: dict[str, int] = field(default_factory=dict)
    seeded: int | None = None
    """The day :meth:`seed` last read the store for."""

    def seed(self, day: int, spent: Mapping[str, float]) -> None:
        """The store's spend of each client on ``day`` (calls in flight since come on
        top when they end)."""
        if self.seeded == day:
            return
        self.seeded = day
        for name, amount in spent.items():
            self._today(name).spent = max(self._today(name).spent, amount)

    def _today(self, name: str) -> _Day:
        day = today()
        entry = self._days.get(name)
        if entry is None or entry.day != day:
            entry = self._days[name] = _Day(day)
        return entry

    def left_today(self, client: GatewayClient) -> float | None:
        """USD the client may still spend today; ``None``: no daily budget. Refuses
        (429 ``GATEWAY_BUDGET_EXCEEDED``, ``Retry-After`` until midnight UTC) once none
        is left."""
        if client.max_cost is None:
            return None
        left = client.max_cost - self._today(client.name).spent
        if left <= 0:
            raise self.day_spent(client, f"Client {client.name} spent its budget for today.")
        return left

    def day_spent(
        self, client: GatewayClient, why: str, headers: Mapping[str, str] | None = None
    ) -> GatewayFailure:
        """429 ``GATEWAY_BUDGET_EXCEEDED``: what is left of ``client``'s day cannot pay
        for the call; ``Retry-After`` says the seconds to midnight UTC."""
        retry = _DAY_S - int(time.time()) % _DAY_S
        return GatewayFailure(
            429,
            "GATEWAY_BUDGET_EXCEEDED",
            f"{why} The budget of client {client.name} is {usd(client.max_cost)} a day (UTC, "
            f"[gateway.clients.{client.name}] max_cost); it is renewed at midnight UTC, in "
            f"{retry} s.",
            headers={**(headers or {}), "Retry-After": str(retry)},
        )

    def spend(self, client: GatewayClient, amount: float | None) -> None:
        if amount:
            self._today(client.name).spent += amount

    def enter(self, client: GatewayClient) -> None:
        """One more call in flight, or 429 ``GATEWAY_CLIENT_BUSY`` at ``max_active``."""
        active = self._active.get(client.name, 0)
        if client.max_active is not None and active >= client.max_active:
            raise GatewayFailure(
                429,
                "GATEWAY_CLIENT_BUSY",
                f"Client {client.name} already has {active} call(s) in flight, its "
                f"max_active ([gateway.clients.{client.name}]); try again when one ends.",
                headers={"Retry-After": "1"},
            )
        self._active[client.name] = active + 1

    def leave(self, client: GatewayClient) -> None:
        self._active[client.name] = max(0, self._active.get(client.name, 1) - 1)
