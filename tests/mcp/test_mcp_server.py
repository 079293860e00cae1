"""``thoughtline mcp`` as an MCP client sees it: the SDK's own stdio client spawns the
server (``python -m thoughtline.cli mcp``) with a temporary THOUGHTLINE_HOME and the
simulator's base URLs; every call goes over real stdio.

The reasoning canary must reach the client's structured content exactly in the modes that
display reasoning, never the text summary or progress messages, and the canary key
nothing at all (including the server's stderr and the store).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import ANSWER, CANARY, TRANSCRIPT, all_bytes_under
from tests.support import HOSTILE_MODEL_IDS
from thoughtline.model.requests import model_id_problem
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import Fault, Simulator, Transcript

pytestmark = pytest.mark.slow  # the MCP server as a child process over stdio

MODES = ("hidden", "surface", "telemetry_only", "surface_and_telemetry")
DISPLAYS = {"surface", "surface_and_telemetry"}
EXPECTED_REASONING_STATUS = {
    "hidden": "not_requested",
    "surface": "shown",
    "telemetry_only": "recorded",
    "surface_and_telemetry": "shown",
}
FINAL_RUN_STATUSES = {
    "completed",
    "completed_with_failures",
    "completed_prepare_only",
    "failed",
    "cancelled",
    "interrupted",
}
# Enough frames that a paced run takes well over the short timeouts below.
SLOW_TRANSCRIPT = Transcript(answer="slow and steady " * 20, chunk_chars=8)
POLL_LIMIT = 400  # polls, POLL_INTERVAL_S apart: a bound, not a timing assertion
POLL_INTERVAL_S = 0.05


def server_env(home: Path, environ: dict[str, str]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.update(environ)
    env["THOUGHTLINE_HOME"] = str(home)
    env.pop("THOUGHTLINE_CONFIG", None)
    return env


class Server:
    """A connected client session plus what it needs to check the server's output."""

    def __init__(self, session: ClientSession, stderr_path: Path) -> None:
        self.session = session
        self.stderr_path = stderr_path
        self.schemas: dict[str, dict[str, Any]] = {}

    async def list_schemas(self) -> None:
        listing = await self.session.list_tools()
        for tool in listing.tools:
            assert tool.output_schema is not None, tool.name
            self.schemas[tool.name] = tool.output_schema

    async def call(self, name: str, arguments: dict[str, Any], **options: Any) -> CallToolResult:
        result = await self.session.call_tool(name, arguments, **options)
        assert isinstance(result, CallToolResult)
        if not result.is_error:
            jsonschema.validate(result.structured_content, self.schemas[name])
        return result


@asynccontextmanager
async def mcp_server(tmp_path: Path, environ: dict[str, str]) -> AsyncIterator[Server]:
    home = tmp_path / "home"
    stderr_path = tmp_path / "server-stderr.txt"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "thoughtline.cli", "mcp"],
        env=server_env(home, environ),
        cwd=str(tmp_path),
    )
    with stderr_path.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            server = Server(session, stderr_path)
            await server.list_schemas()
            yield server


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def test_lists_both_tools_with_input_and_output_schemas(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    async with mcp_server(tmp_path, environ) as server:
        listing = await server.session.list_tools()
    tools = {tool.name: tool for tool in listing.tools}
    assert set(tools) == {"orchestration_run", "orchestration_status"}
    run_tool = tools["orchestration_run"]
    assert run_tool.input_schema["required"] == ["request"]
    properties = run_tool.input_schema["properties"]
    assert properties["chain_of_thought"]["anyOf"][0]["enum"] == list(MODES)
    # No roles: [defaults] role, else no persona, or the continued run's tasks (so the
    # default is not a list).
    assert properties["roles"]["default"] is None
    assert "[defaults] role" in properties["roles"]["description"]
    assert "system" in properties
    assert properties["continues"]["default"] is None
    assert "conversation" in properties["continues"]["description"]
    assert properties["wait"]["default"] is True
    snapshot_schema = run_tool.output_schema
    assert snapshot_schema is not None
    assert snapshot_schema["properties"]["schema"] == {
        "type": "string",
        "const": "thoughtline.run/v1",
    }
    assert "completed_with_failures" in snapshot_schema["properties"]["status"]["enum"]
    task_schema = snapshot_schema["properties"]["tasks"]["items"]
    assert task_schema["properties"]["reasoning"]["type"] == ["string", "null"]
    assert "not_returned" in task_schema["properties"]["reasoning_status"]["enum"]
    status_schema = tools["orchestration_status"].output_schema
    assert status_schema is not None
    assert status_schema["properties"]["run"] == snapshot_schema
    assert set(status_schema["required"]) == {"run", "runs"}
    # Every declared schema is a valid JSON Schema document.
    for tool in listing.tools:
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)


