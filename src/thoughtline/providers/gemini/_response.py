"""A whole non-streaming ``generateContent`` body → the same events a stream yields.

The body is one ``GenerateContentResponse``, exactly like one stream chunk, so it runs
through :class:`GeminiTranslator`; both paths then feed the one accumulator.
"""

from __future__ import annotations

from thoughtline.model.events import StreamEvent
from thoughtline.providers.base import decode_single_payload
from thoughtline.providers.gemini._stream import GeminiTranslator


def decode_gemini_body(body: bytes) -> list[StreamEvent]:
    """Events for one complete response body (an ``StreamError`` last if it cannot be read)."""
    return decode_single_payload(body, GeminiTranslator())
