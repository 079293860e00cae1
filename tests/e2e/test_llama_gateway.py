"""The daemon's gateway in front of llama.cpp's own server (the session's, in
``conftest.py``): OpenAI's and Anthropic's official SDKs, unmodified, call the
``llamacpp`` endpoint through the daemon in the client's mode, as an application would use
a local model through thoughtline. What the simulator cannot show: a real server's
framing, usage and dropped streams, carried through the gateway's dialects."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from tests.e2e.conftest import PROMPT, LlamaServer
from tests.server.conftest import StartDaemon, start_daemon  # noqa: F401  (fixture)
from tests.server.support import LiveDaemon, wait_for_status
from thoughtline.config import Config
from thoughtline.config.gateway import GatewayClient, GatewaySettings, new_token, token_digest
from thoughtline.config.pricing import ConfiguredPrice
from thoughtline.records import ChainOfThought

pytestmark = [
    pytest.mark.slow,  # a model in the worker and a daemon per test
    pytest.mark.xdist_group("llama_server"),  # the same worker as test_llama_server.py
    pytest.mark.timeout(300),
]

MODEL = "llamacpp/local"
CAP = 16  # the server ignores end-of-sequence: every answer is exactly this long


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


class LocalGateway:
    def __init__(self, daemon: LiveDaemon, token: str) -> None:
        self.daemon = daemon
        self.token = token

    def openai(self) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=f"{self.daemon.url}/openai/v1", api_key=self.token, max_retries=0
        )

    def anthropic(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            base_url=f"{self.daemon.url}/anthropic", api_key=self.token, max_retries=0
        )

    def run(self, run_id: str) -> dict[str, Any]:
        return wait_for_status(self.daemon.client(), run_id, {"completed", "failed", "cancelled"})


@pytest.fixture
def gateway_for(
    start_daemon: StartDaemon,  # noqa: F811
    environ: dict[str, str],
    llama_server: LlamaServer,
) -> Callable[[ChainOfThought], LocalGateway]:
    def start(mode: ChainOfThought) -> LocalGateway:
        token = new_token()
        client = GatewayClient(name="app", token_sha256=token_digest(token), chain_of_thought=mode)
        config = Config(
            path=None,
            gateway=GatewaySettings(enabled=True, clients={"app": client}),
            prices={MODEL: ConfiguredPrice(input=Decimal(1), output=Decimal(2))},
        )
        env = {**environ, "LLAMACPP_BASE_URL": f"{llama_server.url}/v1"}
        return LocalGateway(start_daemon(env=env, config=config), token)

    return start


def assert_recorded(run: dict[str, Any], mode: ChainOfThought) -> None:
    """A run of the client's, with the server's usage and its cost, and a reasoning status
    that says what happened: this model returns no reasoning."""
    assert (run["status"], run["source"], run["client"]) == ("completed", "gateway", "app"), run
    assert run["chain_of_thought"] == mode, run
    (task,) = run["tasks"]
    assert (task["provider"], task["model"]) == ("llamacpp", "local"), task
    assert task["usage"]["output_tokens"] == CAP, task["usage"]
    assert task["usage"]["input_tokens"] > 5, task["usage"]
    assert task["reasoning"] is None, task
    assert task["reasoning_status"] == ("not_requested" if mode == "hidden" else "not_returned")
    # Priced as config prices it ($1 and $2 per million tokens; cached input at the input
    # price), from the usage the server counted.
    usage = task["usage"]
    priced = Decimal(usage["input_tokens"] + 2 * usage["output_tokens"]) / 1_000_000
    assert Decimal(str(task["cost"]["amount"])) == priced, task["cost"]
    assert Decimal(str(run["cost"]["amount"])) == priced, run["cost"]


@pytest.mark.parametrize("mode", ["hidden", "surface"])
@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_completions_through_the_gateway_to_the_server(
    gateway_for: Callable[[ChainOfThought], LocalGateway], mode: ChainOfThought, stream: bool
) -> None:
    gateway = gateway_for(mode)
    asked: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": CAP,
    }
    calls = gateway.openai().chat.completions
    if stream:
        raw = calls.with_raw_response.create(
            **asked, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(raw.parse())
        answer = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) > 1
        (usage,) = [c.usage for c in chunks if c.usage is not None]
        assert not any(
            getattr(c.choices[0].delta, "reasoning_content", None) for c in chunks if c.choices
        )
    else:
        raw = calls.with_raw_response.create(**asked)
        completion = raw.parse()
        answer = completion.choices[0].message.content or ""
        assert completion.choices[0].finish_reason == "length"
        usage = completion.usage
        assert getattr(completion.choices[0].message, "reasoning_content", None) is None
    assert answer.strip()
    assert usage is not None
    assert usage.completion_tokens == CAP, usage
    assert usage.prompt_tokens > 5, usage
    run = gateway.run(raw.headers["thoughtline-run-id"])
    assert_recorded(run, mode)
    assert run["tasks"][0]["output"] == answer


@pytest.mark.parametrize("mode", ["hidden", "surface"])
def test_anthropic_messages_through_the_gateway_stream_from_the_server(
    gateway_for: Callable[[ChainOfThought], LocalGateway], mode: ChainOfThought
) -> None:
    gateway = gateway_for(mode)
    with gateway.anthropic().messages.stream(
        model=MODEL, max_tokens=CAP, messages=[{"role": "user", "content": PROMPT}]
    ) as stream:
        pieces = list(stream.text_stream)
        message = stream.get_final_message()
        run_id = stream.response.headers["thoughtline-run-id"]
    assert len(pieces) > 1 and "".join(pieces).strip()
    assert [block.type for block in message.content] == ["text"]  # no thinking block
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == CAP, message.usage
    # Anthropic's count: the prompt the server read again from its cache is apart.
    usage = message.usage
    assert usage.input_tokens + (usage.cache_read_input_tokens or 0) > 5, usage
    run = gateway.run(run_id)
    assert_recorded(run, mode)
    assert run["tasks"][0]["output"] == "".join(pieces)


def test_an_anthropic_message_not_streamed_carries_the_servers_answer_and_usage(
    gateway_for: Callable[[ChainOfThought], LocalGateway],
) -> None:
    gateway = gateway_for("surface")
    raw = gateway.anthropic().messages.with_raw_response.create(
        model=MODEL, max_tokens=CAP, messages=[{"role": "user", "content": PROMPT}]
    )
    message = raw.parse()
    (block,) = message.content  # no thinking block: the model returned no reasoning
    assert block.type == "text" and block.text.strip()
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == CAP, message.usage
    run = gateway.run(raw.headers["thoughtline-run-id"])
    assert_recorded(run, "surface")
    assert run["tasks"][0]["output"] == block.text


def test_a_client_leaving_mid_stream_cancels_the_run_and_the_server_serves_on(
    gateway_for: Callable[[ChainOfThought], LocalGateway],
) -> None:
    gateway = gateway_for("surface")
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Count from one to one thousand in words."}],
        "max_tokens": 900,
        "stream": True,
    }
    headers = {"Authorization": f"Bearer {gateway.token}"}
    with (
        httpx2.Client(timeout=120) as http,
        http.stream(
            "POST", f"{gateway.daemon.url}/openai/v1/chat/completions", json=body, headers=headers
        ) as response,
    ):
        run_id = response.headers["thoughtline-run-id"]
        lines = response.iter_lines()
        while '"content":"' not in next(lines):  # the first words of the answer
            pass
    run = wait_for_status(gateway.daemon.client(), run_id, {"cancelled"})
    (task,) = run["tasks"]
    assert task["status"] == "cancelled", task
    assert task["usage"]["output_tokens"] is None or task["usage"]["output_tokens"] < 900
    # The server dropped that stream: the next call is answered in full.
    again = gateway.openai().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": PROMPT}], max_tokens=8
    )
    assert again.choices[0].message.content
    assert again.usage is not None and again.usage.completion_tokens == 8
