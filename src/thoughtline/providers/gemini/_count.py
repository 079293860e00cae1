"""Gemini's token count: ``POST {base_url}/v1beta/models/{model}:countTokens``, the input
of a ``generateContent`` request counted by the provider, free of charge.

The count request wraps the call's own body (:func:`~thoughtline.providers.gemini.
_request.build_gemini_request`: the same ``contents``, ``systemInstruction``, ``tools``,
``toolConfig`` and ``generationConfig``) as its ``generateContentRequest``, which names
the model (``models/{id}``); the answer's ``totalTokens`` is the count.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final
from urllib.parse import unquote

from thoughtline.providers.base import WireRequest
from thoughtline.wire.jsonio import MalformedJSON, loads_object

_MODELS: Final = "/v1beta/models/"


def count_request(call: WireRequest) -> WireRequest:
    """The count request of the input ``call`` (an unstreamed ``generateContent``)
    would send."""
    base, _, rest = call.url.rpartition(_MODELS)
    segment = rest.partition(":")[0]
    body = {"generateContentRequest": {"model": f"models/{unquote(segment)}", **call.body}}
    return replace(call, url=f"{base}{_MODELS}{segment}:countTokens", body=body, warnings=())


def read_count(body: bytes) -> int | None:
    """``totalTokens`` of the answer."""
    try:
        count = loads_object(body).get("totalTokens")
    except MalformedJSON:
        return None
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None
