"""What the ``provider_raw`` trace layer records of one model call: the redacted
exchange, with reasoning scrubbed from it unless the mode records reasoning."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.model.accumulator import ModelResponse
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.exchange import Exchange
from thoughtline.records.raw_requests import DELTA_KEY, appended, request_delta
from thoughtline.runtime.policy.disclosure import DisclosureGate


@dataclass(slots=True)
class RawRequests:
    """The request of a task's last exchange written to the provider_raw layer: its
    event's id and its body as sent (parsed, credentials redacted), so the next one is
    stored as what changed since (:mod:`thoughtline.records.raw_requests`)."""

    event_id: str | None = None
    body: dict[str, Any] | None = None
    text: str = ""
    """The body's text (what the next request is compared with)."""

    def stored(self, raw: dict[str, Any], *, scrubbed: bool) -> dict[str, Any]:
        """``raw`` (an exchange's metadata, its ``request_body`` as sent) with the body
        kept for the next exchange, and stored whole or as a delta; echoed reasoning
        scrubbed from what is stored when ``scrubbed``. Call :meth:`written` with the
        event's id once it is added."""
        from thoughtline.runtime.policy.scrub_requests import scrub_request, scrub_request_delta

        sent = raw["request_body"]
        previous, after, previous_text = self.body, self.event_id, self.text
        self.body = self.event_id = None
        self.text = ""
        found = None if previous is None else appended(previous_text, previous, sent)
        body: Any = None
        if found is not None:
            body, changed = found
        else:
            try:
                body = orjson.loads(sent) if sent.startswith("{") else None
            except orjson.JSONDecodeError:
                body = None
            changed = None
        if isinstance(body, dict):
            self.body, self.text = body, sent
            if previous is not None and after is not None:
                if changed is None:
                    changed = request_delta(previous, body)
                delta = {"after": after, **changed}
                if scrubbed:
                    delta = scrub_request_delta(delta)
                return {
                    (DELTA_KEY if key == "request_body" else key): (
                        delta if key == "request_body" else value
                    )
                    for key, value in raw.items()
                }
        if scrubbed:
            raw["request_body"] = scrub_request(sent)
        return raw

    def written(self, event_id: str) -> None:
        """The exchange's event was added as ``event_id``."""
        if self.body is not None:
            self.event_id = event_id


def provider_raw(
    gate: DisclosureGate,
    endpoint: Endpoint,
    exchange: Exchange,
    response: ModelResponse,
    echoed_credential: bool,
    *,
    echoes: bool = False,
    requests: RawRequests | None = None,
) -> dict[str, Any]:
    """The exchange for the provider_raw layer, reasoning scrubbed unless ``gate``
    records it: the response's, and the request's when it ``echoes`` earlier steps (it
    carries their reasoning back to the provider). With ``requests`` (the task's earlier
    exchanges), a request after the first is stored as what changed since the last.

    When the model echoed a loaded key, its pieces cut across the stream's strings are
    removed too (the transport redacted whole values only, as the chunks arrived)."""
    raw = exchange.to_dict()
    scrub_sent = echoes and not gate.records
    if requests is not None:
        raw = requests.stored(raw, scrubbed=scrub_sent)
    elif scrub_sent:
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
