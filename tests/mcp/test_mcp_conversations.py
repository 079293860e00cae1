"""Conversations through ``thoughtline mcp``: ``orchestration_run`` with ``continues``,
called by the SDK's stdio client against the provider simulator.

The follow-up's request must carry the first turn; a hidden turn's reasoning (sent by a
model that reasons unasked) must reach no tool result, no request and no file; a run
that cannot be continued is a tool error with its code, and nothing is stored.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult

from tests.cli.test_run_cli import thoughtline as cli
from tests.conftest import CANARY_KEY
from tests.mcp.test_mcp_server import SLOW_TRANSCRIPT, Server, mcp_server, text_of
from tests.runtime.test_disclosure_e2e import (
    ANSWER,
    CANARY,
    TRANSCRIPT,
    all_bytes_under,
    make_runtime,
)
from tests.store.builders import make_run
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import Simulator, SimulatorServer, Transcript

pytestmark = pytest.mark.slow  # the MCP server as a child process over stdio

FIRST = "Design a rate limiter."
SECOND = "Now make it shorter."
SHORTER = "A token bucket per client."


def snapshot_of(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return result.structured_content


async def stored_run_ids(server: Server) -> list[str]:
    listed = await server.call("orchestration_status", {"limit": 100})
    if listed.is_error:
        assert text_of(listed).startswith("RUN_NOT_FOUND: ")
        return []
    assert listed.structured_content is not None
    return [run["id"] for run in listed.structured_content["runs"]]


async def test_a_hidden_follow_up_carries_the_first_turn_and_its_reasoning_nowhere(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    # DeepSeek's reasoner returns reasoning (the canary) without being asked.
    sim.script_turns(
        TRANSCRIPT,
        Transcript(reasoning=TRANSCRIPT.reasoning, answer=SHORTER, chunk_chars=4096),
    )
    outputs: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        outputs.append(message or "")

    async with mcp_server(tmp_path, environ) as server:
        first = await server.call(
            "orchestration_run",
            {"request": FIRST, "provider": "deepseek", "model": "deepseek-reasoner"},
            progress_callback=on_progress,
        )
        second = await server.call(
            "orchestration_run",
            # The short id the tool's text gives, as a model would copy it.
            {"request": SECOND, "continues": snapshot_of(first)["short_id"]},
            progress_callback=on_progress,
        )
        assert "run completed" in outputs
        status = await server.call("orchestration_status", {})
        for result in (first, second, status):
            outputs += [json.dumps(result.structured_content), text_of(result)]
    one, two = snapshot_of(first), snapshot_of(second)
    assert (one["conversation_id"], one["continues"]) == (one["id"], None)
    assert (two["conversation_id"], two["continues"]) == (one["id"], one["id"])
    assert two["status"] == "completed"
    assert (two["chain_of_thought"], two["chain_of_thought_source"]) == ("hidden", "default")
    (task,) = two["tasks"]
    # The continued run's task again: same name, endpoint and model.
    assert (task["name"], task["provider"], task["model"]) == (
        "assistant",
        "deepseek",
        "deepseek-reasoner",
    )
    assert task["output"] == SHORTER
    assert task["reasoning_status"] == "not_requested"
    assert task["history"] == {"turns": 1, "dropped_turns": 0, "reasoning_turns": 0, "note": None}
    assert f"Run {one['short_id']}: completed" in text_of(first)
    assert f"It continues run {one['short_id']} (conversation {one['id']})." in text_of(second)
    assert snapshot_of(status)["run"] == two
    assert [(run["id"], run["continues"]) for run in snapshot_of(status)["runs"]] == [
        (two["id"], one["id"]),
        (one["id"], None),
    ]

    # The follow-up's request holds the first request and answer, then the new request.
    first_sent, second_sent = sim.requests_for("deepseek")
    assert first_sent.body is not None and second_sent.body is not None
    assert second_sent.body["messages"][:-1] == [
        *first_sent.body["messages"],
        {"role": "assistant", "content": ANSWER},
    ]
    assert second_sent.body["messages"][-1]["role"] == "user"
    assert SECOND in json.dumps(second_sent.body["messages"][-1])
    assert FIRST in json.dumps(first_sent.body["messages"][-1])

    # Hidden: the canary reached neither the model again, nor a result, nor a file.
    stderr = server.stderr_path.read_text(encoding="utf-8")
    for output in (*outputs, stderr, second_sent.raw_body.decode()):
        assert CANARY not in output
        assert CANARY_KEY not in output
    everything = all_bytes_under(tmp_path / "home")
    assert CANARY.encode() not in everything
    assert CANARY_KEY.encode() not in everything


async def test_a_surface_follow_up_keeps_the_mode_and_sends_the_thinking_back(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    async with mcp_server(tmp_path, environ) as server:
        first = snapshot_of(
            await server.call(
                "orchestration_run",
                {
                    "request": FIRST,
                    "roles": ["architect"],
                    "provider": "anthropic",
                    "model": "claude-opus-5-5",
                    "chain_of_thought": "surface",
                },
            )
        )
        # Another role and a lower effort: the architect's turn goes to the new task as
        # text, while the architect, run again, gets its own turn with its thinking.
        second = snapshot_of(
            await server.call(
                "orchestration_run",
                {
                    "request": SECOND,
                    "roles": ["architect", "reviewer"],
                    "effort": "low",
                    "continues": first["id"],
                },
            )
        )
    # The mode chosen for the first run goes on; displayed, as chosen.
    assert (second["chain_of_thought"], second["continues"]) == ("surface", first["id"])
    architect, reviewer = second["tasks"]
    assert (architect["name"], architect["model"], architect["effort"]) == (
        "architect",
        "claude-opus-5-5",
        "low",
    )
    assert (reviewer["name"], reviewer["effort"]) == ("reviewer", "low")
    assert CANARY in architect["reasoning"]
    assert architect["history"]["turns"] == 1
    assert architect["history"]["reasoning_turns"] == 1
    assert reviewer["history"]["turns"] == 1
    requests = sim.requests_for("anthropic")
    assert len(requests) == 3
    sent = {
        json.dumps(request.body["system"])[:40]: request.raw_body.decode()
        for request in requests[1:]
        if request.body is not None
    }
    assert len(sent) == 2
    for body in sent.values():
        assert FIRST in body and ANSWER in body and SECOND in body
    # Only the architect's own turn goes back with its thinking block (and signature).
    assert sum(f"sig-{CANARY}" in body for body in sent.values()) == 1


async def test_what_cannot_be_continued_is_a_tool_error_and_nothing_is_stored(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    # A run that only prepared prompts (no answer, no thread) keeps nothing to continue.
    home = tmp_path / "home"
    home.mkdir()
    runtime, store = make_runtime(home, sim_server, environ)
    try:
        prepared = await runtime.run(
            RunSpec(request="x", tasks=(TaskSpec(name="a", role="engineer"),)),
            worker_backend="inline",
        )
    finally:
        await runtime.aclose()
        store.close()
    assert prepared.status == "completed_prepare_only"
    async with mcp_server(tmp_path, environ) as server:
        refusals: list[tuple[CallToolResult, str, str]] = []
        missing = await server.call("orchestration_run", {"request": "x", "continues": "run_nope"})
        refusals.append((missing, "RUN_NOT_FOUND", "run_nope"))
        gone = await server.call("orchestration_run", {"request": "x", "continues": prepared.id})
        refusals.append((gone, "CONVERSATION_HISTORY_GONE", prepared.id))

        sim.script(SLOW_TRANSCRIPT)
        sim.pace_s = 0.05
        running = snapshot_of(
            await server.call("orchestration_run", {"request": "Long.", "wait": False})
        )
        active = await server.call(
            "orchestration_run", {"request": "x", "continues": running["id"]}
        )
        refusals.append((active, "CONVERSATION_RUN_ACTIVE", running["id"]))
        stored = await stored_run_ids(server)

    for result, code, run_id in refusals:
        assert result.is_error, text_of(result)
        assert result.structured_content is None
        text = text_of(result)
        assert text.startswith(f"{code}: "), text
        assert run_id in text
        assert "`thoughtline " not in text  # no CLI hint: a client of this server has none
    # Only the runs that were started exist; the running one alone reached the simulator.
    assert stored == [running["id"], prepared.id]
    assert len(sim.requests) == 1


TWINS = ("run_kq3x9m2a20261201232642000001", "run_kq3x7h4b20261201232643000002")
AMBIGUOUS = "RUN_ID_AMBIGUOUS: 'kq3x' matches 2 runs: kq3x9m2a, kq3x7h4b. Give more of the id."


@pytest.mark.slow
async def test_run_ids_take_latest_and_a_shared_start_is_refused_with_the_candidates(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    store = SQLiteStore(home / "thoughtline.db")
    try:
        for twin in TWINS:
            store.create_run(
                make_run(twin, status="completed", created_at="2026-01-01T00:00:00.000Z")
            )
    finally:
        store.close()
    sim.script_turns(Transcript(answer="One."), Transcript(answer="Two."))
    async with mcp_server(tmp_path, environ) as server:
        for tool, arguments in (
            ("orchestration_status", {"run_id": "kq3x"}),
            ("orchestration_run", {"request": "x", "continues": "kq3x"}),
        ):
            refused = await server.call(tool, arguments)
            assert refused.is_error and text_of(refused) == AMBIGUOUS, tool
        first = snapshot_of(await server.call("orchestration_run", {"request": FIRST}))
        latest = snapshot_of(await server.call("orchestration_status", {"run_id": "latest"}))
        assert latest["run"]["id"] == first["id"]
        second = snapshot_of(
            await server.call("orchestration_run", {"request": SECOND, "continues": "latest"})
        )
        stored = await stored_run_ids(server)
    assert (second["continues"], second["conversation_id"]) == (first["id"], first["id"])
    assert second["tasks"][0]["output"] == "Two."
    assert stored == [second["id"], first["id"], *reversed(TWINS)]


@pytest.mark.slow
async def test_a_follow_up_starts_its_runs_mcp_json_server_again_or_is_a_tool_error(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.default_transcript = None  # the default model calls the fitting demo tool
    home = tmp_path / "home"
    mcp_json = tmp_path / "mcp.json"
    demo = {"command": sys.executable, "args": ["-m", "thoughtline.testing.demo_tools"]}
    mcp_json.write_text(json.dumps({"mcpServers": {"demo": demo}}))
    first = cli(
        home,
        environ,
        "run",
        "What time is it now in Tokyo?",
        "--mcp-config",
        str(mcp_json),
        "--tool",
        "demo",
        "--json",
    )
    assert first.returncode == 0, first.stderr
    run_id = json.loads(first.stdout)["id"]
    async with mcp_server(tmp_path, environ) as server:
        again = snapshot_of(
            await server.call(
                "orchestration_run",
                {"request": "And what time is it now in Paris?", "continues": run_id},
            )
        )
        assert again["status"] == "completed", again
        assert "Europe/Paris" in again["tasks"][0]["output"]
        mcp_json.unlink()
        gone = await server.call(
            "orchestration_run", {"request": "And now?", "continues": again["id"]}
        )
        stored = await stored_run_ids(server)
    assert gone.is_error
    assert text_of(gone).startswith("TOOL_SERVER_GONE: Run "), text_of(gone)
    assert stored == [again["id"], run_id]
