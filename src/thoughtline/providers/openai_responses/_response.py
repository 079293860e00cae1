"""A whole non-streaming Responses body → the same events the stream would produce.

The body's ``output`` items are replayed through the stream translator's item
completion (as if each arrived in ``response.output_item.done`` with nothing streamed
before), then its ``status`` picks the terminal handler. Both paths therefore build
parts, ids and metadata in one place and feed one accumulator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thoughtline.model.events import Finish, StreamEvent
from thoughtline.providers.base import malformed_error
from thoughtline.providers.openai_responses._errors import failed_response
from thoughtline.providers.openai_responses._stream import ResponsesTranslator
from thoughtline.wire.jsonio import MalformedJSON, loads_object


def decode_response_body(body: bytes) -> list[StreamEvent]:
    """Events for one complete ``POST /responses`` body (``"stream": false``)."""
    try:
        response = loads_object(body)
    except MalformedJSON as exc:
        return [malformed_error(str(exc))]
    if "output" not in response and isinstance(response.get("error"), Mapping):
        # An error document under HTTP 200 (some proxies answer like this).
        return [failed_response(response)]
    return replay_response(response)


def replay_response(response: Mapping[str, Any]) -> list[StreamEvent]:
    """Events for a complete response object, decided by its ``status``."""
    translator = ResponsesTranslator()
    events = translator.replay_output(response)
    status = response.get("status")
    if status == "incomplete":
        events.extend(translator.incomplete(response))
    elif status == "failed":
        events.extend(translator.failed(response))
    elif status == "cancelled":
        events.extend(translator.ended(response, Finish(reason="other", raw_reason="cancelled")))
    elif status in ("queued", "in_progress"):
        events.extend(translator.pending(response, str(status)))
    else:
        events.extend(translator.completed(response))
    return events
