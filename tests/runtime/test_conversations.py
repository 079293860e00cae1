"""Conversations through the real runtime, store, simulator and a real MCP server: a
three-turn conversation on every wire API in every mode, turn 2 calling a tool, with the
simulator enforcing each provider's carrier rules on every request; where each turn's
reasoning goes (and where a hidden one never goes); and the refusals."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx2
import pytest

from tests.runtime.test_disclosure_e2e import MODES, RECORDS, all_bytes_under
from tests.runtime.test_tool_loop import requests_of, tooled_runtime
from thoughtline.errors import ThoughtlineError
from thoughtline.records import Run
from thoughtline.records.event_log import to_wire
from thoughtline.records.run_events import RunEvent
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import (
    SimReasoning,
    SimRequest,
    SimToolCall,
    Simulator,
    SimulatorServer,
    Transcript,
)

pytestmark = pytest.mark.slow  # turn 2 starts a tool server process

# task name -> (endpoint, model, what turn 3's request carries back of turn 1 and 2 when
# the mode requested reasoning there: the carrier that wire's rule for earlier turns sends)
WIRES = {
    "anthropic": ("anthropic", "claude-opus-5-5", "sig-"),  # preserved thinking
    "anthropic-4-6": ("anthropic", "claude-sonnet-4-6", None),  # earlier blocks dropped
    "openai-responses": ("openai", "gpt-5.5", "sig-"),
    "openai-chat": ("openai-chat", "gpt-4.1", None),
    "openrouter": ("openrouter", "anthropic/claude-sonnet-4.6", "sig-"),
    "gemini": ("gemini", "gemini-3-pro", "sig-"),
    "deepseek": ("deepseek", "deepseek-v4-pro", "CANARY-T2"),  # the tool turn's text
    "ollama": ("ollama", "qwen3:8b", None),  # earlier turns' thinking is not sent
    "vllm": ("vllm", "Qwen/Qwen3-8B", None),  # nor here: their templates keep answers only
    "llamacpp": ("llamacpp", "qwen3-8b-q4_k_m.gguf", None),
}


def canary(turn: int) -> str:
    return f"CANARY-T{turn}-5e1a"


def answered(turn: int, text: str, tag: str = "") -> Transcript:
    return Transcript(
        reasoning=(
            SimReasoning(
                kind="summary", text=f"Think {canary(turn)}.", signature=f"sig-{tag}{turn}a"
            ),
        ),
        answer=text,
        reasoning_tokens=12,
    )


def calling(turn: int, tag: str = "") -> Transcript:
    return Transcript(
        reasoning=(
            SimReasoning(
                kind="summary", text=f"Call {canary(turn)}.", signature=f"sig-{tag}{turn}b"
            ),
        ),
        tool_calls=(
            SimToolCall(
                call_id=f"call_{tag}", name="probe__repeat", arguments='{"text":"ab","times":2}'
            ),
        ),
        reasoning_tokens=20,
    )


def spec(request: str, *, continues: str | None = None) -> RunSpec:
    return RunSpec(
        request=request,
        tasks=tuple(
            TaskSpec(name=name, role="engineer", provider=endpoint, model=model, tools=("probe",))
            for name, (endpoint, model, _) in WIRES.items()
        ),
        continues=continues,
    )


def profile_of(endpoint: str) -> str:
    return "openai" if endpoint == "openai-chat" else endpoint


async def three_turns(
    runtime: Runtime, sim: Simulator, modes: tuple[str, str, str], events: list[RunEvent]
) -> list[Run]:
    for name, (endpoint, model, _) in WIRES.items():
        sim.script_turns(
            answered(1, "One.", name),
            calling(2, name),
            answered(2, "Two: abab.", name),
            answered(3, "Three.", name),
            profile=profile_of(endpoint),
            model=model,
        )
    runs: list[Run] = []
    for number, (request, mode) in enumerate(
        zip(("First?", "Use the tool.", "Last?"), modes, strict=True), start=1
    ):
        previous = runs[-1].id if runs else None
        run = await runtime.run(
            spec(request, continues=previous), explicit_mode=mode, observer=events.append
        )
        assert run.status == "completed", (number, [(t.name, t.error) for t in run.tasks])
        runs.append(run)
    return runs


@pytest.mark.parametrize("mode", MODES)
async def test_three_turns_on_every_wire_carry_history_and_carriers_by_each_providers_rule(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str], mode: str
) -> None:
    home = tmp_path / "home"
    runtime, store = tooled_runtime(home, sim_server, environ)
    events: list[RunEvent] = []
    try:
        runs = await three_turns(runtime, sim, (mode, mode, mode), events)
    finally:
        await runtime.aclose()
    first, second, third = runs
    assert {run.conversation_id for run in runs} == {first.id}
    assert (first.continues, second.continues, third.continues) == (None, first.id, second.id)
    assert third.snapshot()["conversation_id"] == first.id

    for task in third.tasks:
        endpoint, model, carrier = WIRES[task.name]
        assert task.output == "Three."
        assert task.history is not None
        assert (task.history["turns"], task.history["dropped_turns"]) == (2, 0)
        requests = requests_of(sim, endpoint, model)
        if endpoint == "openai-chat":
            requests = [r for r in requests if r.path.endswith("/chat/completions")]
        assert len(requests) == 4  # turn 1, turn 2's two steps, turn 3
        sent = json.dumps(requests[-1].body)
        # The answer layer of both earlier turns: prompts, answers, the tool exchange.
        for text in ("First?", "One.", "Use the tool.", "abab", "Two: abab.", "Last?"):
            assert text in sent, (task.name, text)
        if mode == "hidden":
            assert task.history["reasoning_turns"] == 0
            for turn in (1, 2, 3):
                assert canary(turn) not in sent, task.name
        elif carrier is not None:
            assert carrier in sent, (task.name, sent)
            assert task.history["reasoning_turns"] == 2, task.name
        else:
            assert task.history["reasoning_turns"] == 0, task.name
            assert canary(1) not in sent, task.name

    stored = store.get_run(third.id)
    assert stored is not None
    assert stored.snapshot() == third.snapshot()
    if mode not in RECORDS:
        # Earlier turns' reasoning went back to the provider only: the request bodies the
        # provider_raw layer keeps are scrubbed of it, as a tool loop's are.
        raw = json.dumps(
            [event.metadata for run in runs for event in store.trace(run.id, "provider_raw")]
        )
        assert "Last?" in raw  # the layer is there
        for turn in (1, 2, 3):
            assert canary(turn) not in raw, turn
        assert "sig-" not in raw
    if mode == "hidden":
        store.close()
        everything = all_bytes_under(home).decode("utf-8", "replace")
        snapshots = json.dumps([run.snapshot() for run in runs])
        told = json.dumps([to_wire(event).data for event in events])
        for turn in (1, 2, 3):
            assert canary(turn) not in everything
            assert canary(turn) not in snapshots
            assert canary(turn) not in told
    else:
        store.close()


async def test_a_hidden_first_turn_then_surface_says_its_reasoning_is_not_available(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    events: list[RunEvent] = []
    try:
        runs = await three_turns(runtime, sim, ("hidden", "surface", "surface"), events)
    finally:
        await runtime.aclose()
        store.close()
    third = runs[2]
    for task in third.tasks:
        endpoint, model, carrier = WIRES[task.name]
        sent = json.dumps(requests_of(sim, endpoint, model)[-1].body)
        assert canary(1) not in sent, task.name
        assert task.history is not None
        if carrier is not None:
            # Turn 2's carriers go back; turn 1's never existed.
            assert task.history["reasoning_turns"] == 1, task.name
            assert task.history["note"] is not None
            assert "Turn 1 ran with chain_of_thought hidden" in task.history["note"]
            assert task.reasoning_notice is not None
            assert "Turn 1 ran with chain_of_thought hidden" in task.reasoning_notice


async def test_continuing_what_cannot_be_continued_is_refused_in_one_sentence(
    tmp_path: Path, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    try:
        with pytest.raises(ThoughtlineError) as missing:
            runtime.plan(spec("x", continues="run_nope"))
        assert missing.value.code == "RUN_NOT_FOUND"
        planned = runtime.prepare(spec("x"))
        with pytest.raises(ThoughtlineError) as active:
            runtime.plan(spec("x", continues=planned.id))
        assert active.value.code == "CONVERSATION_RUN_ACTIVE"
        assert planned.id in active.value.message
    finally:
        await runtime.aclose()
        store.close()


def _replay(
    sim_server: SimulatorServer, request: SimRequest, body: dict[str, Any]
) -> httpx2.Response:
    headers = {
        name: value
        for name, value in request.headers.items()
        if name.lower() not in ("host", "content-length", "accept-encoding")
    }
    query = f"?{urlencode(dict(request.query))}" if request.query else ""
    return httpx2.post(sim_server.url + request.path + query, json=body, headers=headers)


def _tool_message(messages: list[Any]) -> dict[str, Any]:
    """Turn 2's assistant message that called the tool (Chat Completions)."""
    return next(m for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))


