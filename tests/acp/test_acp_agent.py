"""``thoughtline acp`` as an editor sees it: the ``acp`` package's client connection
spawns ``python -m thoughtline.cli acp`` over pipes, against the provider simulator and
a store under a temporary THOUGHTLINE_HOME.

The reasoning canary must reach the client exactly in the modes that display reasoning
(as ``agent_thought_chunk`` updates), and the canary key never."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from acp.client.connection import ClientSideConnection
from acp.connection import Connection
from acp.exceptions import RequestError
from acp.helpers import text_block
from acp.meta import PROTOCOL_VERSION
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ToolCallProgress,
    ToolCallStart,
)
from acp.stdio import spawn_agent_process, spawn_stdio_connection

from tests.cli.test_run_cli import cli_env
from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import ANSWER, CANARY, TRANSCRIPT
from tests.support import HOSTILE_MODEL_IDS, default_signals_in_children
from thoughtline import __version__
from thoughtline.model.requests import model_id_problem
from thoughtline.records import CHAIN_OF_THOUGHT_MODES
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import Simulator, Transcript

pytestmark = pytest.mark.slow  # the ACP agent as a child process over stdio

DISPLAYS = {"surface", "surface_and_telemetry"}
TURN_UPDATES = ("tool_call", "tool_call_update", "agent_message_chunk", "agent_thought_chunk")
WAIT_S = 30.0  # a hang guard, not a timing assertion

T = TypeVar("T")


async def bounded(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, WAIT_S)


@dataclass
class RecordingClient:
    """The editor side: records every session/update it receives."""

    updates: list[tuple[str, Any]] = field(default_factory=list)
    first_answer: asyncio.Event = field(default_factory=asyncio.Event)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        if isinstance(update, AgentMessageChunk):
            self.first_answer.set()

    def turn(self, session_id: str) -> list[Any]:
        """The prompt-turn updates of one session, in arrival order."""
        return [
            update
            for sid, update in self.updates
            if sid == session_id and update.session_update in TURN_UPDATES
        ]


@dataclass
class Agent:
    conn: ClientSideConnection
    client: RecordingClient
    stderr: Path
    process: asyncio.subprocess.Process


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@asynccontextmanager
async def spawn(
    home: Path, environ: dict[str, str], *args: str, client: RecordingClient | None = None
) -> AsyncIterator[Agent]:
    client = client or RecordingClient()
    stderr_path = home.parent / "acp-stderr.log"
    with stderr_path.open("wb") as stderr, default_signals_in_children():
        async with spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "thoughtline.cli",
            "acp",
            *args,
            env=cli_env(home, environ),
            cwd=home.parent,
            transport_kwargs={"stderr": stderr.fileno()},
        ) as (conn, process):
            yield Agent(conn, client, stderr_path, process)


async def start_session(agent: Agent, **meta: Any) -> str:
    await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
    session = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[], **meta))
    return session.session_id


def texts(updates: list[Any], kind: type) -> str:
    return "".join(update.content.text for update in updates if isinstance(update, kind))


def collapsed(updates: list[Any]) -> list[str]:
    """The update kinds with runs of the same kind collapsed: the sequence's shape."""
    shape: list[str] = []
    for update in updates:
        if not shape or shape[-1] != update.session_update:
            shape.append(update.session_update)
    return shape


def stored_run(home: Path, run_id: str) -> dict[str, Any]:
    store = SQLiteStore(home / "thoughtline.db")
    try:
        run = store.get_run(run_id)
        assert run is not None
        return run.snapshot()
    finally:
        store.close()


