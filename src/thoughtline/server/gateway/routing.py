"""Which endpoint and model a client's ``model`` names, and whether the client may call
it: ``ENDPOINT/MODEL`` (``anthropic/claude-sonnet-4-6``) or an alias of
``[gateway.models]``. Any wire may serve any client API: the call goes through the event
model, never wire to wire."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from thoughtline.config.gateway import GatewayClient, GatewaySettings
from thoughtline.server.gateway.failure import GatewayFailure


@dataclass(frozen=True, slots=True)
class Route:
    asked: str
    """The ``model`` as the client sent it (what its answers name)."""
    endpoint: str
    model: str


def route(
    settings: GatewaySettings, client: GatewayClient, asked: object, endpoints: Collection[str]
) -> Route:
    """The endpoint and model ``asked`` names (the endpoint one of ``endpoints``), if
    ``client`` may call them."""
    if not isinstance(asked, str) or not asked:
        raise GatewayFailure(
            400, "REQUEST_INVALID", "The request needs a model: ENDPOINT/MODEL or an alias."
        )
    target = settings.models.get(asked, asked)
    endpoint, slash, model = target.partition("/")
    if not slash or not endpoint or not model or endpoint not in endpoints:
        known = ", ".join(sorted(settings.models)) or "none"
        raise GatewayFailure(
            404,
            "GATEWAY_MODEL_UNKNOWN",
            f"Model {asked[:200]!r} is neither ENDPOINT/MODEL of a known endpoint (e.g. "
            f"anthropic/claude-sonnet-4-6; endpoints: {', '.join(sorted(endpoints))}) nor an "
            f"alias of [gateway.models] (aliases: {known}).",
        )
    if not allowed(client, asked, endpoint, model):
        raise GatewayFailure(
            403,
            "GATEWAY_MODEL_NOT_ALLOWED",
            f"Client {client.name} may not call {asked[:200]!r}; its "
            f"[gateway.clients.{client.name}] endpoints and models say what it may call.",
        )
    return Route(asked=asked, endpoint=endpoint, model=model)


def allowed(client: GatewayClient, asked: str, endpoint: str, model: str) -> bool:
    if client.endpoints is not None and endpoint not in client.endpoints:
        return False
    if client.models is None:
        return True
    return any(entry in (asked, f"{endpoint}/{model}", f"{endpoint}/*") for entry in client.models)


def listed(settings: GatewaySettings, client: GatewayClient) -> list[str]:
    """The model names ``client`` may send: the aliases it may use and the models its
    list names (a ``ENDPOINT/*`` entry stands for models it does not list)."""
    names = [
        alias
        for alias, target in settings.models.items()
        if allowed(client, alias, *target.split("/", 1))
    ]
    names += [
        entry
        for entry in client.models or ()
        if "/" in entry and not entry.endswith("/*") and entry not in names
    ]
    return sorted(names)
