"""Markup and bytes in a model's answer, through the real daemon: text with `</think>`,
`data: [DONE]`, SSE field lines, blank lines (LF and CRLF) and NUL reaches each official
SDK exactly as the upstream sent it, streamed and not, from a Chat Completions and an
Anthropic wire, and never breaks the stream's framing (the dialects' own tests feed
them rendered events; these go through the provider's decoder, the run and the gate)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from tests.gateway.conftest import Gateway, StartGateway
from thoughtline.testing import SimReasoning, Simulator, Transcript

pytestmark = pytest.mark.slow  # a daemon per test

HOSTILE = (
    "Answer: a</think>b <think>not reasoning</think> "
    'data: [DONE]\n\ndata: {"choices": []}\r\n\r\nevent: error\ndata: {}\n\n'
    "id: 7\nretry: 1\n: comment\n"
    "NUL \x00 here, \u2028 \u2029 \ufeff end\r"
)
"""An answer no framing may be broken by: SSE field lines and blank lines (LF and CRLF),
the think tags some wires read reasoning from (not leading the answer: a leading block
is reasoning by `reasoning_field = "auto"`), NUL, JavaScript's line separators and a
byte order mark."""

WIRES = {"deepseek": "deepseek/deepseek-v4-pro", "anthropic": "anthropic/claude-sonnet-4-6"}


def answer(gateway: Gateway, api: str, model: str, stream: bool) -> str:
    """The answer text as the client's official SDK decoded it."""
    if api == "chat_completions":
        messages: Any = [{"role": "user", "content": "Hi"}]
        completion = gateway.openai().chat.completions.create(
            model=model, messages=messages, stream=stream
        )
        if not stream:
            return str(completion.choices[0].message.content)
        return "".join(
            choice.delta.content or "" for chunk in completion for choice in chunk.choices
        )
    if api == "responses":
        if not stream:
            return str(gateway.openai().responses.create(model=model, input="Hi").output_text)
        with gateway.openai().responses.stream(model=model, input="Hi") as reading:
            return str(reading.get_final_response().output_text)
    asked: Any = {
        "model": model,
        "max_tokens": 500,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    if not stream:
        message = gateway.anthropic().messages.create(**asked)
        return "".join(block.text for block in message.content if block.type == "text")
    with gateway.anthropic().messages.stream(**asked) as reading:
        return str(reading.get_final_text())


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("wire", list(WIRES))
@pytest.mark.parametrize("api", ["chat_completions", "responses", "messages"])
def test_hostile_answer_text_reaches_the_sdk_exactly(
    start_gateway: StartGateway, sim: Simulator, api: str, wire: str, stream: bool
) -> None:
    gateway = start_gateway()
    # Cut in threes: a tag, a field name or a surrogate escape spans two deltas.
    sim.script(Transcript(answer=HOSTILE, chunk_chars=3))
    assert answer(gateway, api, WIRES[wire], stream) == HOSTILE


PATHS = {
    "chat_completions": (
        "/openai/v1/chat/completions",
        {"messages": [{"role": "user", "content": "Hi"}]},
    ),
    "responses": ("/openai/v1/responses", {"input": "Hi"}),
    "messages": (
        "/anthropic/v1/messages",
        {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 500},
    ),
}


@pytest.mark.parametrize("api", list(PATHS))
def test_hostile_text_never_breaks_a_streams_framing(
    start_gateway: StartGateway, sim: Simulator, api: str
) -> None:
    """Every frame the daemon writes is `event:` / `data:` lines of one JSON value each,
    and a surface client's reasoning carries the same text as safely."""
    gateway = start_gateway(clients={"app": {"chain_of_thought": "surface"}})
    thought = (SimReasoning(kind="raw", text=HOSTILE),)
    sim.script(Transcript(reasoning=thought, answer=HOSTILE, chunk_chars=3))
    path, body = PATHS[api]
    token = gateway.tokens["app"]
    response = httpx2.post(
        f"{gateway.daemon.url}{path}",
        json={"model": WIRES["deepseek"], "stream": True, **body},
        headers={"Authorization": f"Bearer {token}", "x-api-key": token},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    assert response.content.endswith(b"\n\n")
    assert b"\r" not in response.content and b"\x00" not in response.content
    values: list[Any] = []
    for frame in response.content.decode().removesuffix("\n\n").split("\n\n"):
        lines = frame.split("\n")
        assert all(line.startswith(("event: ", "data: ")) for line in lines), frame
        assert sum(line.startswith("data: ") for line in lines) == 1, frame
        data = next(line for line in lines if line.startswith("data: ")).removeprefix("data: ")
        if data != "[DONE]":
            values.append(json.loads(data))
    answered = streamed(api, values, "text")
    reasoned = streamed(api, values, "reasoning")
    assert answered == HOSTILE
    assert reasoned == HOSTILE


def streamed(api: str, values: list[Any], kind: str) -> str:
    """The answer (``text``) or reasoning text joined from a stream's JSON values."""
    out = ""
    for value in values:
        if api == "chat_completions":
            for choice in value.get("choices", []):
                key = "content" if kind == "text" else "reasoning_content"
                out += choice["delta"].get(key) or ""
        elif api == "responses":
            wanted = (
                ("response.output_text.delta",)
                if kind == "text"
                else ("response.reasoning_text.delta", "response.reasoning_summary_text.delta")
            )
            if value.get("type") in wanted:
                out += value["delta"]
        elif value.get("type") == "content_block_delta":
            delta = value["delta"]
            if kind == "text" and delta["type"] == "text_delta":
                out += delta["text"]
            elif kind == "reasoning" and delta["type"] == "thinking_delta":
                out += delta["thinking"]
    return out


CUT = "an emoji cut in two: a\ud83d\ude00b, a half alone: x\udc00y"
"""Text as a server that builds its strings in UTF-16 streams it, in deltas of one code
unit: the emoji's two surrogates in two frames, each escaped alone (``\\ud83d``)."""
JOINED = "an emoji cut in two: a\U0001f600b, a half alone: x\ufffdy"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("wire", list(WIRES))
@pytest.mark.parametrize("api", ["chat_completions", "responses", "messages"])
def test_an_emoji_cut_between_two_deltas_reaches_the_sdk_whole(
    start_gateway: StartGateway, sim: Simulator, api: str, wire: str, stream: bool
) -> None:
    gateway = start_gateway()
    sim.script(Transcript(answer=CUT, chunk_chars=1))
    assert answer(gateway, api, WIRES[wire], stream) == JOINED