async def test_initialize_negotiates_and_new_session_offers_the_modes(
    home: Path, environ: dict[str, str]
) -> None:
    async with spawn(home, environ, "--effort", "low") as agent:
        init = await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        assert init.protocol_version == PROTOCOL_VERSION
        assert init.agent_info is not None
        assert (init.agent_info.name, init.agent_info.version) == ("thoughtline", __version__)
        capabilities = init.agent_capabilities
        assert capabilities is not None and capabilities.load_session is True
        assert capabilities.prompt_capabilities is not None
        assert capabilities.prompt_capabilities.image is False
        # A version we do not speak: we answer with ours and let the client decide.
        future = await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION + 41))
        assert future.protocol_version == PROTOCOL_VERSION

        session = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[]))
        assert session.modes is not None
        assert session.modes.current_mode_id == "hidden"  # the config's default
        assert [mode.id for mode in session.modes.available_modes] == list(CHAIN_OF_THOUGHT_MODES)
        options = {option.id: option for option in session.config_options or []}
        assert options["chain_of_thought"].current_value == "hidden"
        assert options["chain_of_thought"].category == "mode"
        assert options["effort"].current_value == "low"  # from the command line
        assert options["effort"].category == "thought_level"

        # Mode via config option: the mode state follows (current_mode_update).
        changed = await bounded(
            agent.conn.set_config_option(
                config_id="chain_of_thought", session_id=session.session_id, value="surface"
            )
        )
        assert {o.id: o.current_value for o in changed.config_options} == {
            "chain_of_thought": "surface",
            "effort": "low",
        }
        await bounded(agent.conn.set_session_mode(session_id=session.session_id, mode_id="hidden"))
        # Notifications are handled concurrently with responses: wait for both to land.
        for _ in range(100):
            kinds = [update.session_update for _, update in agent.client.updates]
            if "current_mode_update" in kinds and "config_option_update" in kinds:
                break
            await asyncio.sleep(0.05)
        mode_updates = [
            u for _, u in agent.client.updates if u.session_update == "current_mode_update"
        ]
        assert [u.current_mode_id for u in mode_updates] == ["surface"]
        option_updates = [
            u for _, u in agent.client.updates if u.session_update == "config_option_update"
        ]
        assert [
            {o.id: o.current_value for o in u.config_options}["chain_of_thought"]
            for u in option_updates
        ] == ["hidden"]


async def test_prompt_streams_the_task_and_discloses_per_mode(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    """One agent, one session per mode (sessions choose their modes independently)."""
    sim.script(TRANSCRIPT)
    responses = {}
    async with spawn(home, environ, "--provider", "deepseek") as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        sessions = {}
        for mode in CHAIN_OF_THOUGHT_MODES:
            session = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[]))
            sessions[mode] = session.session_id
            await bounded(agent.conn.set_session_mode(session_id=session.session_id, mode_id=mode))
        for mode, session_id in sessions.items():
            responses[mode] = await bounded(
                agent.conn.prompt(
                    session_id=session_id, prompt=[text_block("Explain the decision.")]
                )
            )
    log = agent.stderr.read_text()
    assert CANARY not in log and CANARY_KEY not in log

    for mode, session_id in sessions.items():
        check_mode_turn(home, agent.client, mode, session_id, responses[mode])


def check_mode_turn(
    home: Path, client: RecordingClient, mode: str, session_id: str, response: Any
) -> None:
    assert response.stop_reason == "end_turn", mode
    assert response.field_meta is not None
    run_id = response.field_meta["thoughtline"]["run_id"]
    assert response.field_meta["thoughtline"]["status"] == "completed", mode

    updates = client.turn(session_id)
    displays = mode in DISPLAYS
    if displays:
        assert collapsed(updates) == [
            "tool_call",
            "agent_thought_chunk",
            "agent_message_chunk",
            "tool_call_update",
        ], mode
    else:
        assert collapsed(updates) == ["tool_call", "agent_message_chunk", "tool_call_update"], mode

    start, end = updates[0], updates[-1]
    assert isinstance(start, ToolCallStart)
    assert (start.title, start.kind, start.status) == (
        "assistant · deepseek:deepseek-reasoner",
        "think",
        "in_progress",
    )
    assert start.raw_input["chain_of_thought"] == mode
    assert isinstance(end, ToolCallProgress)
    assert (end.tool_call_id, end.status) == (start.tool_call_id, "completed")
    task = end.raw_output
    assert task["output"] == ANSWER
    assert end.content is not None and end.content[0].content.text.startswith("done · ")

    thoughts = texts(updates, AgentThoughtChunk)
    message = texts(updates, AgentMessageChunk)
    if displays:
        assert CANARY in thoughts, mode
        assert message == ANSWER, mode  # reasoning shown: no notice
    else:
        assert thoughts == "", mode
        assert message == f"{ANSWER}\n\nⓘ {task['reasoning_notice']}", mode
    everything = "".join(
        update.model_dump_json() for sid, update in client.updates if sid == session_id
    )
    assert (CANARY in everything) is displays, mode
    assert CANARY_KEY not in everything

    snapshot = stored_run(home, run_id)
    assert (snapshot["chain_of_thought"], snapshot["chain_of_thought_source"]) == (mode, "explicit")
    assert snapshot["tasks"][0]["id"] == start.tool_call_id


