"""Gemini 3: each step's first ``functionCall`` part goes back with its
``thoughtSignature``.

Checked for Gemini 3 models on the model turns of the current turn (after the last
user message that is not only function responses), as the API validates them:

- the first ``functionCall`` part of a model turn without a ``thoughtSignature`` (when
  the simulator signed that call, or never made it): 400 ``INVALID_ARGUMENT`` "Function
  call is missing a thought_signature in functionCall parts. …" (dropped, or moved to a
  later parallel call);
- a ``thoughtSignature`` the simulator never handed out (altered, blanked): 400
  ``INVALID_ARGUMENT`` "Corrupted thought signature.".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from thoughtline.testing.round_trips import CarrierBook, Rejection, json_error
from thoughtline.testing.transcript import SimRequest

_MISSING = (
    "Function call is missing a thought_signature in functionCall parts. This is required "
    "for tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance. Additional data, function call `default_api:{name}` , position {position}. "
    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)


def _error(message: str) -> Rejection:
    return json_error(
        400, {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
    )


def _parts(content: object) -> list[dict[str, Any]]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []


def _current_turn_start(contents: Sequence[Any]) -> int:
    """Index after the last user message that asks something (not only results)."""
    start = 0
    for index, content in enumerate(contents):
        if not isinstance(content, dict) or content.get("role") == "model":
            continue
        if any("functionResponse" not in part for part in _parts(content)):
            start = index
    return start


class GeminiRoundTrips:
    """:class:`~thoughtline.testing.round_trips.RoundTripRule` for ``generateContent``."""

    def remember(self, request: SimRequest, response: Mapping[str, Any], book: CarrierBook) -> None:
        candidates = response.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            return
        parts = _parts(candidates[0].get("content"))
        signatures = [
            p["thoughtSignature"] for p in parts if isinstance(p.get("thoughtSignature"), str)
        ]
        for signature in signatures:
            book.issue("gemini", signature, True)
        for part in parts:
            call = part.get("functionCall")
            if isinstance(call, dict):
                # Whether the step was signed, whichever of its calls carried it.
                book.issue("gemini-call", str(call.get("id")), bool(signatures))

    def check(self, request: SimRequest, book: CarrierBook) -> Rejection | None:
        if not (request.model or "").startswith("gemini-3"):
            return None
        contents = (request.body or {}).get("contents")
        if not isinstance(contents, list):
            return None
        for content in contents:
            for part in _parts(content):
                if "thoughtSignature" in part:
                    signature = part["thoughtSignature"]
                    book.saw(request, "thought_signature", signature)
                    if not book.lookup("gemini", signature):
                        return _error("Corrupted thought signature.")
        for position in range(_current_turn_start(contents), len(contents)):
            content = contents[position]
            if not isinstance(content, dict) or content.get("role") != "model":
                continue
            calls = [part for part in _parts(content) if "functionCall" in part]
            if not calls or "thoughtSignature" in calls[0]:
                continue
            call = calls[0]["functionCall"]
            call = call if isinstance(call, dict) else {}
            made = book.lookup("gemini-call", call.get("id"))
            if made and not any(made):
                continue  # the simulator made this step unsigned: nothing to send back
            return _error(_MISSING.format(name=call.get("name"), position=position + 1))
        return None
