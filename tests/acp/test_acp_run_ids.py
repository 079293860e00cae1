"""``session/load`` names a conversation as every surface does: by its id, or by any run
of it in any form a run id takes (short id, a unique start, ``latest``), through a real
agent process; a start two runs share is refused with both, ``RUN_ID_AMBIGUOUS``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp.exceptions import RequestError
from acp.meta import PROTOCOL_VERSION
from acp.schema import UserMessageChunk

from tests.acp.test_acp_agent import bounded, spawn, stored_run
from tests.acp.test_acp_sessions import prompt, session_updates, text_of
from tests.store.builders import make_run
from thoughtline.records import short_run_id
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import Simulator, Transcript

pytestmark = pytest.mark.slow  # an agent process per test

TWINS = ("run_kq3x9m2a20261201232642000001", "run_kq3x7h4b20261201232643000002")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    store = SQLiteStore(home / "thoughtline.db")
    try:
        for twin in TWINS:  # older than the session's runs: `latest` is never one of them
            store.create_run(
                make_run(twin, status="completed", created_at="2026-01-01T00:00:00.000Z")
            )
    finally:
        store.close()
    return home


async def test_a_session_loads_by_a_short_id_a_prefix_or_latest_of_one_of_its_runs(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script_turns(*(Transcript(answer=f"Answer {turn}.") for turn in range(1, 6)))
    async with spawn(home, environ, "--provider", "deepseek") as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        session = await bounded(agent.conn.new_session(cwd=str(home.parent), mcp_servers=[]))
        first, _ = await prompt(agent, session.session_id, "First?")
        with pytest.raises(RequestError) as ambiguous:
            await bounded(
                agent.conn.load_session(cwd=str(home.parent), session_id="kq3x", mcp_servers=[])
            )
        assert ambiguous.value.data == {"code": "RUN_ID_AMBIGUOUS"}
        assert str(ambiguous.value).startswith(
            "'kq3x' matches 2 runs: kq3x9m2a, kq3x7h4b. Give more of the id."
        )
        previous = first
        for given in (short_run_id(first), short_run_id(first)[:5], "latest"):
            await bounded(
                agent.conn.load_session(cwd=str(home.parent), session_id=given, mcp_servers=[])
            )
            replay = session_updates(agent.client, given)
            assert text_of(replay, UserMessageChunk).startswith("First?"), given
            run_id, _ = await prompt(agent, given, f"Loaded by {given}?")
            snapshot = stored_run(home, run_id)
            # The loaded conversation goes on: the session's, whatever named it.
            assert snapshot["conversation_id"] == session.session_id, given
            assert snapshot["continues"] == previous, given
            sent = json.dumps(sim.requests[-1].body)
            assert "First?" in sent and "Answer 1." in sent, given
            previous = run_id