async def test_session_settings_from_meta_run_several_tasks_with_headings(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    async with spawn(home, environ) as agent:
        session_id = await start_session(
            agent,
            thoughtline={
                "chain_of_thought": "surface",
                "roles": ["architect", "reviewer"],
                "provider": "deepseek",
                "effort": "low",
            },
        )
        response = await bounded(
            agent.conn.prompt(session_id=session_id, prompt=[text_block("Design it.")])
        )
    assert response.stop_reason == "end_turn"
    updates = agent.client.turn(session_id)
    starts = [u for u in updates if isinstance(u, ToolCallStart)]
    ends = [u for u in updates if isinstance(u, ToolCallProgress)]
    assert sorted(u.title for u in starts) == [
        "architect · deepseek:deepseek-reasoner",
        "reviewer · deepseek:deepseek-reasoner",
    ]
    assert {u.raw_input["effort"] for u in starts} == {"low"}
    assert sorted(u.tool_call_id for u in ends) == sorted(u.tool_call_id for u in starts)
    assert {u.status for u in ends} == {"completed"}
    # Each task's update comes after its start; every chunk sits between the first start
    # and the last end.
    position = {id(u): index for index, u in enumerate(updates)}
    for start in starts:
        end = next(u for u in ends if u.tool_call_id == start.tool_call_id)
        assert position[id(start)] < position[id(end)]
    message = texts(updates, AgentMessageChunk)
    for title in (
        "architect · deepseek:deepseek-reasoner",
        "reviewer · deepseek:deepseek-reasoner",
    ):
        assert f"**{title}**" in message
        assert f"**{title}**" in texts(updates, AgentThoughtChunk)
    assert message.count(ANSWER) == 2
    assert "ⓘ" not in message  # reasoning shown for both: no notices
    snapshot = stored_run(home, response.field_meta["thoughtline"]["run_id"])
    assert snapshot["chain_of_thought"] == "surface"
    assert [task["role"] for task in snapshot["tasks"]] == ["architect", "reviewer"]


async def test_cancel_mid_run_returns_cancelled(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(Transcript(answer="word " * 200, chunk_chars=5))  # ~200 paced frames
    sim.pace_s = 0.05
    async with spawn(home, environ, "--provider", "deepseek") as agent:
        session_id = await start_session(agent)
        prompt = asyncio.ensure_future(
            agent.conn.prompt(session_id=session_id, prompt=[text_block("Go on.")])
        )
        await bounded(agent.client.first_answer.wait())
        await agent.conn.cancel(session_id=session_id)
        response = await bounded(prompt)
        assert agent.process.returncode is None
    assert response.stop_reason == "cancelled"
    assert response.field_meta["thoughtline"]["status"] == "cancelled"
    updates = agent.client.turn(session_id)
    end = updates[-1]
    assert isinstance(end, ToolCallProgress)
    assert end.status == "failed"
    assert end.raw_output["status"] == "cancelled"
    assert "what arrived is kept" in end.content[0].content.text
    streamed = texts(updates, AgentMessageChunk)
    assert streamed.startswith("word")
    assert end.raw_output["output"] is not None
    assert len(end.raw_output["output"]) < len("word " * 200)
    snapshot = stored_run(home, response.field_meta["thoughtline"]["run_id"])
    assert snapshot["status"] == "cancelled"


async def test_bad_requests_are_json_rpc_errors_and_the_agent_keeps_serving(
    home: Path, environ: dict[str, str]
) -> None:
    async with spawn(home, environ, "--provider", "deepseek") as agent:
        session_id = await start_session(agent)
        conn = agent.conn

        with pytest.raises(RequestError) as unknown_session:
            await bounded(conn.prompt(session_id="sess_nope", prompt=[text_block("Hi")]))
        assert unknown_session.value.code == -32602
        assert "Unknown session 'sess_nope'" in str(unknown_session.value)

        with pytest.raises(RequestError) as bad_mode:
            await bounded(conn.set_session_mode(session_id=session_id, mode_id="loud"))
        assert bad_mode.value.code == -32602
        assert "Unknown chain_of_thought mode 'loud'" in str(bad_mode.value)
        assert "Allowed values: hidden, surface, telemetry_only, surface_and_telemetry" in str(
            bad_mode.value
        )
        assert bad_mode.value.data == {"code": "CHAIN_OF_THOUGHT_UNKNOWN"}

        with pytest.raises(RequestError) as bad_option:
            await bounded(
                conn.set_config_option(config_id="volume", session_id=session_id, value="11")
            )
        assert bad_option.value.code == -32602

        with pytest.raises(RequestError) as bad_meta:
            await bounded(conn.new_session(cwd="/", mcp_servers=[], thoughtline={"colour": "red"}))
        assert bad_meta.value.code == -32602
        assert "unknown key(s) colour" in str(bad_meta.value)

        with pytest.raises(RequestError) as bad_provider:
            await bounded(
                conn.new_session(cwd="/", mcp_servers=[], thoughtline={"provider": "nowhere"})
            )
        assert bad_provider.value.code == -32602
        assert bad_provider.value.data["code"] == "ENDPOINT_UNKNOWN"

        with pytest.raises(RequestError) as bad_role:
            await bounded(
                conn.new_session(cwd="/", mcp_servers=[], thoughtline={"roles": ["poet"]})
            )
        assert bad_role.value.code == -32602
        assert bad_role.value.data["code"] == "ROLE_UNKNOWN"

        with pytest.raises(RequestError) as empty_prompt:
            await bounded(conn.prompt(session_id=session_id, prompt=[text_block("  ")]))
        assert empty_prompt.value.code == -32602

        # A session/cancel for nobody is a notification: no answer, no crash.
        await conn.cancel(session_id="sess_nope")
        # Still serving: a fresh session works.
        assert (await bounded(conn.new_session(cwd="/", mcp_servers=[]))).session_id
        assert agent.process.returncode is None
    log = agent.stderr.read_text()
    assert "session/cancel for unknown session 'sess_nope' ignored" in log
    assert "Traceback" not in log


async def test_a_model_id_that_is_not_one_refuses_the_session_and_nothing_is_sent(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    async with spawn(home, environ, "--provider", "gemini") as agent:
        session_id = await start_session(agent)
        answered = await bounded(
            agent.conn.prompt(session_id=session_id, prompt=[text_block("Hi")])
        )
        assert answered.field_meta["thoughtline"]["status"] == "completed"
        sent = list(sim.requests)
        for model in (*HOSTILE_MODEL_IDS, ""):
            meta = {"thoughtline": {"model": model}}
            for call in (
                agent.conn.new_session(cwd="/", mcp_servers=[], **meta),
                agent.conn.load_session(cwd="/", session_id=session_id, mcp_servers=[], **meta),
            ):
                with pytest.raises(RequestError) as refused:
                    await bounded(call)
                assert refused.value.code == -32602
                assert refused.value.data == {"code": "MODEL_ID_INVALID"}
                assert str(refused.value) == model_id_problem(model)
        assert agent.process.returncode is None
    assert sim.requests == sent
    assert sim.unrouted == []


def refused_at_start(home: Path, environ: dict[str, str], *args: str) -> str:
    """``thoughtline acp ARGS`` refusing to start: exit 2, nothing on stdout (the
    protocol's); its stderr."""
    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "acp", *args],
        env=cli_env(home, environ),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""  # stdout is the protocol's
    return result.stderr


def test_a_default_model_id_that_is_not_one_is_one_sentence(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    said = refused_at_start(home, environ, "--model", "../../../evil")
    assert said == f"thoughtline: {model_id_problem('../../../evil')}\n"
    assert sim.requests == []


async def test_raw_json_rpc_malformed_params_and_unknown_methods(
    home: Path, environ: dict[str, str]
) -> None:
    async def no_client_methods(method: str, params: Any, is_notification: bool) -> None:
        raise RequestError.method_not_found(method)

    async def error_of(conn: Connection, method: str, params: Any) -> RequestError:
        with pytest.raises(RequestError) as caught:
            await bounded(conn.send_request(method, params))
        return caught.value

    with default_signals_in_children():
        async with spawn_stdio_connection(
            no_client_methods,
            sys.executable,
            "-m",
            "thoughtline.cli",
            "acp",
            env=cli_env(home, environ),
            cwd=home.parent,
        ) as (conn, process):
            init = await bounded(
                conn.send_request("initialize", {"protocolVersion": PROTOCOL_VERSION})
            )
            assert init["protocolVersion"] == PROTOCOL_VERSION
            assert (await error_of(conn, "session/frobnicate", {})).code == -32601
            assert (await error_of(conn, "session/list", {})).code == -32601
            unknown = await error_of(
                conn, "session/load", {"cwd": "/", "sessionId": "sess_x", "mcpServers": []}
            )
            assert unknown.code == -32602
            assert str(unknown) == (
                "Unknown session 'sess_x': nothing of it is stored here; create one with session/new."
            )
            assert unknown.data == {"code": "SESSION_UNKNOWN", "sessionId": "sess_x"}
            assert (await error_of(conn, "session/load", {"sessionId": "sess_x"})).code == -32602
            assert (await error_of(conn, "session/new", {"cwd": 5})).code == -32602
            assert (await error_of(conn, "session/prompt", {"sessionId": "x"})).code == -32602
            session = await bounded(
                conn.send_request("session/new", {"cwd": "/", "mcpServers": []})
            )
            image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
            unsupported = await error_of(
                conn, "session/prompt", {"sessionId": session["sessionId"], "prompt": [image]}
            )
            assert unsupported.code == -32602
            assert "text and resource links only" in str(unsupported)
            assert process.returncode is None
