"""What holds for every dialect alike: bad bytes refused the same way, errors in each
API's shape read by its SDK as the right exception, nothing of hidden reasoning in any
render, hostile text kept inside its frame, and any parsed history served by any wire."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anthropic
import openai
import pytest

from tests.support import call_context
from thoughtline.gateway.call import DIALECTS, GatewayCall, ReasoningAsk
from thoughtline.gateway.dialects import client_api, messages
from thoughtline.gateway.dialects._common import DialectError, Rendering
from thoughtline.model.events import Finish, StreamEvent, ToolCallDelta, ToolCallEnd, ToolCallStart
from thoughtline.model.parts import ReasoningPart, ToolResultPart
from thoughtline.model.requests import Message, ModelRequest
from thoughtline.providers.registry import WIRE_APIS, wire_for
from thoughtline.wire.jsonio import dumps_bytes

from .helpers import CANARY, reasoning, render_stream, response_of, text, the_answer, transport

NAMES = list(DIALECTS)


def a_call(dialect: str, *, stream: bool = True) -> GatewayCall:
    return GatewayCall(
        dialect=dialect,  # type: ignore[arg-type]
        model="fast",
        messages=(Message(role="user", content="hi"),),
        stream=stream,
        include_usage=True,
    )


@pytest.mark.parametrize("dialect", NAMES)
@pytest.mark.parametrize(
    ("raw", "limit", "code", "status"),
    [
        (b'{"model": "\xc3\x28"}', 1000, "JSON_INVALID", 400),
        (b'{"model": "\\udc00"}', 1000, "JSON_INVALID", 400),
        (b'{"model": tru', 1000, "JSON_INVALID", 400),
        (b'{"a":' + b"[" * 5000 + b"]" * 5000 + b"}", 20_000, "JSON_INVALID", 400),
        (b'"a string"', 1000, "REQUEST_INVALID", 400),
        (b"{}" + b" " * 2000, 1000, "REQUEST_TOO_LARGE", 413),
    ],
)
def test_bad_bytes_are_refused_alike(
    dialect: str, raw: bytes, limit: int, code: str, status: int
) -> None:
    api = client_api(dialect)  # type: ignore[arg-type]
    with pytest.raises(DialectError) as caught:
        api.parse(raw, max_bytes=limit)
    assert (caught.value.code, caught.value.status) == (code, status)
    assert caught.value.message.endswith(".")


STATUSES = {
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    429: "RateLimitError",
    500: "InternalServerError",
    503: "InternalServerError",
}


def openai_call(client: openai.OpenAI, dialect: str) -> Callable[[], object]:
    if dialect == "responses":
        return lambda: client.responses.create(model="fast", input="hi")
    return lambda: client.chat.completions.create(
        model="fast", messages=[{"role": "user", "content": "hi"}]
    )


@pytest.mark.parametrize("dialect", NAMES)
@pytest.mark.parametrize("status", sorted(STATUSES))
def test_an_error_reaches_the_sdk_as_its_exception_with_the_code_inside(
    dialect: str, status: int
) -> None:
    api = client_api(dialect)  # type: ignore[arg-type]
    code, body = api.failure("GATEWAY_CARRIERS_GONE", "Start the loop again.", status=status)
    assert code == status
    http = transport(dumps_bytes(body), status=status)
    exception: type[Exception]
    if dialect == "messages":
        exception = getattr(anthropic, STATUSES[status])
        client = anthropic.Anthropic(
            api_key="k", base_url="http://127.0.0.1:9", http_client=http, max_retries=0
        )
        with pytest.raises(exception) as caught:
            client.messages.create(
                model="fast", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
            )
        assert body["error"]["code"] == "GATEWAY_CARRIERS_GONE"
    else:
        exception = getattr(openai, STATUSES[status])
        client_ = openai.OpenAI(
            api_key="k", base_url="http://127.0.0.1:9/v1", http_client=http, max_retries=0
        )
        with pytest.raises(exception) as caught:
            openai_call(client_, dialect)()
        assert caught.value.code == "GATEWAY_CARRIERS_GONE"  # type: ignore[attr-defined]
    assert "Start the loop again." in str(caught.value)


CARRIER = {"item_id": f"rs_{CANARY}", "encrypted_content": f"enc-{CANARY}"}


def every_kind_of_reasoning() -> list[StreamEvent]:
    """The canary in every place reasoning can hide: summary text and signature, raw
    text, an encrypted carrier, redacted data, a reasoning item's id."""
    return [
        # One delta each, so a leak would carry the canary whole.
        *reasoning("s", f"summary {CANARY}", end={"signature": f"sig-{CANARY}"}, pieces=1),
        *reasoning("w", f"raw {CANARY}", kind="raw", pieces=1),
        *reasoning("e", "", kind="encrypted", start=CARRIER, end=CARRIER),
        *reasoning("d", "", kind="redacted", start={"data": f"data-{CANARY}"}),
        *the_answer(),
    ]


