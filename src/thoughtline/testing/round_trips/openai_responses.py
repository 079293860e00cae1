"""OpenAI Responses with ``store: false``: reasoning items go back with their carrier,
right before the item that followed them.

With ``store: false`` nothing is kept server-side, so a ``reasoning`` item in ``input``
is only as good as its ``encrypted_content``:

- no ``encrypted_content``: 404 "Item with id 'rs_…' not found. Items are not persisted
  when `store` is set to false. …" (the API tries to look it up by id), unless the item
  carries raw ``content``: only a server that returns raw reasoning (gpt-oss behind
  vLLM, DeepSeek's ``/responses``) hands such items out, and it takes them back;
- an ``encrypted_content`` the simulator never handed out (altered, blanked, invented):
  400 ``invalid_encrypted_content`` "The encrypted content … could not be verified.";
- not followed by the item that followed it in the response (its ``function_call`` with
  the same ``call_id``, or the assistant message): 400 "Item 'rs_…' of type 'reasoning'
  was provided without its required following item." (a reordered or cut history).

A ``function_call`` sent back without its reasoning item is accepted, as on the API
(the model continues without its reasoning); :attr:`CarrierBook.returned` shows what
came back. Requests that do not set ``store: false`` are not checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thoughtline.testing.round_trips import CarrierBook, Rejection, json_error
from thoughtline.testing.transcript import SimRequest


def _error(status: int, message: str, code: str | None, param: str | None = None) -> Rejection:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return json_error(status, {"error": error})


def _follower(item: Mapping[str, Any]) -> tuple[str, object]:
    """What identifies the item a reasoning item must stand before."""
    if item.get("type") == "function_call":
        return "function_call", item.get("call_id")
    return "message", item.get("role", "assistant")


class ResponsesRoundTrips:
    """:class:`~thoughtline.testing.round_trips.RoundTripRule` for ``/v1/responses``."""

    def remember(self, request: SimRequest, response: Mapping[str, Any], book: CarrierBook) -> None:
        output = response.get("output")
        if not isinstance(output, list):
            return
        for index, item in enumerate(output):
            encrypted = item.get("encrypted_content")
            if item.get("type") != "reasoning" or not isinstance(encrypted, str):
                continue
            following = output[index + 1] if index + 1 < len(output) else None
            book.issue(
                "responses",
                encrypted,
                None if following is None else _follower(following),
            )

    def check(self, request: SimRequest, book: CarrierBook) -> Rejection | None:
        body = request.body or {}
        items = body.get("input")
        if body.get("store") is not False or not isinstance(items, list):
            return None
        for index, item in enumerate(items):
            if not isinstance(item, dict) or item.get("type") != "reasoning":
                continue
            item_id = item.get("id")
            encrypted = item.get("encrypted_content")
            if not isinstance(encrypted, str) and item.get("content"):
                continue  # raw reasoning, as a raw-reasoning server takes it back
            if not isinstance(encrypted, str):
                return _error(
                    404,
                    f"Item with id '{item_id}' not found. Items are not persisted when "
                    "`store` is set to false. Try again with `store` set to true, or "
                    "remove this item from your input.",
                    None,
                    "input",
                )
            book.saw(request, "encrypted_content", encrypted)
            followers = book.lookup("responses", encrypted)
            if not followers:
                shown = f"{encrypted[:4]}...{encrypted[-4:]}" if len(encrypted) > 8 else encrypted
                return _error(
                    400,
                    f"The encrypted content {shown} could not be verified.",
                    "invalid_encrypted_content",
                )
            following = items[index + 1] if index + 1 < len(items) else None
            if not isinstance(following, dict) or _follower(following) not in followers:
                return _error(
                    400,
                    f"Item '{item_id}' of type 'reasoning' was provided without its "
                    "required following item.",
                    None,
                    "input",
                )
        return None
