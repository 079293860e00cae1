"""Upstreams that go wrong mid-call, through the real daemon and the official SDKs, for
each client API, streamed and not: each client gets its own API's error with
thoughtline's code inside (a status and body when nothing was streamed yet, the stream's
error event after what was), the provider's ``Retry-After``, whole frames only; the run
ends failed with what arrived kept, and the client's ``max_active`` place is free again."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from tests.gateway.conftest import Gateway, StartGateway
from tests.server.support import wait_for_status
from tests.support import all_bytes_under
from thoughtline.config import TimeoutSettings
from thoughtline.server.gateway import routes
from thoughtline.testing import Fault, SimReasoning, Simulator, Transcript

pytestmark = pytest.mark.slow  # a daemon per test, providers that stall for a timeout

ANSWER = "The partial answer goes on. " * 8
MODEL = "deepseek/deepseek-v4-pro"
HI = {"role": "user", "content": "Hi"}
TIMEOUTS = TimeoutSettings(connect=2, read=0.5, total=2)
"""Short enough that a stalled provider fails the call in a second or two."""


@dataclass(frozen=True, slots=True)
class Case:
    fault: Fault
    code: str
    status: int
    partial: bool
    """The answer had begun when the provider failed."""
    retry_after: str | None = None


CASES = {
    "stall_at_start": Case(Fault.stall(at="start", max_s=10), "PROVIDER_TIMEOUT", 504, False),
    "stall_mid_answer": Case(
        Fault.stall(at="mid_answer", max_s=10), "PROVIDER_STREAM_INTERRUPTED", 502, True
    ),
    "keep_alive_forever": Case(
        Fault.keep_alive_forever(at="mid_answer", interval_s=0.1, max_s=10),
        "PROVIDER_TIMEOUT",
        504,
        True,
    ),
    "endless_line": Case(Fault.endless_line(4 << 20), "PROVIDER_STREAM_INTERRUPTED", 502, False),
    "cut_mid_answer": Case(Fault.cut_mid_answer(), "PROVIDER_STREAM_INTERRUPTED", 502, True),
    "malformed_json": Case(Fault.malformed_json(), "PROVIDER_MALFORMED_RESPONSE", 502, False),
    "stream_error": Case(Fault.stream_error(), "PROVIDER_OVERLOADED", 503, False),
    "rate_limited": Case(
        Fault.rate_limited(retry_after_s=120), "PROVIDER_RATE_LIMITED", 429, False, "120"
    ),
    "overloaded_529": Case(Fault.overloaded(), "PROVIDER_OVERLOADED", 503, False),
    "server_error_500": Case(Fault.server_error(), "PROVIDER_SERVER_ERROR", 502, False),
}


@dataclass(slots=True)
class Got:
    """What a client got: the answer text streamed, and the error it raised or read."""

    text: str = ""
    status: int | None = None
    code: str | None = None
    message: str | None = None
    headers: Any = None


def status_error(got: Got, exc: openai.APIStatusError | anthropic.APIStatusError) -> Got:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body) if isinstance(body.get("error"), dict) else body
    got.status, got.code, got.headers = exc.status_code, error.get("code"), exc.response.headers
    got.message = error.get("message")
    return got


def chat(gateway: Gateway, stream: bool) -> Got:
    got = Got()
    messages: Any = [{"role": "user", "content": "Hi"}]
    try:
        if not stream:
            gateway.openai().chat.completions.create(model=MODEL, messages=messages)
            return got
        chunks = gateway.openai().chat.completions.create(
            model=MODEL, messages=messages, stream=True
        )
        got.headers = chunks.response.headers
        try:
            for chunk in chunks:
                got.text += "".join(choice.delta.content or "" for choice in chunk.choices)
        except openai.APIError as exc:  # the stream's error chunk
            body = exc.body if isinstance(exc.body, dict) else {}
            got.code, got.message = body.get("code"), body.get("message")
    except openai.APIStatusError as exc:
        return status_error(got, exc)
    return got


def responses(gateway: Gateway, stream: bool) -> Got:
    got = Got()
    try:
        if not stream:
            gateway.openai().responses.create(model=MODEL, input="Hi")
            return got
        events = gateway.openai().responses.create(model=MODEL, input="Hi", stream=True)
        got.headers = events.response.headers
        seen = [event for event in events]
    except openai.APIStatusError as exc:
        return status_error(got, exc)
    got.text = "".join(e.delta for e in seen if e.type == "response.output_text.delta")
    (error,) = [event for event in seen if event.type == "error"]
    assert seen[-1].type == "response.failed"
    assert seen[-1].response.error is not None
    got.code, got.message = error.code, error.message
    return got


def messages(gateway: Gateway, stream: bool) -> Got:
    got = Got()
    asked: Any = {
        "model": MODEL,
        "max_tokens": 500,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    try:
        if not stream:
            gateway.anthropic().messages.create(**asked)
            return got
        events = gateway.anthropic().messages.create(**asked, stream=True)
        got.headers = events.response.headers
        try:
            for event in events:
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    got.text += event.delta.text
        except anthropic.APIStatusError as exc:  # the stream's `event: error`, after a 200
            return status_error(got, exc)
    except anthropic.APIStatusError as exc:
        return status_error(got, exc)
    return got


CLIENTS = {"chat_completions": chat, "responses": responses, "messages": messages}
PATHS = {
    "chat_completions": "/openai/v1/chat/completions",
    "responses": "/openai/v1/responses",
    "messages": "/anthropic/v1/messages",
}


def upstream(sim: Simulator, fault: Fault | None) -> None:
    sim.reset()
    sim.script(Transcript(answer=ANSWER, chunk_chars=8), times=3)
    if fault is not None:
        sim.inject(fault, times=2)  # a retry meets it too


def raw_frames(gateway: Gateway, api: str) -> list[str]:
    """The stream's frames as the daemon wrote them, each whole."""
    body: dict[str, Any] = {"model": MODEL, "stream": True}
    if api == "responses":
        body["input"] = "Hi"
    else:
        body |= {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 500}
    token = gateway.tokens["app"]
    response = httpx2.post(
        f"{gateway.daemon.url}{PATHS[api]}",
        json=body,
        headers={"Authorization": f"Bearer {token}", "x-api-key": token},
        timeout=30,
    )
    assert response.status_code == 200
    assert response.text.endswith("\n\n"), "the stream ends on a whole frame"
    return response.text.removesuffix("\n\n").split("\n\n")


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", list(CLIENTS))
def test_a_provider_failing_mid_call_reaches_the_client_in_its_apis_shape(
    start_gateway: StartGateway, sim: Simulator, api: str, stream: bool, case: str
) -> None:
    expected = CASES[case]
    gateway = start_gateway(clients={"app": {"max_active": 1}}, timeouts=TIMEOUTS)
    upstream(sim, expected.fault)
    got = CLIENTS[api](gateway, stream)
    assert got.code == expected.code
    if stream and expected.partial:
        # The error event after what was streamed, in the stream's own shape.
        assert got.text and ANSWER.startswith(got.text)
        assert got.status in (None, 200)  # the SDK read the stream's error, not a status
    else:
        # Nothing streamed yet: a status and a body, as the provider's API answers.
        assert got.status == expected.status
        assert got.text == ""
        assert got.headers.get("retry-after") == expected.retry_after
    run = gateway.daemon.client().get(f"/v1/runs/{got.headers['thoughtline-run-id']}").json()
    assert run["status"] == "failed"
    (task,) = run["tasks"]
    assert task["error"]["code"] == expected.code
    # thoughtline's sentence, never the provider's body.
    assert got.message == task["error"]["message"]
    if expected.partial:  # what arrived is kept, and the run says why its cost is unknown
        assert task["output"] and ANSWER.startswith(task["output"])
        assert task["cost"]["amount"] is not None or task["cost"]["unknown_reason"]
    if stream and expected.partial:
        upstream(sim, expected.fault)
        *frames, last = raw_frames(gateway, api)
        for frame in [*frames, last]:
            for line in frame.split("\n"):
                assert line.startswith(("event: ", "data: ")), frame
                if line.startswith("data: ") and line != "data: [DONE]":
                    json.loads(line.removeprefix("data: "))
        assert expected.code in "".join(frame for frame in [*frames, last] if "error" in frame)
    # The failed call left the client's one place free.
    upstream(sim, None)
    assert CLIENTS[api](gateway, False).code is None


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_client_that_leaves_before_the_first_delta_cancels_its_run(
    start_gateway: StartGateway, sim: Simulator, stream: bool
) -> None:
    """The status waits for the run's first delta; a client that gives up meanwhile (a
    provider silent for long), on a stream or on a whole answer, still stops the run and
    frees its place: nobody pays for an answer nobody will read."""
    gateway = start_gateway(
        clients={"app": {"max_active": 1}},
        timeouts=TimeoutSettings(connect=2, read=120, total=300),
    )
    upstream(sim, Fault.stall(at="start", max_s=60))
    token = gateway.tokens["app"]
    with pytest.raises(httpx2.ReadTimeout):
        httpx2.post(
            f"{gateway.openai_url}/chat/completions",
            json={"model": MODEL, "stream": stream, "messages": [HI]},
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx2.Timeout(30, read=0.5),
        )
    client = gateway.daemon.client()
    (listed,) = client.get("/v1/runs", params={"client": "app"}).json()["runs"]
    run = wait_for_status(client, listed["id"], {"cancelled", "failed", "completed"})
    assert run["status"] == "cancelled"
    upstream(sim, None)
    assert chat(gateway, False).code is None


