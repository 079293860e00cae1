"""A `thoughtline serve` process killed with SIGKILL in the middle of a streamed gateway
call, with the official SDKs as the clients and the simulator upstream (strict round
trips): the client's stream ends with an error, not a hang; the daemon started again on
the same home lists the run as interrupted with the answer that reached the store; the
client's next turn of its hidden tool loop (its tool call ids from before, the carriers
gone with the process) either continues by the provider's rule for turns without
carriers (DeepSeek, asked with thinking off for a hidden client, needs no
``reasoning_content`` back) or answers GATEWAY_CARRIERS_GONE (Gemini 3, whose calls need
their thought signatures back), never the provider's raw 400; and the hidden reasoning
is in no file under the home."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from tests.cli.test_durability import _wait_for_answer_deltas
from tests.cli.test_run_cli import cli_env, thoughtline
from tests.support import all_bytes_under, daemon_url, start_process
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # daemons as processes, one killed mid-stream

CANARY = "CANARY-GATEWAY-KILLED-6b3f"
ANSWER = "".join(f"[{n:04d}] Oslo stays mild and dry. " for n in range(400))
SLOW = Transcript(
    reasoning=(SimReasoning(kind="raw", text=f"I read the result. {CANARY}"),),
    answer=ANSWER,
    chunk_chars=8,
)
PACE_S = 0.01  # per frame: the answer takes tens of seconds, the kill lands mid-way
BROKEN_STREAM: dict[str, type[Exception]] = {
    "chat_completions": openai.APIConnectionError,
    # Anthropic's SDK lets its HTTP client's error through when a stream breaks.
    "messages": httpx2.RemoteProtocolError,
}
"""What each SDK raises when the daemon's connection breaks mid-stream."""


def _serve(home: Path, environ: dict[str, str]) -> subprocess.Popen[str]:
    return start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
    )


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.terminate()
    process.communicate(timeout=30)


class Loop:
    """One client API's tool loop: a first step that calls a tool, then the history the
    next step sends, streamed or not."""

    def __init__(self, api: str, model: str, url: str, token: str) -> None:
        self.api = api
        self.model = model
        if api == "chat_completions":
            self.openai = openai.OpenAI(
                base_url=f"{url}/openai/v1", api_key=token, max_retries=0, timeout=30
            )
        else:
            self.anthropic = anthropic.Anthropic(
                base_url=f"{url}/anthropic", api_key=token, max_retries=0, timeout=30
            )

    def first_step(self) -> list[dict[str, Any]]:
        """The tool call step; the history with its result, as the client sends it next."""
        asked = "Weather in Oslo?"
        if self.api == "chat_completions":
            tool = {
                "type": "function",
                "function": {"name": "weather", "parameters": {"type": "object"}},
            }
            self.tools: list[Any] = [tool]
            history: list[dict[str, Any]] = [{"role": "user", "content": asked}]
            message = (
                self.openai.chat.completions.create(
                    model=self.model, messages=history, tools=self.tools
                )
                .choices[0]
                .message
            )
            assert message.tool_calls is not None
            history.append(message.model_dump(exclude_none=True))
            history.append({"role": "tool", "tool_call_id": "call_oslo", "content": "Oslo: 18C"})
            return history
        self.tools = [{"name": "weather", "input_schema": {"type": "object"}}]
        history = [{"role": "user", "content": asked}]
        reply = self.anthropic.messages.create(
            model=self.model, max_tokens=2000, messages=history, tools=self.tools
        )
        assert [block.type for block in reply.content] == ["tool_use"]
        history.append(
            {
                "role": "assistant",
                "content": [b.model_dump(exclude_none=True) for b in reply.content],
            }
        )
        history.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_oslo", "content": "Oslo: 18C"}
                ],
            }
        )
        return history

    def stream(self, history: list[dict[str, Any]]) -> Iterator[str]:
        """The next step streamed: its answer text as it comes."""
        if self.api == "chat_completions":
            chunks = self.openai.chat.completions.create(
                model=self.model, messages=history, tools=self.tools, stream=True
            )
            for chunk in chunks:
                for choice in chunk.choices:
                    if choice.delta.content:
                        yield choice.delta.content
            return
        events = self.anthropic.messages.create(
            model=self.model, max_tokens=8000, messages=history, tools=self.tools, stream=True
        )
        for event in events:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                yield event.delta.text

    def send(self, history: list[dict[str, Any]]) -> Callable[[], object]:
        if self.api == "chat_completions":
            return lambda: self.openai.chat.completions.create(
                model=self.model, messages=history, tools=self.tools
            )
        return lambda: self.anthropic.messages.create(
            model=self.model, max_tokens=2000, messages=history, tools=self.tools
        )


