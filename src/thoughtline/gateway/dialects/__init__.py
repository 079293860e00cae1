"""The three client APIs the gateway speaks, one package each: ``chat_completions``,
``messages`` (Anthropic) and ``responses``. Each reads a body into a
:class:`~thoughtline.gateway.call.GatewayCall` (``parse``), renders a reply from the
gated events (its stream class: ``feed`` each event, then ``close``) or from the final
response (``render``), and writes an error in its API's shape (``error_response``).
:func:`client_api` hands out one API's functions by its name, for code that serves all
three alike. They import nothing above the provider layer's model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from thoughtline.errors import ErrorCode
from thoughtline.gateway.call import Dialect, GatewayCall
from thoughtline.gateway.dialects import chat_completions, messages, responses
from thoughtline.gateway.dialects._common import (
    BodyParser,
    DialectError,
    Rendering,
    read_json,
)
from thoughtline.model.accumulator import ModelResponse
from thoughtline.model.events import StreamEvent

__all__ = [
    "ClientApi",
    "DialectError",
    "Rendering",
    "ReplyStream",
    "client_api",
    "read_json",
]


class ReplyStream(Protocol):
    """One streamed reply in a client's API."""

    @property
    def content_type(self) -> str:
        """The reply's media type (``text/event-stream``)."""
        ...

    def feed(self, event: StreamEvent) -> bytes:
        """The bytes this event adds to the reply (often none)."""
        ...

    def close(self) -> bytes:
        """The reply's last bytes: its end, or the API's error after a failure."""
        ...


@dataclass(frozen=True, slots=True)
class ClientApi:
    """One client API's functions (see the module docstring)."""

    name: Dialect
    parse: BodyParser
    """``parse(raw, *, max_bytes)``: the call a body asks for, or a :class:`DialectError`."""
    parse_object: Callable[[dict[str, Any]], GatewayCall]
    """The same for a body already read as a JSON object."""
    stream: Callable[[GatewayCall, Rendering], ReplyStream]
    render: Callable[[GatewayCall, Rendering, ModelResponse], dict[str, Any]]
    error_response: Callable[..., tuple[int, dict[str, Any]]]
    """``error_response(code, message, *, status, param=None)``: status and body."""

    def error(self, error: DialectError) -> tuple[int, dict[str, Any]]:
        """A refusal's status and body in this API's shape."""
        return self.error_response(
            error.code, error.message, status=error.status, param=error.param
        )

    def failure(self, code: ErrorCode, message: str, *, status: int) -> tuple[int, dict[str, Any]]:
        """Any other error (401, 404, 409, 429, 5xx) in this API's shape."""
        return self.error_response(code, message, status=status)


_APIS: dict[Dialect, ClientApi] = {
    "chat_completions": ClientApi(
        name="chat_completions",
        parse=chat_completions.parse,
        parse_object=chat_completions.parse_object,
        stream=chat_completions.ChatCompletionsStream,
        render=chat_completions.render,
        error_response=chat_completions.error_response,
    ),
    "messages": ClientApi(
        name="messages",
        parse=messages.parse,
        parse_object=messages.parse_object,
        stream=messages.MessagesStream,
        render=messages.render,
        error_response=messages.error_response,
    ),
    "responses": ClientApi(
        name="responses",
        parse=responses.parse,
        parse_object=responses.parse_object,
        stream=responses.ResponsesStream,
        render=responses.render,
        error_response=responses.error_response,
    ),
}


def client_api(name: Dialect) -> ClientApi:
    """The functions of the client API ``name``."""
    return _APIS[name]
