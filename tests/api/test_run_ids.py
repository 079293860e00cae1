"""Run ids in the Python API take every form the other surfaces take: ``status``,
``trace``, ``continues=`` and a resumed ``Conversation`` find a run by its short id, a
unique start of it or ``latest``, and a start two runs share raises
``RUN_ID_AMBIGUOUS`` naming both, before anything is stored."""

from __future__ import annotations

from pathlib import Path

import pytest

import thoughtline
from tests.store.builders import make_run
from thoughtline import Conversation, Orchestrator, ThoughtlineError
from thoughtline.records import short_run_id
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import Simulator

CONFIG = thoughtline.Config(path=None)
TWINS = ("run_kq3x9m2a20261201232642000001", "run_kq3x7h4b20261201232643000002")
AMBIGUOUS = "'kq3x' matches 2 runs: kq3x9m2a, kq3x7h4b. Give more of the id."


@pytest.fixture
def twins(user_env: dict[str, str]) -> None:
    """Two stored runs whose short ids start alike, older than any run a test starts."""
    home = Path(user_env["THOUGHTLINE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(home / "thoughtline.db")
    try:
        for twin in TWINS:
            store.create_run(
                make_run(twin, status="completed", created_at="2026-01-01T00:00:00.000Z")
            )
    finally:
        store.close()


@pytest.mark.usefixtures("twins")
async def test_status_trace_and_continues_take_latest_and_refuse_a_shared_start(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    async with Orchestrator.open(CONFIG, environ=user_env) as orchestrator:
        first = await orchestrator.start("Design a cache", roles=["architect"])
        short = short_run_id(first.id)
        for given in ("latest", short, short[:5]):
            assert orchestrator.status(given).id == first.id, given
            assert orchestrator.trace(given) == orchestrator.trace(first.id), given
        refusals = (
            lambda: orchestrator.status("kq3x"),
            lambda: orchestrator.trace("kq3x"),
            lambda: orchestrator.start("x", continues="kq3x"),
            lambda: orchestrator.conversation("kq3x").send("x"),
        )
        for refused in refusals:
            with pytest.raises(ThoughtlineError) as raised:
                refused()
            assert (raised.value.code, raised.value.message) == ("RUN_ID_AMBIGUOUS", AMBIGUOUS)
        second = await orchestrator.start("Shorter", continues="latest")
        assert [run.id for run in orchestrator.runs()] == [second.id, first.id, *reversed(TWINS)]
    assert (second.continues, second.conversation_id) == (first.id, first.id)


@pytest.mark.usefixtures("twins")
def test_a_conversation_resumes_from_latest_or_a_prefix(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    first = thoughtline.run("Design a cache", roles=["reviewer"], config=CONFIG, environ=user_env)
    with Conversation("latest", config=CONFIG, environ=user_env) as chat:
        second = chat.send("Shorter")
    with Conversation(short_run_id(second.id)[:5], config=CONFIG, environ=user_env) as chat:
        third = chat.send("Shorter still")
    with (
        Conversation("kq3x", config=CONFIG, environ=user_env) as stray,
        pytest.raises(ThoughtlineError) as raised,
    ):
        stray.send("x")
    assert (raised.value.code, raised.value.message) == ("RUN_ID_AMBIGUOUS", AMBIGUOUS)
    assert (second.continues, third.continues) == (first.id, second.id)
    assert third.conversation_id == first.id
    assert third.tasks[0].history is not None and third.tasks[0].history["turns"] == 2
