"""Conversations in the Python API: ``continues=`` on ``Orchestrator.start`` and
``thoughtline.run``, and the ``Conversation`` / ``AsyncConversation`` that pass the id
along, through the provider simulator.

A follow-up's request must carry the earlier turn; a hidden turn's reasoning (sent by a
model that reasons unasked) must reach no request, record or file; what cannot be
continued raises a ThoughtlineError with its code and stores nothing.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import thoughtline
from tests.cli.test_cancel import _query, _wait_until
from tests.runtime.test_disclosure_e2e import ANSWER, CANARY, TRANSCRIPT, all_bytes_under
from tests.support import start_process
from thoughtline import Conversation, Orchestrator, ThoughtlineError
from thoughtline.records.run_events import RunCompleted, RunStarted, TaskAnswerDelta
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.testing import DEFAULT_TRANSCRIPT, Fault, Simulator, Transcript

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "conversation.py"
CONFIG = thoughtline.Config(path=None)
SHORTER = "A token bucket per client."


def messages_of(sim: Simulator, profile: str) -> list[list[object]]:
    bodies = [request.body for request in sim.requests_for(profile)]
    return [list(body["messages"]) for body in bodies if body is not None]


async def test_an_async_conversation_sends_turn_one_with_the_follow_up(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    async with Orchestrator.open(CONFIG, environ=user_env) as orchestrator:
        chat = orchestrator.conversation()
        assert chat.continues is None
        first = await chat.send("Design a cache", roles=["architect"], chain_of_thought="surface")
        assert chat.continues == first.id
        handle = chat.send("Now make it shorter")
        assert (chat.continues, chat.last) == (handle.run_id, handle.run)
        events = [event async for event in handle]
        second = await handle
        stored = orchestrator.status(second.id)
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunCompleted)
    assert "".join(e.text for e in events if isinstance(e, TaskAnswerDelta)) == ANSWER
    assert (first.conversation_id, first.continues) == (first.id, None)
    assert (second.conversation_id, second.continues) == (first.id, first.id)
    assert stored.snapshot() == second.snapshot()
    # The same task again, in the mode chosen for the conversation's first run.
    (task,) = second.tasks
    assert (task.name, task.provider, task.model) == (
        "architect",
        first.tasks[0].provider,
        first.tasks[0].model,
    )
    assert (second.chain_of_thought, second.chain_of_thought_source) == ("surface", "run")
    assert task.reasoning is not None and CANARY in task.reasoning
    assert task.history is not None and task.history["turns"] == 1
    # The follow-up's request: turn 1's request and answer, then the new request.
    one, two = messages_of(sim, "anthropic")
    assert one == [{"role": "user", "content": "Design a cache"}]
    assert two == [
        *one,
        {"role": "assistant", "content": ANSWER},
        {"role": "user", "content": "Now make it shorter"},
    ]


async def test_start_with_continues_takes_new_roles_and_the_given_settings(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    async with Orchestrator.open(CONFIG, environ=user_env) as orchestrator:
        first = await orchestrator.start("Design a cache", roles=["architect"], effort="high")
        second = await orchestrator.start(
            "Review it", roles=["architect", "reviewer"], continues=first.id, effort="low"
        )
        # Another conversation on the same store stays apart.
        other = await orchestrator.start("Unrelated", roles=["architect"])
        chain = orchestrator.store.conversation_runs(first.id)
    assert [(task.name, task.effort) for task in second.tasks] == [
        ("architect", "low"),
        ("reviewer", "low"),
    ]
    assert [run.id for run in chain] == [first.id, second.id]
    assert other.conversation_id == other.id
    # Each task of the follow-up was sent turn 1 (the reviewer as plain text).
    sent = [json.dumps(body) for body in messages_of(sim, "anthropic")[1:3]]
    assert all("Design a cache" in body and DEFAULT_TRANSCRIPT.answer in body for body in sent)
    assert "Design a cache" not in json.dumps(messages_of(sim, "anthropic")[3])


async def test_what_cannot_be_continued_raises_its_code_and_stores_nothing(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    async with Orchestrator.open(CONFIG, environ=user_env) as orchestrator:
        prepared = await orchestrator.start("x", worker_backend="inline")
        sim.inject(Fault.stall(at="mid_answer", max_s=30), profile="anthropic")
        chat = orchestrator.conversation()
        running = chat.send("Long.", roles=["architect"])
        async for event in running:  # the run is under way, stalled mid-answer
            if isinstance(event, TaskAnswerDelta):
                break
        cases: list[tuple[object, str]] = [
            ("run_nope", "RUN_NOT_FOUND"),
            (running.run_id, "CONVERSATION_RUN_ACTIVE"),
            (prepared.id, "CONVERSATION_HISTORY_GONE"),
            ("", "REQUEST_INVALID"),
            (prepared, "REQUEST_INVALID"),  # a Run, not its id
        ]
        for continues, code in cases:
            with pytest.raises(ThoughtlineError) as raised:
                orchestrator.start("x", continues=continues)  # type: ignore[arg-type]
            assert raised.value.code == code, continues
        assert "continues='run_" in str(raised.value)  # the id to pass instead
        # A second send before the first ended is refused; the conversation stays put.
        with pytest.raises(ThoughtlineError) as raised:
            chat.send("Too soon.")
        assert raised.value.code == "CONVERSATION_RUN_ACTIVE"
        assert chat.continues == running.run_id
        with pytest.raises(ThoughtlineError) as raised:
            orchestrator.start(
                RunSpec(request="x", tasks=(TaskSpec(name="a", role="architect"),)),
                continues=prepared.id,
            )
        assert raised.value.code == "REQUEST_INVALID"
        assert "RunSpec.continues" in raised.value.message
        assert [run.id for run in orchestrator.runs()] == [running.run_id, prepared.id]
        running.cancel()
        assert (await running).status == "cancelled"
    assert len(sim.requests) == 1


def test_the_synchronous_conversation_keeps_a_hidden_turns_reasoning_nowhere(
    tmp_path: Path,
    sim: Simulator,
    user_env: dict[str, str],
) -> None:
    # DeepSeek's reasoner returns reasoning (the canary) without being asked.
    sim.script_turns(
        TRANSCRIPT,
        Transcript(reasoning=TRANSCRIPT.reasoning, answer=SHORTER, chunk_chars=4096),
        Transcript(answer="Picked up."),
    )
    with Conversation(config=CONFIG, environ=user_env) as chat:
        first = chat.send("Design a cache", provider="deepseek", model="deepseek-reasoner")
        second = chat.send("Now make it shorter")
        assert (chat.continues, chat.last) == (second.id, second)
    assert second.continues == first.id
    assert [(task.output, task.reasoning_status) for task in second.tasks] == [
        (SHORTER, "not_requested")
    ]
    with pytest.raises(RuntimeError, match="closed"):
        chat.send("After the end.")
    # Picking the conversation up later, from its last run, in another process's way.
    with Conversation(second.id, config=CONFIG, environ=user_env) as later:
        third = later.send("One more thing")
    assert (third.continues, third.conversation_id) == (second.id, first.id)
    assert third.tasks[0].history is not None and third.tasks[0].history["turns"] == 2

    first_sent, second_sent, third_sent = messages_of(sim, "deepseek")
    assert second_sent[:-1] == [*first_sent, {"role": "assistant", "content": ANSWER}]
    assert third_sent[:-1] == [*second_sent, {"role": "assistant", "content": SHORTER}]
    # Hidden: the canary came from the model but went nowhere.
    assert all(CANARY not in request.raw_body.decode() for request in sim.requests)
    assert CANARY not in json.dumps([run.snapshot() for run in (first, second, third)])
    assert CANARY.encode() not in all_bytes_under(tmp_path / "home")


def test_thoughtline_run_continues_and_refuses_with_codes(
    sim: Simulator,
    user_env: dict[str, str],
) -> None:
    first = thoughtline.run("Design a cache", roles=["reviewer"], config=CONFIG, environ=user_env)
    second = thoughtline.run("Shorter", continues=first.id, config=CONFIG, environ=user_env)
    assert (second.continues, second.conversation_id) == (first.id, first.id)
    assert [task.name for task in second.tasks] == ["reviewer"]
    assert "Design a cache" in json.dumps(messages_of(sim, "anthropic")[-1])
    with pytest.raises(ThoughtlineError) as raised:
        thoughtline.run("x", continues="run_nope", config=CONFIG, environ=user_env)
    assert raised.value.code == "RUN_NOT_FOUND"
    assert len(sim.requests) == 2


async def test_a_conversation_made_outside_a_loop_is_refused_inside_one(
    user_env: dict[str, str],
) -> None:
    # Made inside a loop, it runs on a loop of its own (tests/api/test_sync_api.py);
    # made in a thread without one, its loop is that thread's: sending from a thread
    # where another loop runs cannot work, and says what to do.
    def conversation_in_a_thread() -> Conversation:
        return Conversation(config=CONFIG, environ=user_env)

    chat = await asyncio.to_thread(conversation_in_a_thread)
    try:
        with pytest.raises(RuntimeError, match=r"made outside an event loop .* make it where"):
            chat.send("x")  # on this thread a loop runs
    finally:
        await asyncio.to_thread(chat.close)


@pytest.mark.slow
def test_the_example_script_holds_a_two_turn_conversation(
    tmp_path: Path,
    sim: Simulator,
    user_env: dict[str, str],
) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        env=user_env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "## architect: done (continues None)"
    assert lines[1] == lines[3] == f"answer: {DEFAULT_TRANSCRIPT.answer}"
    assert lines[2].startswith("## architect: done (continues run_")
    assert lines[4] == "earlier turns sent: 1"
    assert len(lines) == 5
    one, two = messages_of(sim, "anthropic")
    assert two[: len(one)] == one
    assert "Now make it shorter." in json.dumps(two[-1])


CTRL_C_SCRIPT = """
import thoughtline

