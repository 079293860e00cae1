"""A whole non-streaming ``/api/chat`` body → the same events a stream yields.

With ``"stream": false`` Ollama answers with one object shaped like the stream's last
line (``done: true``) holding the whole message, so it runs through
:class:`OllamaTranslator`; both paths then feed the one accumulator.
"""

from __future__ import annotations

from thoughtline.model.events import StreamEvent
from thoughtline.providers.base import decode_single_payload
from thoughtline.providers.ollama._stream import OllamaTranslator


def decode_ollama_body(body: bytes, reasoning_field: str = "auto") -> list[StreamEvent]:
    """Events for one complete response body (an ``StreamError`` last if it cannot be read)."""
    return decode_single_payload(body, OllamaTranslator(reasoning_field))
