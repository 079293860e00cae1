"""Anthropic's token count: ``POST {base_url}/v1/messages/count_tokens``, the input of a
Messages request counted by the provider, free of charge.

The count request is the call's own request (:func:`~thoughtline.providers.anthropic.
_request.build_request`: the same ``system``, ``messages``, ``tools``, ``tool_choice``
and ``thinking``) less what only generation takes (``max_tokens``, ``stream``,
``temperature``), which the count API refuses. Thinking blocks of earlier assistant
turns are not counted by the API; those of the turn a tool loop is in are.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from thoughtline.providers.anthropic._request import MESSAGES_PATH
from thoughtline.providers.base import WireRequest
from thoughtline.wire.jsonio import MalformedJSON, loads_object

COUNT_PATH: Final = "/v1/messages/count_tokens"

_COUNTED: Final = frozenset(
    {"model", "messages", "system", "tools", "tool_choice", "thinking", "output_config"}
)
"""The fields of a Messages request the count API takes."""


def count_request(call: WireRequest) -> WireRequest:
    """The count request of the input ``call`` would send."""
    base = call.url.removesuffix(MESSAGES_PATH)
    body = {key: value for key, value in call.body.items() if key in _COUNTED}
    return replace(call, url=base + COUNT_PATH, body=body, warnings=())


def read_count(body: bytes) -> int | None:
    """``input_tokens`` of the answer (``{"input_tokens": N}``)."""
    try:
        count = loads_object(body).get("input_tokens")
    except MalformedJSON:
        return None
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None
