"""A whole non-streaming ``generateContent`` body → the same events a stream yields.

The body is one ``GenerateContentResponse``, exactly like one stream chunk, so it runs
through :class:`GeminiTranslator`; both paths then feed the one accumulator.
"""

from __future__ import annotations

from thoughtline.events import StreamEvent
from thoughtline.providers.base import malformed_error
from thoughtline.providers.gemini._stream import GeminiTranslator
from thoughtline.wire.jsonio import MalformedJSON, loads_object


def decode_gemini_body(body: bytes) -> list[StreamEvent]:
    """Events for one complete response body (an ``Error`` last if it cannot be read).

    As in a stream, parts still open when an error arrives are left open: the error is
    the last event and the accumulator marks those parts incomplete.
    """
    try:
        payload = loads_object(body)
    except MalformedJSON as exc:
        return [malformed_error(str(exc))]
    translator = GeminiTranslator()
    events = translator.translate("", payload)
    if events and events[-1].type == "error":
        return events
    events.extend(translator.finish())
    return events
