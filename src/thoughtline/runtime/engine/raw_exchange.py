"""What the ``provider_raw`` trace layer records of one model call: the redacted
exchange, with reasoning scrubbed from it unless the mode records reasoning."""

from __future__ import annotations

from typing import Any

from thoughtline.model.accumulator import ModelResponse
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.exchange import Exchange
from thoughtline.runtime.policy.disclosure import DisclosureGate


def provider_raw(
    gate: DisclosureGate,
    endpoint: Endpoint,
    exchange: Exchange,
    response: ModelResponse,
    echoed_credential: bool,
    *,
    echoes: bool = False,
) -> dict[str, Any]:
    """The exchange for the provider_raw layer, reasoning scrubbed unless ``gate``
    records it: the response's, and the request's when it ``echoes`` earlier steps (it
    carries their reasoning back to the provider).

    When the model echoed a loaded key, its pieces cut across the stream's strings are
    removed too (the transport redacted whole values only, as the chunks arrived)."""
    raw = exchange.to_dict()
    if echoes and not gate.records:
        from thoughtline.runtime.policy.scrub_requests import scrub_request

        raw["request_body"] = scrub_request(exchange.request_body)
    body = exchange.response_body
    if body is not None and echoed_credential:
        body = gate.redactor.split_pieces(body)
        raw["response_body"] = body.decode("utf-8", errors="replace")
    if not gate.requests_reasoning:  # hidden: no reasoning-derived timing either
        raw["timings"]["first_reasoning_ms"] = None
    if not gate.records and body is not None and (exchange.status is None or exchange.status < 400):
        from thoughtline.runtime.policy.scrub import scrub_reasoning

        scrubbed = scrub_reasoning(
            body,
            wire_api=exchange.wire_api,
            streamed=exchange.streamed,
            endpoint=endpoint,
        )
        raw["response_body"] = scrubbed.decode("utf-8", errors="replace")
        raw["reasoning_scrubbed"] = True
    else:
        raw["reasoning_scrubbed"] = False
    raw["token_diagnostics"] = {
        "input_tokens": response.usage.input_tokens,
        "output_tokens": response.usage.output_tokens,
        "reasoning_tokens": response.usage.reasoning_tokens,
        "cached_input_tokens": response.usage.cached_input_tokens,
        "total_tokens": response.usage.total_tokens,
    }
    return raw