async def test_run_in_every_mode_discloses_reasoning_exactly_when_displayed(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    outputs: list[str] = []
    async with mcp_server(tmp_path, environ) as server:
        for count, mode in enumerate(MODES, start=1):
            progress: list[tuple[float, float | None, str | None]] = []

            async def on_progress(
                value: float,
                total: float | None,
                message: str | None,
                progress: list[tuple[float, float | None, str | None]] = progress,
            ) -> None:
                progress.append((value, total, message))

            result = await server.call(
                "orchestration_run",
                {"request": "Explain the decision.", "chain_of_thought": mode},
                progress_callback=on_progress,
            )
            status = await server.call("orchestration_status", {})
            check_mode_run(mode, result, status, progress, runs_so_far=count)
            outputs += [json.dumps(result.structured_content), text_of(result)]
            outputs += [json.dumps(status.structured_content), text_of(status)]
            outputs += [message or "" for _, _, message in progress]
    stderr = server.stderr_path.read_text(encoding="utf-8")
    assert CANARY not in stderr
    for output in (*outputs, stderr):
        assert CANARY_KEY not in output
    assert CANARY_KEY.encode() not in all_bytes_under(tmp_path / "home")


def check_mode_run(
    mode: str,
    result: CallToolResult,
    status: CallToolResult,
    progress: list[tuple[float, float | None, str | None]],
    *,
    runs_so_far: int,
) -> None:
    assert not result.is_error, (mode, text_of(result))
    snapshot = result.structured_content
    assert snapshot is not None
    # The snapshot is the final one, and the status tool agrees with it.
    assert snapshot["status"] == "completed", mode
    assert snapshot["chain_of_thought"] == mode
    assert snapshot["chain_of_thought_source"] == "explicit"
    assert status.structured_content is not None
    assert status.structured_content["run"] == snapshot, mode
    runs = status.structured_content["runs"]
    assert len(runs) == runs_so_far
    assert runs[0]["id"] == snapshot["id"]
    assert runs[0]["status"] == "completed"
    (task,) = snapshot["tasks"]
    assert task["status"] == "done"
    assert task["output"] == ANSWER
    assert task["reasoning_status"] == EXPECTED_REASONING_STATUS[mode], mode

    structured = json.dumps(snapshot)
    text = text_of(result)
    if mode in DISPLAYS:
        assert CANARY in task["reasoning"], mode
        assert task["reasoning_parts"][0]["kind"] == "summary"
        assert CANARY in structured
    else:
        assert task["reasoning"] is None, mode
        assert task["reasoning_parts"] is None, mode
        assert CANARY not in structured, mode
    # The text summary names each task's status and notice and carries the answer, never
    # the reasoning (that is in the structured snapshot, when displayed).
    assert "assistant [done]" in text
    assert task["reasoning_notice"] in text
    assert ANSWER in text
    assert CANARY not in text, mode
    assert CANARY not in text_of(status), mode

    # Progress: a step per task start and completion, then the run's end (whole numbers),
    # with streamed character counts between them (fractions); always growing.
    values = [value for value, _, _ in progress]
    assert values == sorted(set(values)), mode
    assert [value for value in values if value == int(value)] == [1, 2, 3], mode
    assert {total for _, total, _ in progress} == {3}
    messages = [message or "" for _, _, message in progress]
    steps = [message for value, _, message in progress if value == int(value)]
    assert (steps[0] or "").startswith("assistant started (provider:anthropic:")
    assert steps[1] == (
        f"assistant done; reasoning {EXPECTED_REASONING_STATUS[mode]}; {len(ANSWER)} chars streamed"
    )
    assert steps[2] == "run completed"
    streaming = [message for message in messages if message.startswith("streaming: ")]
    assert streaming, mode  # the first delta of a task is reported at once
    assert all(1 < value < 2 for value, _, message in progress if message in streaming)
    # Reasoning is counted only where it is displayed; its text is never sent.
    assert any("reasoning chars" in message for message in streaming) == (mode in DISPLAYS)
    assert all(CANARY not in message for message in messages), mode


async def test_wait_false_returns_at_once_then_status_polls_to_the_end(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(SLOW_TRANSCRIPT)
    sim.pace_s = 0.02
    async with mcp_server(tmp_path, environ) as server:
        started = await server.call(
            "orchestration_run", {"request": "Take your time.", "wait": False}
        )
        assert started.structured_content is not None
        run_id = started.structured_content["id"]
        assert started.structured_content["status"] in ("planned", "running")
        assert "orchestration_status" in text_of(started)
        snapshot: dict[str, Any] = {}
        seen: set[str] = set()
        for _ in range(POLL_LIMIT):
            status = await server.call("orchestration_status", {"run_id": run_id, "limit": 0})
            assert status.structured_content is not None
            assert status.structured_content["runs"] == []
            snapshot = status.structured_content["run"]
            seen.add(snapshot["status"])
            if snapshot["status"] in FINAL_RUN_STATUSES:
                break
            await anyio.sleep(POLL_INTERVAL_S)
        else:
            pytest.fail(f"run {run_id} did not finish within {POLL_LIMIT} polls: {seen}")
    assert snapshot["id"] == run_id
    assert snapshot["status"] == "completed"
    assert snapshot["tasks"][0]["output"] == SLOW_TRANSCRIPT.answer
    assert "running" in seen


async def test_timeout_returns_the_running_snapshot_and_the_run_goes_on(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(SLOW_TRANSCRIPT)
    sim.pace_s = 0.02
    async with mcp_server(tmp_path, environ) as server:
        early = await server.call(
            "orchestration_run", {"request": "Take your time.", "timeout_s": 0.05}
        )
        assert early.structured_content is not None
        assert early.structured_content["status"] == "running"
        assert "timed out" in text_of(early)
        run_id = early.structured_content["id"]
        final: dict[str, Any] = {}
        for _ in range(POLL_LIMIT):
            status = await server.call("orchestration_status", {"run_id": run_id})
            assert status.structured_content is not None
            final = status.structured_content["run"]
            if final["status"] in FINAL_RUN_STATUSES:
                break
            await anyio.sleep(POLL_INTERVAL_S)
        else:
            pytest.fail(f"run {run_id} did not finish within {POLL_LIMIT} polls")
    assert final["status"] == "completed"
    assert final["tasks"][0]["output"] == SLOW_TRANSCRIPT.answer


async def test_cancelling_a_waiting_call_cancels_the_run_and_keeps_it(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(SLOW_TRANSCRIPT)
    sim.pace_s = 0.05
    async with mcp_server(tmp_path, environ) as server:
        task_started = anyio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            if message and "started" in message:
                task_started.set()

        async def call() -> None:
            await server.call(
                "orchestration_run", {"request": "Long."}, progress_callback=on_progress
            )

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await task_started.wait()
            group.cancel_scope.cancel()
        snapshot: dict[str, Any] = {}
        for _ in range(POLL_LIMIT):
            status = await server.call("orchestration_status", {})
            assert status.structured_content is not None
            snapshot = status.structured_content["run"]
            if snapshot["status"] in FINAL_RUN_STATUSES:
                break
            await anyio.sleep(POLL_INTERVAL_S)
        else:
            pytest.fail("the cancelled run never reached a final status")
    assert snapshot["status"] == "cancelled"
    assert snapshot["tasks"][0]["status"] == "cancelled"


async def test_disconnecting_mid_run_ends_it_interrupted_by_the_server_itself(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(SLOW_TRANSCRIPT)
    sim.pace_s = 0.05
    async with mcp_server(tmp_path, environ) as server:
        started = await server.call("orchestration_run", {"request": "Long.", "wait": False})
        assert started.structured_content is not None
        run_id = started.structured_content["id"]
    store = SQLiteStore(tmp_path / "home" / "thoughtline.db")
    try:
        run = store.get_run(run_id)
        events = store.run_events(run_id)
    finally:
        store.close()
    assert run is not None
    assert run.status == "interrupted"
    # The server ended it on its way out (a terminal event, no RUN_INTERRUPTED error),
    # not a later process recovering a run left "running".
    assert events[-1].type == "run.interrupted"
    assert run.tasks[0].status == "interrupted"
    assert run.tasks[0].error is None


async def test_past_max_active_runs_the_tool_says_so_in_one_sentence(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    """[server] max_active_runs holds for the MCP server too: with one run held open
    (its stream stalls), the next is a tool error and is not stored."""
    (tmp_path / "thoughtline.toml").write_text("[server]\nmax_active_runs = 1\n")
    sim.inject(Fault.stall(at="mid_answer", max_s=30))
    async with mcp_server(tmp_path, environ) as server:
        held = await server.call("orchestration_run", {"request": "Hold.", "wait": False})
        assert held.structured_content is not None
        refused = await server.call("orchestration_run", {"request": "One more.", "wait": False})
        assert refused.is_error
        assert text_of(refused) == (
            "SERVER_AT_CAPACITY: This thoughtline server is already running 1 run(s), its "
            "limit ([server] max_active_runs in thoughtline.toml); try again in 5 s."
        )
        listed = await server.call("orchestration_status", {"run_id": None, "limit": 10})
        assert listed.structured_content is not None
        assert [run["id"] for run in listed.structured_content["runs"]] == [
            held.structured_content["id"]
        ]


async def test_a_tool_its_server_lacks_is_a_tool_error_and_no_run_is_stored(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    server_script = Path(__file__).parents[1] / "tools" / "mcp_test_server.py"
    (tmp_path / "thoughtline.toml").write_text(
        f"[mcp_servers.probe]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(server_script))}]\n"
    )
    async with mcp_server(tmp_path, environ) as server:
        result = await server.call("orchestration_run", {"request": "x", "tools": ["probe.nosuch"]})
        assert result.is_error
        assert text_of(result).startswith(
            "TOOL_NOT_FOUND: Task assistant: The MCP server probe has no tool 'nosuch'"
        ), text_of(result)
        listed = await server.call("orchestration_status", {})
        assert text_of(listed).startswith("RUN_NOT_FOUND: "), text_of(listed)
    assert sim.requests == []


async def test_bad_input_comes_back_as_tool_errors_with_codes(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    environ = {key: value for key, value in environ.items() if key != "DEEPSEEK_API_KEY"}
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("orchestration_status", {}, "RUN_NOT_FOUND"),
        (
            "orchestration_run",
            {"request": "x", "chain_of_thought": "verbose"},
            "CHAIN_OF_THOUGHT_UNKNOWN",
        ),
        ("orchestration_run", {"request": "x", "roles": ["wizard"]}, "ROLE_UNKNOWN"),
        ("orchestration_run", {"request": "x", "provider": "nowhere"}, "ENDPOINT_UNKNOWN"),
        ("orchestration_run", {"request": "x", "provider": "deepseek"}, "PROVIDER_KEY_MISSING"),
        ("orchestration_run", {"request": "x", "effort": "turbo"}, "EFFORT_UNKNOWN"),
        # A request names configured tool servers only; it never defines one.
        ("orchestration_run", {"request": "x", "tools": ["nosuch"]}, "TOOL_SERVER_UNKNOWN"),
        ("orchestration_run", {"request": "x", "tools": ["a."]}, "REQUEST_INVALID"),
        # orchestration.max_request_bytes (256 KiB by default), as on the daemon and CLI.
        ("orchestration_run", {"request": "x" * (256 * 1024 + 1)}, "REQUEST_TOO_LARGE"),
        ("orchestration_status", {"run_id": "run_missing"}, "RUN_NOT_FOUND"),
    ]
    async with mcp_server(tmp_path, environ) as server:
        for name, arguments, code in cases:
            result = await server.call(name, arguments)
            assert result.is_error, (arguments, text_of(result))
            assert text_of(result).startswith(f"{code}: "), text_of(result)
            assert result.structured_content is None
        # Arguments the input schema rejects are tool errors too, and the server lives on.
        invalid = await server.call("orchestration_run", {"request": ""})
        assert invalid.is_error
        assert "request" in text_of(invalid)
        # No progress token: no progress, and the run completes all the same.
        still_alive = await server.call(
            "orchestration_run",
            {"request": "Two views.", "roles": ["engineer", "reviewer"], "effort": "low"},
        )
    assert not still_alive.is_error, text_of(still_alive)
    snapshot = still_alive.structured_content
    assert snapshot is not None
    assert snapshot["status"] == "completed"
    assert (snapshot["chain_of_thought"], snapshot["chain_of_thought_source"]) == (
        "hidden",
        "default",
    )
    assert [(task["name"], task["effort"]) for task in snapshot["tasks"]] == [
        ("engineer", "low"),
        ("reviewer", "low"),
    ]
    assert "engineer [done]" in text_of(still_alive)
    assert "reviewer [done]" in text_of(still_alive)
    # Only the good run reached a provider: one request per task.
    assert len(sim.requests) == 2


async def test_a_model_id_that_is_not_one_is_a_tool_error_and_nothing_is_stored_or_sent(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    async with mcp_server(tmp_path, environ) as server:
        earlier = await server.call("orchestration_run", {"request": "x", "provider": "gemini"})
        assert earlier.structured_content is not None, text_of(earlier)
        earlier_id = earlier.structured_content["id"]
        sent = list(sim.requests)
        for model in (*HOSTILE_MODEL_IDS, ""):
            for arguments in ({"provider": "gemini"}, {"continues": earlier_id}):
                result = await server.call(
                    "orchestration_run", {"request": "x", "model": model, **arguments}
                )
                assert result.is_error, (model, text_of(result))
                assert text_of(result) == f"MODEL_ID_INVALID: {model_id_problem(model)}"
        listed = await server.call("orchestration_status", {"run_id": None, "limit": 10})
        assert listed.structured_content is not None
        assert [run["id"] for run in listed.structured_content["runs"]] == [earlier_id]
    assert sim.requests == sent
    assert sim.unrouted == []


async def test_generation_settings_reach_the_wire_and_are_checked(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(Transcript(answer="Brief."))
    async with mcp_server(tmp_path, environ) as server:
        arguments = {"request": "Hi", "provider": "deepseek", "max_output_tokens": 64}
        result = await server.call("orchestration_run", {**arguments, "temperature": 0.4})
        assert not result.is_error, text_of(result)
        refused = await server.call("orchestration_run", {**arguments, "temperature": 3})
    assert refused.is_error
    assert "temperature" in text_of(refused)
    (sent,) = sim.requests
    assert sent.body is not None
    assert (sent.body["max_tokens"], sent.body["temperature"]) == (64, 0.4)


async def test_progress_reports_streamed_characters_while_a_long_answer_arrives(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(SLOW_TRANSCRIPT)
    sim.pace_s = 0.05  # 40 frames: about two seconds of streaming, several intervals
    async with mcp_server(tmp_path, environ) as server:
        progress: list[tuple[float, str]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, message or ""))

        result = await server.call(
            "orchestration_run", {"request": "Long."}, progress_callback=on_progress
        )
    assert not result.is_error
    counts = [
        int(message.split()[2].replace(",", ""))
        for _, message in progress
        if message.startswith("streaming: assistant ")
    ]
    # Several notices, each with more characters; none carries the answer itself.
    assert len(counts) >= 2
    assert counts == sorted(set(counts))
    assert counts[-1] <= len(SLOW_TRANSCRIPT.answer)
    assert all("slow and steady" not in message for _, message in progress)


async def test_the_tool_says_what_the_run_cost_or_why_that_is_unknown(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(
        Transcript(answer="Done.", input_tokens=10_000, output_tokens=2_000, reasoning_tokens=640)
    )
    async with mcp_server(tmp_path, environ) as server:
        priced = await server.call(
            "orchestration_run",
            {"request": "Explain.", "provider": "openai", "model": "o4-mini"},
        )
        unknown = await server.call(
            "orchestration_run",
            {"request": "Explain.", "provider": "ollama", "model": "qwen3:8b"},
        )
    assert priced.structured_content is not None and unknown.structured_content is not None
    # o4-mini at $1.10 / $4.40 per million: 10,000 x 1.1 + 2,000 x 4.4 = 19,800 µ$.
    cost = priced.structured_content["tasks"][0]["cost"]
    assert cost["amount"] == pytest.approx(0.0198, abs=1e-12)
    assert cost["source"] == "genai-prices 0.2.3"
    assert priced.structured_content["cost"]["amount"] == pytest.approx(0.0198, abs=1e-12)
    assert "  cost: $0.020 (genai-prices 0.2.3)" in text_of(priced)
    reason = (
        "ollama is a local server with no configured price; set "
        '[prices."ollama/qwen3:8b"] input = 0 and output = 0 in config if its calls cost nothing'
    )
    task = unknown.structured_content["tasks"][0]
    assert task["cost"]["amount"] is None and task["cost"]["unknown_reason"] == reason
    assert unknown.structured_content["cost"]["amount"] is None
    assert f"  cost: unknown: {reason}" in text_of(unknown)
    assert f"Cost: unknown: task assistant: {reason}." in text_of(unknown)


async def test_system_gives_the_persona_and_no_role_gives_none(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    async with mcp_server(tmp_path, environ) as server:
        plain = await server.call("orchestration_run", {"request": "Summarize this"})
        assert not plain.is_error, text_of(plain)
        inline = await server.call(
            "orchestration_run", {"request": "Summarize this", "system": "You are terse."}
        )
        assert not inline.is_error, text_of(inline)
        both = await server.call(
            "orchestration_run",
            {"request": "Summarize this", "system": "You are terse.", "roles": ["reviewer"]},
        )
    assert both.is_error
    assert "system and roles (reviewer) both give the persona" in text_of(both)
    first, second = sim.requests  # the refused call sent nothing
    assert first.body is not None and second.body is not None
    assert "system" not in first.body
    assert second.body["system"] == "You are terse."
    assert plain.structured_content is not None and inline.structured_content is not None
    assert plain.structured_content["tasks"][0]["persona"] == {
        "role": "assistant",
        "source": "default",
    }
    assert inline.structured_content["tasks"][0]["persona"]["source"] == "system"