def test_a_hidden_client_gets_its_headers_while_the_model_still_reasons(
    start_gateway: StartGateway, sim: Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status waits for the first delta only so long: a model that reasons longer
    (none of it shown) does not hold back the client's headers, whose own wait for them
    may run out first."""
    monkeypatch.setattr(routes, "STATUS_HOLD_S", 0.2)
    gateway = start_gateway(timeouts=TimeoutSettings(connect=2, read=120, total=300))
    # The provider answered and says nothing yet, as a model reasoning before its
    # answer does for a client that sees none of the reasoning.
    upstream(sim, Fault.stall(at="start", max_s=60))
    token = gateway.tokens["app"]
    with httpx2.stream(
        "POST",
        f"{gateway.openai_url}/chat/completions",
        json={"model": MODEL, "stream": True, "messages": [HI]},
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30, read=20),
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        run_id = response.headers["thoughtline-run-id"]
        client = gateway.daemon.client()
        assert client.get(f"/v1/runs/{run_id}").json()["status"] == "running"
    # The client left: its run stops.
    assert wait_for_status(client, run_id, {"cancelled", "failed"})["status"] == "cancelled"


CANARY = "CANARY-GW-FAULT-5c1e"
REASONING_FAULTS = {
    "cut_mid_reasoning": Fault.cut_mid_reasoning(),
    "stall_mid_reasoning": Fault.stall(at="mid_reasoning", max_s=10),
    "keep_alive_mid_reasoning": Fault.keep_alive_forever(
        at="mid_reasoning", interval_s=0.1, max_s=10
    ),
    "stream_error_after_reasoning": Fault.stream_error(),
}


@pytest.mark.parametrize("fault", list(REASONING_FAULTS))
@pytest.mark.parametrize("api", list(CLIENTS))
def test_a_provider_failing_mid_reasoning_leaks_nothing_of_it_to_a_hidden_client(
    start_gateway: StartGateway, sim: Simulator, api: str, fault: str
) -> None:
    gateway = start_gateway(timeouts=TIMEOUTS)
    sim.reset()
    thought = (SimReasoning(kind="raw", text=f"secret plan {CANARY} " * 6),)
    sim.script(Transcript(reasoning=thought, answer=ANSWER, chunk_chars=8), times=3)
    sim.inject(REASONING_FAULTS[fault], times=2)
    path, body = {
        "chat_completions": ("/openai/v1/chat/completions", {"messages": [HI]}),
        "responses": ("/openai/v1/responses", {"input": "Hi"}),
        "messages": ("/anthropic/v1/messages", {"messages": [HI], "max_tokens": 500}),
    }[api]
    token = gateway.tokens["app"]
    response = httpx2.post(
        f"{gateway.daemon.url}{path}",
        json={"model": MODEL, "stream": True, **body},
        headers={"Authorization": f"Bearer {token}", "x-api-key": token},
        timeout=30,
    )
    assert CANARY.encode() not in response.content
    assert "secret plan" not in response.text
    run = gateway.daemon.client().get(f"/v1/runs/{response.headers['thoughtline-run-id']}")
    # Failed, or answered on a retry (a cut before any answer is retried).
    assert run.json()["status"] in ("failed", "completed")
    gateway.daemon.close()
    assert CANARY.encode() not in all_bytes_under(gateway.daemon.home)
