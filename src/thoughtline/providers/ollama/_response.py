"""A whole non-streaming ``/api/chat`` body → the same events a stream yields.

With ``"stream": false`` Ollama answers with one object shaped like the stream's last
line (``done: true``) holding the whole message, so it runs through
:class:`OllamaTranslator`; both paths then feed the one accumulator.
"""

from __future__ import annotations

from thoughtline.events import StreamEvent
from thoughtline.providers.base import malformed_error
from thoughtline.providers.ollama._stream import OllamaTranslator
from thoughtline.wire.jsonio import MalformedJSON, loads_object


def decode_ollama_body(body: bytes) -> list[StreamEvent]:
    """Events for one complete response body (an ``Error`` last if it cannot be read).

    As in a stream, parts still open when an error arrives are left open: the error is
    the last event and the accumulator marks those parts incomplete.
    """
    try:
        payload = loads_object(body)
    except MalformedJSON as exc:
        return [malformed_error(str(exc))]
    translator = OllamaTranslator()
    events = translator.translate("", payload)
    if events and events[-1].type == "error":
        return events
    events.extend(translator.finish())
    return events
