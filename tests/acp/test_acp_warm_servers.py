"""An ACP session keeps its MCP servers open from one prompt to the next, and stops them
when it is closed (``session/close``) or the agent exits: the server's process id is the
same across prompts, and gone once the session or the agent is."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError
from acp.helpers import text_block
from acp.meta import PROTOCOL_VERSION

from tests.acp.test_acp_agent import Agent, bounded, spawn, stored_run
from tests.acp.test_acp_tools import FINAL, calling, stdio
from tests.conftest import CANARY_KEY
from tests.support import alive
from tests.tools.test_mcp_tools import TEST_SERVER
from thoughtline.testing import Simulator

pytestmark = [
    pytest.mark.slow,  # the agent and tool server processes
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)"),
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


async def probe_session(agent: Agent, **server_env: str) -> str:
    init = await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
    capabilities = init.agent_capabilities
    assert capabilities is not None and capabilities.session_capabilities is not None
    assert capabilities.session_capabilities.close is not None  # session/close is served
    session = await bounded(
        agent.conn.new_session(cwd="/", mcp_servers=[stdio("probe", TEST_SERVER, env=server_env)])
    )
    return session.session_id


async def server_pid(agent: Agent, home: Path, sim: Simulator, session_id: str) -> int:
    """The probe server's process id, asked by one prompt of the session."""
    sim.script_turns(calling("probe__pid", {}), FINAL)
    response = await bounded(
        agent.conn.prompt(session_id=session_id, prompt=[text_block("Which pid?")])
    )
    assert response.stop_reason == "end_turn"
    snapshot: dict[str, Any] = stored_run(home, response.field_meta["thoughtline"]["run_id"])
    (call,) = snapshot["tasks"][0]["tool_calls"]
    assert call["status"] == "done", call
    return int(call["result"])


async def test_later_prompts_of_a_session_reuse_its_servers_and_session_close_stops_them(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    async with spawn(home, environ) as agent:
        session_id = await probe_session(agent)
        pids = [await server_pid(agent, home, sim, session_id) for _ in range(3)]
        assert len(set(pids)) == 1
        assert alive(pids[0])
        other = await probe_session(agent)  # another session: servers of its own
        assert await server_pid(agent, home, sim, other) != pids[0]
        await bounded(agent.conn.close_session(session_id=session_id))
        assert not alive(pids[0])  # stopped before session/close answered
        with pytest.raises(RequestError) as refused:
            await bounded(agent.conn.prompt(session_id=session_id, prompt=[text_block("Hi")]))
        assert refused.value.data["code"] == "SESSION_UNKNOWN"


async def test_the_agent_exiting_stops_every_sessions_servers(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    async with spawn(home, environ) as agent:
        session_id = await probe_session(agent)
        pid = await server_pid(agent, home, sim, session_id)
        assert alive(pid)
        assert agent.process.stdin is not None
        agent.process.stdin.close()  # the editor went away
        assert await bounded(agent.process.wait()) == 0
        assert not alive(pid)  # stopped by the agent before it exited, not by a lifeline


async def test_a_session_server_never_sees_a_provider_key_across_prompts(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    async with spawn(home, environ) as agent:
        session_id = await probe_session(agent, PROBE_MARK="its own")
        await server_pid(agent, home, sim, session_id)
        sim.script_turns(calling("probe__environment", {}), FINAL)
        await bounded(agent.conn.prompt(session_id=session_id, prompt=[text_block("Env?")]))
    sent = json.dumps(sim.requests[-1].body)
    assert "PROBE_MARK" in sent
    assert CANARY_KEY not in sent
