"""Chat Completions servers: DeepSeek thinking mode, OpenRouter, and lenient local servers.

- DeepSeek thinking mode (every DeepSeek model, unless the request sets
  ``thinking.type: "disabled"``): an assistant message with ``tool_calls`` must carry
  ``reasoning_content``, even empty; otherwise 400 "The `reasoning_content` in the
  thinking mode must be passed back to the API.". The text itself is not verified, as on
  the API. ``deepseek-reasoner`` has named that thinking mode since DeepSeek-V3.1 (the
  R1 model once behind it called no tools and refused ``reasoning_content``; it is gone)
  and words the same refusal as it has since: 400 "Missing `reasoning_content` field in
  the assistant message at message index N. …".
- OpenRouter with a Gemini model behind it: the assistant message that made tool calls
  must re-send the ``reasoning_details`` it came with; otherwise the upstream's 400
  ("Function call is missing a thought_signature …") relayed the way OpenRouter relays
  errors (``metadata.raw``, ``metadata.provider_name``).
- llama.cpp, vLLM, Ollama: nothing is refused; what came back is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final, Literal

from thoughtline.testing.round_trips import CarrierBook, Rejection, json_error
from thoughtline.testing.transcript import SimRequest

ChatRule = Literal["deepseek", "openrouter", "lenient"]

_REASONER: Final = "deepseek-reasoner"
_THINKING_MODE_MISSING: Final = (
    "The `reasoning_content` in the thinking mode must be passed back to the API."
)
_REASONER_MISSING: Final = (
    "Missing `reasoning_content` field in the assistant message at message index {index}. "
    "For more information, please refer to "
    "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
)
_UPSTREAM_MISSING: Final = (
    "Function call is missing a thought_signature in functionCall parts. This is required "
    "for tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance. Additional data, function call `default_api:{name}` , position {position}. "
    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)
_ECHO_FIELDS: Final = ("reasoning_content", "reasoning", "thinking", "reasoning_details")


def _deepseek_error(message: str) -> Rejection:
    error = {
        "message": message,
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }
    return json_error(400, {"error": error})


def _assistants(request: SimRequest) -> Iterator[tuple[int, dict[str, Any]]]:
    messages = (request.body or {}).get("messages")
    if not isinstance(messages, list):
        return
    for index, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == "assistant":
            yield index, message


class ChatRoundTrips:
    """:class:`~thoughtline.testing.round_trips.RoundTripRule` for one chat ``dialect``
    of rules (see the module docstring). Also used for Ollama's ``/api/chat``."""

    def __init__(self, rule: ChatRule) -> None:
        self.rule = rule

    def remember(self, request: SimRequest, response: Mapping[str, Any], book: CarrierBook) -> None:
        if self.rule != "openrouter":
            return
        choices = response.get("choices")
        if not isinstance(choices, list) or not choices:
            return
        message = choices[0].get("message") or {}
        details = message.get("reasoning_details")
        for call in message.get("tool_calls") or ():
            book.issue("openrouter", str(call.get("id")), details or None)

    def check(self, request: SimRequest, book: CarrierBook) -> Rejection | None:
        for _, message in _assistants(request):
            for name in _ECHO_FIELDS:
                if name in message:
                    book.saw(request, name, message[name])
        if self.rule == "deepseek":
            return self._deepseek(request)
        if self.rule == "openrouter":
            return self._openrouter(request, book)
        return None

    def _deepseek(self, request: SimRequest) -> Rejection | None:
        body = request.body or {}
        model = (request.model or "").rsplit("/", 1)[-1]
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") == "disabled":
            return None
        for index, message in _assistants(request):
            if message.get("tool_calls") and "reasoning_content" not in message:
                if model == _REASONER:
                    return _deepseek_error(_REASONER_MISSING.format(index=index))
                return _deepseek_error(_THINKING_MODE_MISSING)
        return None

    def _openrouter(self, request: SimRequest, book: CarrierBook) -> Rejection | None:
        model = request.model or ""
        if not model.startswith("google/gemini"):
            return None
        for index, message in _assistants(request):
            calls = message.get("tool_calls")
            if not isinstance(calls, list) or not calls or not isinstance(calls[0], dict):
                continue
            made = [details for details in book.lookup("openrouter", calls[0].get("id")) if details]
            if not made or message.get("reasoning_details") in made:
                continue
            function = calls[0].get("function") or {}
            upstream = {
                "error": {
                    "code": 400,
                    "message": _UPSTREAM_MISSING.format(
                        name=function.get("name"), position=index + 1
                    ),
                    "status": "INVALID_ARGUMENT",
                }
            }
            return json_error(
                400,
                {
                    "error": {
                        "code": 400,
                        "message": "Provider returned error",
                        "metadata": {
                            "raw": json.dumps(upstream, ensure_ascii=False),
                            "provider_name": "Google AI Studio",
                        },
                    },
                    "user_id": "user_sim",
                },
            )
        return None
