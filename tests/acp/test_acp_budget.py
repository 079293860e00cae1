"""A budget through the ACP agent (``thoughtline acp`` over stdio): ``--max-cost`` is the
default of every session, ``_meta.thoughtline.max_cost`` a session's own, and every
prompt's run carries it, the first and the ones that continue the session."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp.exceptions import RequestError
from acp.helpers import text_block

from tests.acp.test_acp_agent import (
    bounded,
    home,
    refused_at_start,
    spawn,
    start_session,
    stored_run,
)
from thoughtline.testing import Simulator, Transcript

__all__ = ["home"]  # the fixture, shared

# o4-mini is priced ($4.40 per million output tokens): a tenth of a cent does not pay
# for the 256 output tokens a budget caps a call at, at the fewest.
OPENAI = ("--provider", "openai", "--model", "o4-mini")


async def test_a_session_budget_refuses_each_prompt_that_could_overspend(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(Transcript(answer="Done."))
    async with spawn(home, environ, *OPENAI, "--max-cost", "0.001") as agent:
        session_id = await start_session(agent)
        first = await bounded(
            agent.conn.prompt(session_id=session_id, prompt=[text_block("Explain.")])
        )
        again = await bounded(
            agent.conn.prompt(session_id=session_id, prompt=[text_block("And then?")])
        )
        updates = agent.client.turn(session_id)
    assert sim.requests == []  # refused before anything was sent
    for response in (first, again):
        meta = response.field_meta["thoughtline"]
        assert meta["status"] == "failed"
        run = stored_run(home, meta["run_id"])
        assert run["max_cost"] == 0.001
        (task,) = run["tasks"]
        assert task["error"]["code"] == "BUDGET_EXCEEDED"
        assert "of the run's $0.0010 budget after 0 model calls" in task["error"]["message"]
    # The refused run made no call, so it left nothing to continue: the second prompt
    # starts the conversation again, and still has the session's budget.
    second = stored_run(home, again.field_meta["thoughtline"]["run_id"])
    assert second["continues"] is None
    shown = "".join(
        update.content.text for update in updates if update.session_update == "agent_message_chunk"
    )
    assert shown.count("Budget exceeded") == 2  # the editor's user is told each time


async def test_a_session_budget_wins_over_the_default_and_bad_ones_are_refused(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(Transcript(answer="Done."))
    async with spawn(home, environ, *OPENAI, "--max-cost", "0.01") as agent:
        session_id = await start_session(agent, thoughtline={"max_cost": 1_000})
        response = await bounded(
            agent.conn.prompt(session_id=session_id, prompt=[text_block("Explain.")])
        )
        follow_up = await bounded(
            agent.conn.prompt(session_id=session_id, prompt=[text_block("And then?")])
        )
        refused = []
        for bad in (-1, "1", True, 1e7, None):
            with pytest.raises(RequestError) as error:
                await bounded(
                    agent.conn.new_session(cwd="/", mcp_servers=[], thoughtline={"max_cost": bad})
                )
            refused.append(error.value)
        assert agent.process.returncode is None  # still serving
    meta = response.field_meta["thoughtline"]
    assert meta["status"] == "completed"
    assert stored_run(home, meta["run_id"])["max_cost"] == 1_000
    continued = stored_run(home, follow_up.field_meta["thoughtline"]["run_id"])
    assert continued["continues"] == meta["run_id"]
    assert continued["status"] == "completed" and continued["max_cost"] == 1_000
    assert len(sim.requests) == 2
    for error in refused:
        assert error.code == -32602
        assert error.data == {"code": "SESSION_SETTINGS_INVALID"}
        assert "max_cost must be a number of US dollars from 0 to 1,000,000" in str(error)
        assert "_meta.thoughtline.max_cost" in str(error)


def test_a_bad_default_budget_is_one_sentence_naming_the_flag(
    home: Path, environ: dict[str, str]
) -> None:
    said = refused_at_start(home, environ, "--max-cost", "-1")
    assert "--max-cost" in said and "from 0 to 1,000,000" in said