@pytest.mark.parametrize("dialect", NAMES)
def test_no_hidden_render_carries_the_canary_anywhere(dialect: str) -> None:
    api = client_api(dialect)  # type: ignore[arg-type]
    hidden = Rendering(shows_reasoning=False)
    call = GatewayCall(
        dialect=dialect,  # type: ignore[arg-type]
        model="fast",
        messages=(Message(role="user", content="hi"),),
        stream=True,
        include_usage=True,
    )
    # The client asks for everything; its hidden mode still gets nothing.
    call = replace(
        call,
        reasoning=ReasoningAsk(
            enabled=True, effort="high", summary="detailed", include_encrypted=True
        ),
    )
    streamed = render_stream(api.stream(call, hidden), every_kind_of_reasoning())
    body = dumps_bytes(api.render(call, hidden, response_of(every_kind_of_reasoning())))
    for rendered in (streamed, body):
        assert CANARY.encode() not in rendered
        assert b'reasoning_tokens":780' not in rendered and b"thinking_tokens" not in rendered
        assert b"the weather." in rendered
    # Shown, the same reply carries the summary: the canary test above can fail.
    shown = render_stream(
        api.stream(call, Rendering(shows_reasoning=True)), every_kind_of_reasoning()
    )
    assert CANARY.encode() in shown


NASTY = '</script><b>x</b>\n\ndata: [DONE]\n\nevent: error\r\n\u2028"\\\x00'


@pytest.mark.parametrize("dialect", NAMES)
def test_hostile_text_reaches_the_sdk_whole(dialect: str) -> None:
    api = client_api(dialect)  # type: ignore[arg-type]
    data = render_stream(
        api.stream(a_call(dialect), Rendering(shows_reasoning=True)),
        [*text("t", NASTY[:9], NASTY[9:]), Finish(reason="stop")],
    )
    http = transport(data, stream=True)
    if dialect == "messages":
        client = anthropic.Anthropic(
            api_key="k", base_url="http://127.0.0.1:9", http_client=http, max_retries=0
        )
        with client.messages.stream(
            model="fast", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        ) as reading:
            got = reading.get_final_text()
    elif dialect == "responses":
        client_ = openai.OpenAI(
            api_key="k", base_url="http://127.0.0.1:9/v1", http_client=http, max_retries=0
        )
        with client_.responses.stream(model="fast", input="hi") as reading_:
            got = reading_.get_final_response().output_text
    else:
        client_ = openai.OpenAI(
            api_key="k", base_url="http://127.0.0.1:9/v1", http_client=http, max_retries=0
        )
        chunks = client_.chat.completions.create(model="fast", messages=[], stream=True)
        got = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert got == NASTY


LOOP_BODIES: dict[str, dict[str, Any]] = {
    "chat_completions": {
        "model": "m",
        "messages": [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": f"raw {CANARY}",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "18 C"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {"name": "get_weather", "parameters": {"type": "object"}},
            }
        ],
    },
    "messages": {
        "model": "m",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"t {CANARY}", "signature": f"sig-{CANARY}"},
                    {
                        "type": "tool_use",
                        "id": "c1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "18 C"}],
            },
        ],
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
    },
    "responses": {
        "model": "m",
        "input": [
            {"role": "user", "content": "Weather?"},
            {
                "type": "reasoning",
                "id": f"rs_{CANARY}",
                "summary": [{"type": "summary_text", "text": f"s {CANARY}"}],
                "encrypted_content": f"enc-{CANARY}",
            },
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get_weather",
                "arguments": '{"city":"Paris"}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": "18 C"},
        ],
        "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
    },
}
WIRE_MODELS = {
    "anthropic-messages": ("anthropic", "claude-sonnet-4-6"),
    "openai-responses": ("openai", "gpt-5.1"),
    "openai-chat": ("deepseek", "deepseek-v4-pro"),
    "gemini": ("gemini", "gemini-3-pro-preview"),
    "ollama": ("ollama", "qwen3:8b"),
}


@pytest.mark.parametrize("dialect", NAMES)
@pytest.mark.parametrize("wire", WIRE_APIS)
def test_any_wire_serves_a_parsed_tool_loop_and_no_unchecked_carrier_goes_upstream(
    dialect: str, wire: str
) -> None:
    api = client_api(dialect)  # type: ignore[arg-type]
    call = api.parse_object(LOOP_BODIES[dialect])
    assert call.client_carriers()  # the client sent its reasoning back
    endpoint, model = WIRE_MODELS[wire]
    request = ModelRequest(
        model=model, messages=call.messages, system=call.system, tools=call.tools
    )
    body = dumps_bytes(wire_for(wire).build_request(request, call_context(endpoint, model)).body)
    assert b"18 C" in body and b"get_weather" in body
    # Parts of unknown origin: no wire sends them until the gateway checks and stamps them.
    assert CANARY.encode() not in body
    assert all(part.provider is None for part in call.client_carriers())
    results = [
        part
        for message in call.messages
        for part in message.parts
        if isinstance(part, ToolResultPart)
    ]
    assert [(part.tool_call_id, part.name) for part in results] == [("c1", "get_weather")]


