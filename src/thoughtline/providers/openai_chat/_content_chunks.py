"""``content`` sent as a list of typed chunks (Mistral / Magistral), streamed or whole.

Magistral answers with ``[{"type": "thinking", "thinking": [{"type": "text", "text":
…}]}, {"type": "text", "text": …}]`` instead of a string, in ``message.content`` and in
each stream ``delta.content`` alike. The thinking chunks are the model's own reasoning
trace (``raw``); ``text`` chunks are the answer. Any other chunk type (images,
references, …) is reported by name so the translator can warn instead of dropping it
silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class ContentPiece:
    """One readable piece of a chunk list, in order."""

    kind: Literal["reasoning", "text", "unknown"]
    text: str = ""
    signature: str | None = None
    """A thinking chunk's opaque ``signature``, when the provider sends one."""
    chunk_type: str = ""
    """For ``unknown``: the chunk's ``type`` as sent."""


def _texts(value: Any) -> str:
    """A thinking chunk's ``thinking`` is a list of text chunks (or, leniently, a string)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return ""
    return "".join(
        item["text"]
        for item in value
        if isinstance(item, dict)
        and item.get("type") == "text"
        and isinstance(item.get("text"), str)
    )


def content_pieces(chunks: list[Any]) -> list[ContentPiece]:
    """The pieces of one ``content`` list; empty texts are left out."""
    pieces: list[ContentPiece] = []
    for chunk in chunks:
        if isinstance(chunk, str):
            if chunk:
                pieces.append(ContentPiece("text", chunk))
            continue
        if not isinstance(chunk, dict):
            continue
        chunk_type = chunk.get("type")
        if chunk_type == "text":
            text = chunk.get("text")
            if isinstance(text, str) and text:
                pieces.append(ContentPiece("text", text))
        elif chunk_type == "thinking":
            signature = chunk.get("signature")
            text = _texts(chunk.get("thinking"))
            if text or (isinstance(signature, str) and signature):
                pieces.append(
                    ContentPiece(
                        "reasoning",
                        text,
                        signature=signature if isinstance(signature, str) and signature else None,
                    )
                )
        else:
            pieces.append(ContentPiece("unknown", chunk_type=str(chunk_type)))
    return pieces
