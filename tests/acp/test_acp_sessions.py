"""ACP sessions are conversations, kept in the store: through the ``acp`` package's
client and real agent processes, a session's second prompt carries its first turn, a
new agent process (same THOUGHTLINE_HOME) replays the session on ``session/load``, and a
third prompt on the loaded session carries both earlier turns to the simulator.

Each turn's reasoning carries its own canary: a ``surface`` session shows earlier
turns' thoughts in the replay; a ``telemetry_only`` one none (the trace has them, the
replay never reads it); a ``hidden`` one none anywhere (updates, logs, files, later
requests)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError
from acp.helpers import text_block
from acp.meta import PROTOCOL_VERSION
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from tests.acp.test_acp_agent import Agent, RecordingClient, bounded, spawn, stored_run
from tests.acp.test_acp_tools import stdio
from tests.acp.test_turns import FakeClient
from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import all_bytes_under, make_runtime
from tests.tools.test_mcp_tools import TEST_SERVER
from thoughtline.integrations.acp import SessionSettings, ThoughtlineAcpAgent
from thoughtline.testing import (
    Fault,
    SimReasoning,
    SimToolCall,
    Simulator,
    SimulatorServer,
    Transcript,
)

pytestmark = pytest.mark.slow  # two agent processes and a tool server per test

TASK_TITLE = "assistant · deepseek:deepseek-reasoner"
REPLAYED = (
    "user_message_chunk",
    "tool_call",
    "tool_call_update",
    "agent_message_chunk",
    "agent_thought_chunk",
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def canary(turn: int) -> str:
    return f"CANARY-T{turn}-77c3"


def answered(turn: int, text: str) -> Transcript:
    return Transcript(
        reasoning=(
            SimReasoning(kind="summary", text=f"Think {canary(turn)}.", signature=f"sig-{turn}a"),
        ),
        answer=text,
        reasoning_tokens=12,
    )


def calling(turn: int) -> Transcript:
    return Transcript(
        reasoning=(
            SimReasoning(kind="summary", text=f"Call {canary(turn)}.", signature=f"sig-{turn}b"),
        ),
        tool_calls=(
            SimToolCall(
                call_id="call_1", name="probe__repeat", arguments='{"text":"ab","times":2}'
            ),
        ),
        reasoning_tokens=20,
    )


def dumped(updates: list[Any]) -> str:
    return "".join(update.model_dump_json() for update in updates)


def session_updates(client: RecordingClient, session_id: str) -> list[Any]:
    return [update for sid, update in client.updates if sid == session_id]


def tool_calls(updates: list[Any]) -> list[tuple[str, str, str | None, str | None]]:
    """Every tool call (a task's or a tool's) as ``(update, id, status, kind)``."""
    return [
        (
            update.session_update,
            update.tool_call_id,
            update.status,
            getattr(update, "kind", None),
        )
        for update in updates
        if isinstance(update, ToolCallStart | ToolCallProgress)
    ]


def text_of(updates: list[Any], kind: type) -> str:
    return "".join(update.content.text for update in updates if isinstance(update, kind))


def turns_of(updates: list[Any]) -> list[list[Any]]:
    """Replayed updates split at each ``user_message_chunk`` (one list per turn)."""
    turns: list[list[Any]] = []
    for update in updates:
        if isinstance(update, UserMessageChunk):
            turns.append([])
        assert turns, "the replay starts with the user's message"
        turns[-1].append(update)
    return turns


async def prompt(agent: Agent, session_id: str, text: str) -> tuple[str, list[Any]]:
    """One prompt: its run id and the updates it sent."""
    before = len(session_updates(agent.client, session_id))
    response = await bounded(agent.conn.prompt(session_id=session_id, prompt=[text_block(text)]))
    assert response.stop_reason == "end_turn"
    assert response.field_meta["thoughtline"]["status"] == "completed"
    return response.field_meta["thoughtline"]["run_id"], session_updates(agent.client, session_id)[
        before:
    ]


@pytest.mark.parametrize("mode", ["hidden", "surface", "telemetry_only"])
async def test_a_session_survives_a_restart_replays_its_turns_and_goes_on(
    home: Path, sim: Simulator, environ: dict[str, str], mode: str
) -> None:
    sim.script_turns(
        answered(1, "One."), calling(2), answered(2, "Two: abab."), answered(3, "Three.")
    )
    probe = stdio("probe", TEST_SERVER)
    displays = mode == "surface"

    async with spawn(home, environ, "--provider", "deepseek") as first:
        await bounded(first.conn.initialize(protocol_version=PROTOCOL_VERSION))
        session = await bounded(
            first.conn.new_session(
                cwd=str(home.parent), mcp_servers=[probe], thoughtline={"chain_of_thought": mode}
            )
        )
        session_id = session.session_id
        run_1, live_1 = await prompt(first, session_id, "First?")
        run_2, live_2 = await prompt(first, session_id, "Use the tool.")
        # The second prompt's first request carried the first turn.
        second = json.dumps(sim.requests[1].body)
        assert "First?" in second and "One." in second and "Use the tool." in second
        first.process.kill()  # no goodbye: the store is all the next process has
        await first.process.wait()
    first_log = first.stderr.read_text()

    async with spawn(home, environ) as second_agent:
        init = await bounded(second_agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        assert init.agent_capabilities is not None
        assert init.agent_capabilities.load_session is True
        loaded = await bounded(
            second_agent.conn.load_session(
                cwd=str(home.parent), session_id=session_id, mcp_servers=[probe]
            )
        )
        # The whole history arrived before the answer.
        replay = session_updates(second_agent.client, session_id)
        assert loaded.modes is not None and loaded.modes.current_mode_id == mode
        run_3, live_3 = await prompt(second_agent, session_id, "Last?")
    second_log = second_agent.stderr.read_text()

    assert [update.session_update for update in replay] == [
        update for update in (u.session_update for u in replay) if update in REPLAYED
    ]
    replayed_1, replayed_2 = turns_of(replay)
    for replayed, live, request, answer, run_id in (
        (replayed_1, live_1, "First?", "One.", run_1),
        (replayed_2, live_2, "Use the tool.", "Two: abab.", run_2),
    ):
        assert text_of(replayed, UserMessageChunk) == request
        # Tool calls (the task's, the tool's) as the live prompt showed them.
        assert tool_calls(replayed) == tool_calls(live)
        assert text_of(replayed, AgentMessageChunk) == text_of(live, AgentMessageChunk)
        assert text_of(replayed, AgentMessageChunk).startswith(answer)
        task = stored_run(home, run_id)["tasks"][0]
        if displays:
            assert text_of(replayed, AgentThoughtChunk) == task["reasoning"]
            assert "ⓘ" not in text_of(replayed, AgentMessageChunk)
        else:
            assert task["reasoning"] is None
            assert not [u for u in replayed if isinstance(u, AgentThoughtChunk)]
            assert text_of(replayed, AgentMessageChunk).endswith(f"ⓘ {task['reasoning_notice']}")
        start = replayed[1]
        assert isinstance(start, ToolCallStart)
        assert (start.title, start.kind, start.raw_input["chain_of_thought"]) == (
            TASK_TITLE,
            "think",
            mode,
        )
    tool_start = next(
        u for u in replayed_2 if isinstance(u, ToolCallStart) and "/" in u.tool_call_id
    )
    assert (tool_start.title, tool_start.kind) == ("probe.repeat", "other")
    assert [u.status for u in replayed_2 if isinstance(u, ToolCallProgress)] == [
        "completed",
        "completed",
    ]
    assert "abab" in dumped(replayed_2)
    thoughts = text_of(replay, AgentThoughtChunk)
    for turn in (1, 2):
        assert (canary(turn) in thoughts) is displays

    # The third prompt continued the loaded session: its request carried both turns.
    third = json.dumps(sim.requests[-1].body)
    for text in ("First?", "One.", "Use the tool.", "abab", "Two: abab.", "Last?"):
        assert text in third, text
    snapshot = stored_run(home, run_3)
    assert (snapshot["conversation_id"], snapshot["continues"]) == (session_id, run_2)
    assert (snapshot["chain_of_thought"], snapshot["chain_of_thought_source"]) == (
        mode,
        "explicit",
    )
    assert snapshot["tasks"][0]["history"]["turns"] == 2
    assert stored_run(home, run_2)["continues"] == run_1
    assert stored_run(home, run_1)["conversation_id"] == session_id
    assert text_of(live_3, AgentMessageChunk).startswith("Three.")
    assert (canary(3) in text_of(live_3, AgentThoughtChunk)) is displays

    everything = dumped(live_1 + live_2) + dumped(replay + live_3) + first_log + second_log
    assert CANARY_KEY not in everything
    if not displays:  # telemetry_only too: the trace is never read for the replay
        for turn in (1, 2, 3):
            assert canary(turn) not in everything, turn
    if mode == "telemetry_only":  # the trace had them to offer
        assert canary(1).encode() in all_bytes_under(home)
    if mode == "hidden":
        files = all_bytes_under(home)
        later = json.dumps([request.body for request in sim.requests[3:]])
        for turn in (1, 2, 3):
            assert canary(turn).encode() not in files, turn
            # Never stored, so no later turn sends it back (turn 2's own tool loop may,
            # in memory, where the wire requires it).
            assert canary(turn) not in later, turn


async def test_a_prompt_goes_on_from_the_last_turn_that_left_something_to_continue_from(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    """In-process: a failed turn is part of the conversation (its request goes on), a
    turn cancelled before any task ran leaves nothing to continue from and is passed
    over; a load in the same process replays all four turns, takes ``_meta.thoughtline``
    and is refused while a prompt runs or for a bad server."""
    sim.script_turns(answered(1, "One."), answered(2, "unused"), answered(4, "Four."))
    runtime, store = make_runtime(tmp_path / "home", sim_server, environ)
    try:
        agent = ThoughtlineAcpAgent(runtime, SessionSettings(provider="deepseek"))
        client = FakeClient()
        agent.on_connect(client)  # type: ignore[arg-type]
        await agent.initialize(protocol_version=PROTOCOL_VERSION)
        session_id = (await agent.new_session(cwd="/", mcp_servers=[])).session_id
        ids = []
        for text in ("First?", "Second?", "Third?", "Fourth?"):
            if text == "Second?":
                sim.inject(Fault.http_error(401, "invalid x-api-key"))
            pending = asyncio.ensure_future(
                agent.prompt(prompt=[text_block(text)], session_id=session_id)
            )
            if text == "Third?":
                await asyncio.sleep(0)  # the prompt runs up to its first wait
                turn = agent.sessions[session_id].turn
                assert turn is not None and turn.run_id is None  # the run is being prepared
                await agent.cancel(session_id)
            response = await bounded(pending)
            assert response.field_meta is not None
            ids.append(response.field_meta["thoughtline"]["run_id"])
        runs = store.conversation_runs(session_id)
        assert [run.id for run in runs] == ids
        assert [run.status for run in runs] == ["completed", "failed", "cancelled", "completed"]
        assert [task.status for task in runs[2].tasks] == ["cancelled"]
        assert [run.continues for run in runs] == [None, ids[0], ids[1], ids[1]]
        fourth = json.dumps(sim.requests[-1].body)
        for text in ("First?", "One.", "Fourth?"):
            assert text in fourth, text
        # The failed turn's prompt got no answer, and the cancelled one never reached a
        # model: neither is sent again.
        assert "Second?" not in fourth
        assert "Third?" not in fourth

        client.updates.clear()
        loaded = await agent.load_session(
            cwd="/",
            session_id=session_id,
            mcp_servers=[],
            thoughtline={"effort": "low", "max_cost": 500},
        )
        assert text_of(client.updates, UserMessageChunk) == "First?Second?Third?Fourth?"
        replayed = text_of(client.updates, AgentMessageChunk)
        assert "✗ PROVIDER_AUTH_ERROR" in replayed and "Four." in replayed
        # ``_meta.thoughtline`` on the load changes the session as on session/new.
        options = {option.id: option.current_value for option in loaded.config_options or []}
        assert options == {"chain_of_thought": "hidden", "effort": "low"}
        response = await agent.prompt(prompt=[text_block("Fifth?")], session_id=session_id)
        assert response.field_meta is not None
        fifth = store.get_run(response.field_meta["thoughtline"]["run_id"])
        assert fifth is not None and fifth.continues == ids[3]
        assert [task.effort for task in fifth.tasks] == ["low"]
        assert fifth.max_cost == 500 and fifth.status == "completed"

        # Not while the session runs a prompt.
        pending = asyncio.ensure_future(
            agent.prompt(prompt=[text_block("Sixth?")], session_id=session_id)
        )
        await asyncio.sleep(0)  # the prompt runs up to its first wait
        with pytest.raises(RequestError) as busy:
            await agent.load_session(cwd="/", session_id=session_id, mcp_servers=[])
        assert busy.value.data == {"code": "SESSION_BUSY", "sessionId": session_id}
        await bounded(pending)

        # A load's servers are checked as session/new's are, and named as the load's.
        with pytest.raises(RequestError) as bad_server:
            await agent.load_session(
                cwd="/", session_id=session_id, mcp_servers=[stdio("no good", "-V")]
            )
        assert bad_server.value.data == {"code": "SESSION_MCP_SERVER_INVALID"}
        assert str(bad_server.value).startswith("session/load mcpServers[0]: 'no good'")
    finally:
        await runtime.aclose()
        store.close()