def _read_until_killed(
    answer: Iterator[str], received: list[str], home: Path, daemon: subprocess.Popen[str]
) -> None:
    """Read the answer as it streams; once five pieces arrived and the store logged five
    answer deltas, SIGKILL the daemon and read on (the SDK must raise, not hang)."""
    for piece in answer:
        received.append(piece)
        if len(received) == 5:
            _wait_for_answer_deltas(home / "thoughtline.db", 5)
            daemon.send_signal(signal.SIGKILL)
            daemon.wait(timeout=30)


@pytest.mark.parametrize(
    ("api", "model", "next_turn"),
    [
        ("chat_completions", "gemini/gemini-3-pro-preview", "carriers gone"),
        ("messages", "deepseek/deepseek-v4-pro", "continues"),
    ],
)
def test_a_daemon_killed_mid_gateway_stream_leaves_an_interrupted_run_and_a_clear_next_turn(
    tmp_path: Path,
    environ: dict[str, str],
    sim: Simulator,
    api: str,
    model: str,
    next_turn: str,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[gateway]\nenabled = true\n", encoding="utf-8")
    added = thoughtline(
        home, environ, "gateway", "add-client", "app", "--chain-of-thought", "hidden"
    )
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    thought = (SimReasoning(kind="raw", text=f"I should look it up. {CANARY}"),)
    call = SimToolCall(call_id="call_oslo", name="weather", arguments='{"city": "Oslo"}')
    sim.script_turns(Transcript(reasoning=thought, tool_calls=(call,), finish="tool_calls"), SLOW)

    first = _serve(home, environ)
    try:
        loop = Loop(api, model, daemon_url(first), token)
        history = loop.first_step()
        received: list[str] = []
        sim.pace_s = PACE_S
        with pytest.raises(BROKEN_STREAM[api]):
            _read_until_killed(loop.stream(history), received, home, first)
    finally:
        _stop(first)
    sim.pace_s = 0.0
    assert first.returncode == -signal.SIGKILL
    shown = "".join(received)
    assert shown and ANSWER.startswith(shown) and len(shown) < len(ANSWER)

    second = _serve(home, environ)
    try:
        url = daemon_url(second)
        runs = httpx2.get(f"{url}/v1/runs", timeout=30).json()["runs"]
        statuses = sorted(run["status"] for run in runs)
        assert statuses == ["completed", "interrupted"]
        (killed,) = [run for run in runs if run["status"] == "interrupted"]
        snapshot = httpx2.get(f"{url}/v1/runs/{killed['id']}", timeout=30).json()
        assert (snapshot["source"], snapshot["client"]) == ("gateway", "app")
        (task,) = snapshot["tasks"]
        assert task["status"] == "interrupted"
        assert task["error"]["code"] == "RUN_INTERRUPTED"
        kept = task["output"]
        assert kept and ANSWER.startswith(kept) and len(kept) < len(ANSWER)

        # The loop's next turn: the tool call ids from before, the carriers gone.
        again = Loop(api, model, url, token)
        again.tools = loop.tools
        before = len(sim.requests)
        sim.script(Transcript(reasoning=thought, answer="Oslo: 18C, mild."), times=1)
        if next_turn == "continues":
            answered = again.send(history)()
            assert "Oslo: 18C, mild." in str(answered)
            assert CANARY not in str(answered)
        else:
            with pytest.raises((openai.ConflictError, anthropic.ConflictError)) as gone:
                again.send(history)()
            error = gone.value.response.json()["error"]
            assert error["code"] == "GATEWAY_CARRIERS_GONE"
            assert "start the tool loop again from the user's message" in error["message"]
        assert len(sim.requests) == before + 1  # the provider's own rule decided
    finally:
        _stop(second)
    assert CANARY.encode() not in all_bytes_under(home)