chat = thoughtline.Conversation()
first = chat.send("First?")
print("first", first.id, flush=True)
try:
    chat.send("Slow one.")
except KeyboardInterrupt:
    print("interrupted; next continues", chat.continues, flush=True)
third = chat.send("After the interruption.")
print("third", third.continues, third.status, flush=True)
chat.close()
"""
SLOW_ANSWER = Transcript(answer="slow and steady " * 40, chunk_chars=8)


@pytest.mark.slow
def test_ctrl_c_during_a_send_cancels_that_run_and_the_conversation_stays_put(
    tmp_path: Path, sim: Simulator, user_env: dict[str, str]
) -> None:
    sim.script_turns(Transcript(answer="One."), SLOW_ANSWER, Transcript(answer="Three."))
    sim.pace_s = 0.05
    script = tmp_path / "chat.py"
    script.write_text(CTRL_C_SCRIPT, encoding="utf-8")
    database = tmp_path / "home" / "thoughtline.db"
    process = start_process(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=user_env,
        cwd=tmp_path,
    )
    try:
        assert process.stdout is not None
        first_line = process.stdout.readline().split()
        assert first_line[0] == "first", first_line
        first_id = first_line[1]
        _wait_until(
            database,
            "select 1 from run_events e join runs r on r.id = e.run_id "
            "where r.continues is not null and e.type = 'answer.delta'",
        )
        process.send_signal(signal.SIGINT)
        rest, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert rest.splitlines() == [
        f"interrupted; next continues {first_id}",
        f"third {first_id} completed",
    ]
    runs = _query(database, "select id, status, continues from runs order by created_at")
    assert [(row["status"], row["continues"]) for row in runs] == [
        ("completed", None),
        ("cancelled", first_id),
        ("completed", first_id),
    ]
    # The cancelled turn is not part of the third one's history.
    third_sent = json.dumps(messages_of(sim, "anthropic")[-1])
    assert "First?" in third_sent and "One." in third_sent
    assert "Slow one." not in third_sent and "slow and steady" not in third_sent