def test_a_stamped_carrier_goes_back_to_the_wire_that_made_it() -> None:
    # What the gateway does once it accepts a client's signature: stamp it with the
    # route's endpoint and model; the Messages wire then sends the block back unchanged.
    call = messages.parse_object(LOOP_BODIES["messages"])
    stamped = tuple(
        Message(
            role=message.role,
            parts=[
                replace(part, provider="anthropic", model="claude-sonnet-4-6")
                if isinstance(part, ReasoningPart)
                else part
                for part in message.parts
            ],
        )
        for message in call.messages
    )
    request = ModelRequest(model="claude-sonnet-4-6", messages=stamped, tools=call.tools)
    body = (
        wire_for("anthropic-messages")
        .build_request(request, call_context("anthropic", "claude-sonnet-4-6"))
        .body
    )
    assert body["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": f"t {CANARY}",
        "signature": f"sig-{CANARY}",
    }


BLOB = '{"blob":"' + "x" * 1_000_000 + '"}'
HUGE_BODIES: dict[str, dict[str, Any]] = {
    "chat_completions": {
        "model": "m",
        "messages": [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": BLOB}}
                ],
            }
        ],
    },
    "messages": {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "c", "name": "f", "input": {"blob": "x" * 1_000_000}}
                ],
            }
        ],
    },
    "responses": {
        "model": "m",
        "input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": BLOB}],
    },
}


@pytest.mark.slow  # the SDKs take seconds to read 12,000 events
@pytest.mark.parametrize("dialect", NAMES)
def test_huge_arguments_are_read_and_streamed_whole_in_ten_thousand_deltas(dialect: str) -> None:
    api = client_api(dialect)  # type: ignore[arg-type]
    call = api.parse(dumps_bytes(HUGE_BODIES[dialect]), max_bytes=4 << 20)
    (read,) = call.messages[0].parts
    assert read.arguments == BLOB
    # Streamed: 12,000 deltas of a 240 kB argument (the SDKs' own reading is the cost).
    streamed = BLOB[:240_000] + '"}'
    pieces = [streamed[i : i + 20] for i in range(0, len(streamed), 20)]
    assert len(pieces) > 10_000
    events = [
        ToolCallStart(part_id="c", tool_call_id="c", name="f"),
        *(ToolCallDelta(part_id="c", arguments_delta=p) for p in pieces),
        ToolCallEnd(part_id="c"),
        Finish(reason="tool_calls"),
    ]
    data = render_stream(api.stream(a_call(dialect), Rendering(shows_reasoning=True)), events)
    # Bytes grow with the deltas, not with what came before them (the .done events and
    # the final response repeat the arguments a bounded number of times).
    assert len(data) < 4 * len(streamed) + 400 * len(pieces)
    http = transport(data, stream=True)
    if dialect == "messages":
        client = anthropic.Anthropic(
            api_key="k", base_url="http://127.0.0.1:9", http_client=http, max_retries=0
        )
        with client.messages.stream(
            model="fast", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        ) as reading:
            (block,) = reading.get_final_message().content
        assert block.input == {"blob": "x" * (240_000 - 9)}  # type: ignore[union-attr]
    elif dialect == "responses":
        client_ = openai.OpenAI(
            api_key="k", base_url="http://127.0.0.1:9/v1", http_client=http, max_retries=0
        )
        with client_.responses.stream(model="fast", input="hi") as reading_:
            (item,) = reading_.get_final_response().output
        assert item.arguments == streamed  # type: ignore[union-attr]
    else:
        client_ = openai.OpenAI(
            api_key="k", base_url="http://127.0.0.1:9/v1", http_client=http, max_retries=0
        )
        chunks = client_.chat.completions.create(model="fast", messages=[], stream=True)
        got = "".join(
            call.function.arguments or ""
            for chunk in chunks
            if chunk.choices
            for call in chunk.choices[0].delta.tool_calls or ()
        )  # type: ignore[union-attr]
        assert got == streamed


@pytest.mark.parametrize(
    ("dialect", "status", "kind"),
    [
        ("chat_completions", 401, "invalid_request_error"),
        ("chat_completions", 429, "requests"),
        ("responses", 503, "service_unavailable_error"),
        ("responses", 502, "server_error"),
        ("messages", 401, "authentication_error"),
        ("messages", 404, "not_found_error"),
        ("messages", 409, "invalid_request_error"),
        ("messages", 529, "overloaded_error"),
        ("messages", 503, "api_error"),
    ],
)
def test_an_errors_type_is_the_one_the_real_api_gives_that_status(
    dialect: str, status: int, kind: str
) -> None:
    _, body = client_api(dialect).failure("UNAUTHORIZED", "No.", status=status)  # type: ignore[arg-type]
    assert body["error"]["type"] == kind
    assert body["error"]["code"] == "UNAUTHORIZED"