async def test_the_simulator_refuses_turn_3_when_an_earlier_turns_carrier_is_broken(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    """Turn 3's requests pass as thoughtline built them; the same requests with one rule
    broken get each provider's own error, so the conversations above prove the rules."""
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    try:
        await three_turns(runtime, sim, ("surface", "surface", "surface"), [])
    finally:
        await runtime.aclose()
        store.close()

    sent = {
        name: requests_of(sim, endpoint, model)[-1] for name, (endpoint, model, _) in WIRES.items()
    }

    def last(name: str) -> SimRequest:
        return sent[name]  # turn 3 as thoughtline sent it (replays are recorded too)

    def broken(name: str, change: Callable[[dict[str, Any]], None]) -> httpx2.Response:
        request = last(name)
        body = copy.deepcopy(dict(request.body or {}))
        change(body)
        return _replay(sim_server, request, body)

    def new_persona(body: dict[str, Any]) -> None:
        body["system"] = "You are a poet."

    refused = broken("anthropic", new_persona)
    assert refused.status_code == 400
    assert "The `system` prompt differs from the one this block was created with." in refused.text

    def no_encrypted_content(body: dict[str, Any]) -> None:
        for item in body["input"]:
            if item.get("type") == "reasoning":
                item.pop("encrypted_content", None)

    refused = broken("openai-responses", no_encrypted_content)
    assert refused.status_code == 404 and "not found" in refused.text

    def no_reasoning_content(body: dict[str, Any]) -> None:
        _tool_message(body["messages"]).pop("reasoning_content")

    refused = broken("deepseek", no_reasoning_content)
    assert refused.status_code == 400
    assert "must be passed back to the API" in refused.text

    def corrupted_signature(body: dict[str, Any]) -> None:
        for content in body["contents"]:
            for part in content.get("parts", []):
                if "functionCall" in part and "thoughtSignature" in part:
                    part["thoughtSignature"] = "forged"

    refused = broken("gemini", corrupted_signature)
    assert refused.status_code == 400 and "Corrupted thought signature" in refused.text

    # Unbroken, each is accepted again (the simulator remembers every carrier it issued).
    for name in ("anthropic", "openai-responses", "deepseek", "gemini"):
        request = last(name)
        assert _replay(sim_server, request, dict(request.body or {})).status_code == 200, name


def one(request: str, *, continues: str | None = None, **task: Any) -> RunSpec:
    options: dict[str, Any] = {"name": "t", "role": "engineer"}
    options.update(task)
    return RunSpec(request=request, tasks=(TaskSpec(**options),), continues=continues)


async def test_a_changed_persona_or_model_drops_the_blocks_it_binds_before_the_api_would_refuse(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(answered(1, "Answer.", "p"), profile="anthropic")
    sim.script(answered(1, "Answer.", "o"), profile="openai")
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    claude = {"provider": "anthropic", "model": "claude-opus-5-5"}
    try:
        first = await runtime.run(one("Plan it.", **claude), explicit_mode="surface")
        same = await runtime.run(
            one("Again.", continues=first.id, **claude), explicit_mode="surface"
        )
        poet = await runtime.run(
            one("As a poet.", continues=same.id, role="architect", **claude),
            explicit_mode="surface",
        )
        other = await runtime.run(
            one("Elsewhere.", continues=first.id, provider="openai", model="gpt-5.5"),
            explicit_mode="surface",
        )
        back = await runtime.run(
            one("Back.", continues=other.id, **claude), explicit_mode="surface"
        )
    finally:
        await runtime.aclose()
        store.close()
    for run in (same, poet, other, back):
        assert run.status == "completed", [t.error for t in run.tasks]
    assert same.tasks[0].history == {
        "turns": 1, "dropped_turns": 0, "reasoning_turns": 1, "note": None
    }  # fmt: skip
    anthropic = sim.requests_for("anthropic")
    assert "sig-p1a" in json.dumps(anthropic[1].body)
    # Another persona: Claude binds each block to the system prompt; none goes back.
    assert "sig-p1a" not in json.dumps(anthropic[2].body)
    note = poet.tasks[0].history and poet.tasks[0].history["note"]
    assert note is not None and "the persona or the tools changed" in note
    assert poet.tasks[0].reasoning_notice is not None and note in poet.tasks[0].reasoning_notice
    # Another model: the text of turn 1 only, never Claude's carrier.
    assert "sig-p1a" not in json.dumps(sim.requests_for("openai")[-1].body)
    assert "Answer." in json.dumps(sim.requests_for("openai")[-1].body)
    # Back on Claude after an OpenAI turn: turn 1's blocks go back (their prefix did not
    # change), turn 2's carrier is OpenAI's and is not sent.
    last = json.dumps(anthropic[-1].body)
    assert "sig-p1a" in last and "sig-o1a" not in last
    assert back.tasks[0].history is not None
    assert back.tasks[0].history["reasoning_turns"] == 1
    assert "Turn 2 was answered by another provider or model" in (
        back.tasks[0].history["note"] or ""
    )


async def test_deepseek_gets_an_empty_reasoning_content_for_a_hidden_tool_turn(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    model = "deepseek-reasoner"
    sim.script_turns(
        calling(1, "d"), answered(1, "Done.", "d"), answered(2, "Then.", "d"),
        profile="deepseek", model=model,
    )  # fmt: skip
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    task = {"provider": "deepseek", "model": model, "tools": ("probe",)}
    try:
        first = await runtime.run(one("Use it.", **task), explicit_mode="hidden")
        second = await runtime.run(
            one("And now?", continues=first.id, **task), explicit_mode="surface"
        )
    finally:
        await runtime.aclose()
        store.close()
    assert second.status == "completed", second.tasks[0].error
    body = sim.requests_for("deepseek")[-1].body or {}
    tool_turn = _tool_message(list(body["messages"]))
    assert tool_turn["reasoning_content"] == ""  # required, and never reconstructed
    assert canary(1) not in json.dumps(body)
    note = second.tasks[0].reasoning_notice or ""
    assert "Turn 1 ran with chain_of_thought hidden" in note


async def test_retention_reaches_the_threads_and_says_so_on_the_next_turn(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    from thoughtline.runtime.policy import retention

    sim.script(answered(1, "Answer.", "r"), profile="anthropic")
    home = tmp_path / "home"
    claude = {"provider": "anthropic", "model": "claude-opus-5-5"}
    runtime, store = tooled_runtime(home, sim_server, environ)
    try:
        first = await runtime.run(one("Plan it.", **claude), explicit_mode="surface")
    finally:
        await runtime.aclose()
        store.close()
    assert b"sig-r1a" in all_bytes_under(home)  # the carrier, kept for the next turn
    # Purged with no other connection open (one that is gets the residue sentence,
    # tested with the store): cleared from the store's files, not only from the row.
    with SQLiteStore(home / "thoughtline.db") as purging:
        retention.purge(purging, {"reasoning": 0, "provider_raw": 0})
        assert purging.purge_residue() is None
    assert b"sig-r1a" not in all_bytes_under(home)
    runtime, store = tooled_runtime(home, sim_server, environ)
    try:
        second = await runtime.run(
            one("Again.", continues=first.id, **claude), explicit_mode="surface"
        )
        retention.purge(store, {"answer": 0})
        with pytest.raises(ThoughtlineError) as gone:
            runtime.plan(one("Once more.", continues=second.id, **claude))
    finally:
        await runtime.aclose()
        store.close()
    assert "sig-r1a" not in json.dumps(sim.requests_for("anthropic")[-1].body)
    assert "Answer." in json.dumps(sim.requests_for("anthropic")[-1].body)
    assert "removed by the reasoning retention" in (second.tasks[0].reasoning_notice or "")
    assert gone.value.code == "CONVERSATION_HISTORY_GONE"


async def test_several_roles_continue_role_by_role_and_a_new_role_gets_the_text(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(answered(1, "From the engineer.", "e"), profile="anthropic", model="claude-opus-5-5")
    sim.script(answered(1, "From the reviewer.", "v"), profile="openai", model="gpt-5.5")
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    first_spec = RunSpec(
        request="Design it.",
        tasks=(
            TaskSpec(
                name="engineer", role="engineer", provider="anthropic", model="claude-opus-5-5"
            ),
            TaskSpec(name="reviewer", role="reviewer", provider="openai", model="gpt-5.5"),
        ),
    )
    try:
        first = await runtime.run(first_spec, explicit_mode="surface")
        again = runtime.continuation_spec(first.id, "Go on.")
        assert [(t.name, t.role, t.provider, t.model) for t in again.tasks] == [
            ("engineer", "engineer", "anthropic", "claude-opus-5-5"),
            ("reviewer", "reviewer", "openai", "gpt-5.5"),
        ]
        assert again.chain_of_thought == "surface"  # chosen explicitly, so it goes on
        mixed = runtime.continuation_spec(first.id, "And you?", roles=["engineer", "architect"])
        reads: list[str] = []
        read = store.conversation_tasks

        def counted(conversation_id: str) -> Any:
            reads.append(conversation_id)
            return read(conversation_id)

        store.conversation_tasks = counted  # type: ignore[method-assign]
        second = await runtime.run(mixed)
        assert reads == []  # planning took the conversation the spec read
    finally:
        await runtime.aclose()
        store.close()
    assert second.status == "completed", [t.error for t in second.tasks]
    engineer, architect = second.tasks
    assert (engineer.provider, engineer.model) == ("anthropic", "claude-opus-5-5")
    assert engineer.history is not None and engineer.history["reasoning_turns"] == 1
    assert architect.history is not None and architect.history["reasoning_turns"] == 0
    bodies = [json.dumps(r.body) for r in sim.requests_for("anthropic")]
    own, new = bodies[-2:] if "sig-e1a" in bodies[-2] else bodies[-1:-3:-1]
    # The engineer's own thread, its carrier included; not the reviewer's answer.
    assert "sig-e1a" in own and "From the reviewer." not in own
    # The architect is new: the earlier request and both answers, as text, no carrier.
    assert "Design it." in new and "From the engineer." in new and "From the reviewer." in new
    assert "sig-e1a" not in new and "sig-v1a" not in new


async def test_a_follow_up_keeps_its_tools_and_a_new_endpoint_gets_its_own_default_model(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(answered(1, "Done.", "k"))
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    try:
        first = await runtime.run(
            one("Use it.", provider="anthropic", model="claude-opus-5-5", tools=("probe",)),
            explicit_mode="hidden",
        )
        same = runtime.continuation_spec(first.id, "Again.")
        moved = runtime.continuation_spec(first.id, "Again.", provider="gemini")
        renamed = runtime.continuation_spec(first.id, "Again.", model="claude-sonnet-4-6")
    finally:
        await runtime.aclose()
        store.close()
    assert same.tasks[0].tools == ("probe",)
    assert same.chain_of_thought == "hidden"
    assert (moved.tasks[0].provider, moved.tasks[0].model) == ("gemini", None)
    assert (renamed.tasks[0].provider, renamed.tasks[0].model) == ("anthropic", "claude-sonnet-4-6")
    assert same.continues == first.id


async def test_the_oldest_turns_are_cut_to_the_models_window_and_an_oversized_turn_fails_first(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    from dataclasses import replace as replaced

    from thoughtline.providers.capabilities import CapabilityTable, builtin_capabilities

    families = builtin_capabilities().families
    small = CapabilityTable(
        [
            replaced(f, context_window=8_192 + 600)
            if f.family == "claude-preserved-thinking"
            else f
            for f in families
        ]
    )
    sim.script(answered(1, "An answer of some length. " * 20, "w"), profile="anthropic")
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    runtime.capabilities = small
    claude = {"provider": "anthropic", "model": "claude-opus-5-5"}
    runs: list[Run] = []
    try:
        for number in range(5):
            runs.append(
                await runtime.run(
                    one(f"Question {number}?", continues=runs[-1].id if runs else None, **claude),
                    explicit_mode="surface",
                )
            )
        huge = await runtime.run(
            one("x" * 40_000, continues=runs[-1].id, **claude), explicit_mode="surface"
        )
    finally:
        await runtime.aclose()
        store.close()
    last = runs[-1].tasks[0]
    assert last.history is not None
    assert last.history["dropped_turns"] >= 1
    assert last.history["turns"] + last.history["dropped_turns"] == 4
    body = json.dumps(sim.requests_for("anthropic")[-1].body)
    assert "Question 0?" not in body and "Question 3?" in body and "Question 4?" in body
    assert (last.history["note"] or "").startswith("The oldest")
    assert len(sim.requests_for("anthropic")) == 5  # the oversized turn called nothing
    failed = huge.tasks[0]
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.code == "CONTEXT_WINDOW_EXCEEDED"


async def test_a_run_whose_process_died_goes_on_with_what_recovery_kept_as_text(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    from thoughtline.records import Task, new_id

    sim.script(answered(2, "Finished.", "i"), profile="anthropic")
    runtime, store = tooled_runtime(tmp_path / "home", sim_server, environ)
    # As recovery leaves a run whose owner was killed: interrupted, a partial answer kept
    # from its event log, no thread (a task writes it when it ends).
    killed = Run(
        id=new_id("run"),
        request="Write the plan.",
        chain_of_thought="hidden",
        chain_of_thought_source="default",
        worker_backend="provider",
        status="interrupted",
    )
    killed.conversation_id = killed.id
    killed.tasks.append(
        Task(
            id=new_id("task"),
            run_id=killed.id,
            position=0,
            name="t",
            role="engineer",
            provider="anthropic",
            model="claude-opus-5-5",
            chain_of_thought="hidden",
            chain_of_thought_source="default",
            status="interrupted",
            output="Step one: ",
        )
    )
    store.create_run(killed)
    try:
        follow_up = await runtime.run(runtime.continuation_spec(killed.id, "Go on."))
    finally:
        await runtime.aclose()
        store.close()
    assert follow_up.status == "completed", follow_up.tasks[0].error
    body = json.dumps(sim.requests_for("anthropic")[-1].body)
    assert "Write the plan." in body and "Step one: " in body and "Go on." in body
    assert follow_up.tasks[0].history is not None
    assert follow_up.tasks[0].history["turns"] == 1
