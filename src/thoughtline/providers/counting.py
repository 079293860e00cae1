"""A provider's own input token count for a request (the gateway's ``count_tokens``).

The count is asked where the endpoint's wire API has a count API (:attr:`Wire.count
<thoughtline.providers.wire.Wire.count>`: Anthropic's ``/v1/messages/count_tokens``,
Gemini's ``models/{model}:countTokens``),
for exactly the input a call with the same request would send: the wire's own request
builder shapes it, its count unit keeps the input fields. One attempt, no retry (the
caller's SDK retries as it does for any call), on the endpoint's connections, key and
timeouts; a failure is the :class:`~thoughtline.errors.ProviderError` a call would end
with (the wire's error parser, credentials redacted from the message). Nothing is
estimated: an endpoint without a count API gets ``None``.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Final

import httpx2

from thoughtline.errors import ErrorCode, ProviderError
from thoughtline.model.requests import ModelRequest
from thoughtline.providers._capture import read_bounded
from thoughtline.providers._transport_errors import transport_error
from thoughtline.providers.base import CallContext
from thoughtline.providers.registry import WIRE_APIS, wire_for
from thoughtline.wire.jsonio import dumps_bytes

if TYPE_CHECKING:
    from thoughtline.providers.client import ProviderClient

_ANSWER_BYTES: Final = 64 * 1024
"""A count's answer is a few bytes; more is not read."""


def counts_tokens(wire_api: str) -> bool:
    """Whether the wire API has a count API thoughtline asks."""
    return wire_for(wire_api).count is not None


def counting_wires() -> tuple[str, ...]:
    """The wire APIs with a count API thoughtline asks, in the registry's order."""
    return tuple(wire_api for wire_api in WIRE_APIS if counts_tokens(wire_api))


async def count_input_tokens(client: ProviderClient, request: ModelRequest) -> int | None:
    """The provider's count of ``request``'s input tokens; ``None`` when the endpoint's
    wire API has no count API."""
    endpoint = client.endpoint
    wire = wire_for(endpoint.wire_api)
    if wire.count is None:
        return None
    capability = client.capabilities.lookup(endpoint.capability_key, request.model)
    context = CallContext(endpoint=endpoint, capability=capability)
    built = wire.count.request(wire.build_request(replace(request, stream=False), context))
    headers = {**built.headers, **endpoint.auth_headers()}
    http = client._http
    sent = http.build_request(
        built.method,
        built.url,
        headers=headers,
        content=dumps_bytes(built.body),
        timeout=client.timeouts.for_httpx(),
    )
    try:
        async with asyncio.timeout(client.timeouts.total):
            response = await http.send(sent, stream=True)
            try:
                body = await read_bounded(response)
            finally:
                await response.aclose()
    except TimeoutError:
        raise ProviderError(
            "PROVIDER_TIMEOUT",
            f"{endpoint.name} did not answer the token count within "
            f"{client.timeouts.total:g} s. Try again.",
        ) from None
    except httpx2.TransportError as exc:
        failed = transport_error(endpoint, client.timeouts, exc)
        code: ErrorCode = (
            "PROVIDER_TIMEOUT"
            if isinstance(exc, httpx2.TimeoutException)
            else "PROVIDER_UNREACHABLE"
        )
        raise ProviderError(code, failed.message, retryable=True) from None
    if response.status_code >= 400:
        error = wire.parse_error(response.status_code, response.headers, body, context)
        error.message = client.redactor.text(error.message)
        raise error
    count = wire.count.read(body[:_ANSWER_BYTES])
    if count is None:
        raise ProviderError(
            "PROVIDER_MALFORMED_RESPONSE",
            f"{endpoint.name} answered the token count without a count thoughtline can read.",
        )
    return count
