"""Every mode x endpoint through the real runtime, store and simulator over HTTP.

A canary string sits in the simulated reasoning (text and signature); a canary API key
is loaded for every provider. The canary must appear exactly where the mode allows —
snapshot, trace layers, raw bytes of every file under THOUGHTLINE_HOME — and the key
nowhere at all.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.conftest import CANARY_KEY
from tests.support import all_bytes_under
from thoughtline.config import Config
from thoughtline.providers._body_redaction import PIECE_MIN_BYTES
from thoughtline.providers.client import RetryPolicy
from thoughtline.providers.endpoints import EndpointSettings
from thoughtline.providers.redaction import REDACTED
from thoughtline.records.event_log import to_wire
from thoughtline.records.run_events import TaskAnswerDelta, TaskCompleted, TaskReasoningDelta
from thoughtline.runtime.engine.runner import RunEvent, Runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import (
    Fault,
    SimReasoning,
    SimRequest,
    Simulator,
    SimulatorServer,
    Transcript,
)

CANARY = "CANARY-REASONING-5e1f"
ANSWER = "The final answer, with no reasoning in it."
TRANSCRIPT = Transcript(
    reasoning=(
        SimReasoning(
            kind="summary",
            text=f"Weighing the request; {CANARY} marks this thought.",
            signature=f"sig-{CANARY}",
        ),
    ),
    answer=ANSWER,
    reasoning_tokens=64,
    chunk_chars=4096,  # keep the canary whole inside raw stream bytes so a leak is visible
)

# task name -> (endpoint, model)
ENDPOINTS = {
    "anthropic-adaptive": ("anthropic", "claude-sonnet-4-6"),
    "anthropic-budget": ("anthropic", "claude-sonnet-4-5"),
    "openai-responses": ("openai", "gpt-5.5"),
    "openai-chat": ("openai-chat", "gpt-5.5"),
    "openrouter": ("openrouter", "anthropic/claude-sonnet-4.6"),
    "gemini": ("gemini", "gemini-3-pro"),
    "deepseek": ("deepseek", "deepseek-reasoner"),
    "ollama": ("ollama", "qwen3:8b"),
}
NEVER_RETURNS_TEXT = {"openai-chat"}
MODES = ("hidden", "surface", "telemetry_only", "surface_and_telemetry")
DISPLAYS = {"surface", "surface_and_telemetry"}
RECORDS = {"telemetry_only", "surface_and_telemetry"}

# What the server must have received: the body key that requests reasoning, per endpoint.
REQUEST_KEYS = {
    "anthropic": "thinking",
    "openai": "reasoning",
    "openai-chat": None,  # Chat Completions has nothing to request text with
    "openrouter": "reasoning",
    "gemini": "generationConfig",
    "deepseek": "thinking",
    "ollama": "think",
}


# The exact reasoning request each endpoint receives when the mode requests reasoning.
REQUESTED_SHAPE: dict[str, dict[str, object]] = {
    "anthropic-adaptive": {"thinking": {"type": "adaptive", "display": "summarized"}},
    "anthropic-budget": {
        "thinking": {"type": "enabled", "budget_tokens": 4096},
        "max_tokens": 8192 + 4096,
    },
    "openai-responses": {
        "reasoning": {"summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    },
    "openrouter": {"reasoning": {"enabled": True}},
    "gemini": {"generationConfig": {"thinkingConfig": {"includeThoughts": True}}},
    "deepseek": {"thinking": {"type": "enabled"}},
    "ollama": {"think": True},
}


def every_endpoint(request: str) -> RunSpec:
    """A run of ``request`` with one task per endpoint of :data:`ENDPOINTS`."""
    return RunSpec(
        request=request,
        tasks=tuple(
            TaskSpec(name=name, role="engineer", provider=endpoint, model=model)
            for name, (endpoint, model) in ENDPOINTS.items()
        ),
    )


def make_runtime(
    home: Path, sim_server: SimulatorServer, environ: dict[str, str], **config: object
) -> tuple[Runtime, SQLiteStore]:
    store = SQLiteStore(home / "thoughtline.db")
    settings = {
        "openai-chat": EndpointSettings(
            wire_api="openai-chat",
            base_url=sim_server.base_url_for("openai"),
            api_key_env="OPENAI_API_KEY",
            dialect="openai",
        )
    }
    options: dict[str, object] = {"path": None, "providers": settings, "trace_provider_raw": True}
    options.update(config)
    runtime = Runtime(
        config=Config(**options),  # type: ignore[arg-type]
        store=store,
        environ=environ,
        retry=RetryPolicy(max_retries=2, initial_delay_s=0.01, max_delay_s=0.05),
    )
    return runtime, store


def task_of(request: SimRequest) -> str:
    """Which demo task a request the simulator received belongs to."""
    if request.profile == "openai":
        return "openai-chat" if request.path.endswith("/chat/completions") else "openai-responses"
    return next(
        name
        for name, (endpoint, model) in ENDPOINTS.items()
        if endpoint == request.profile and model == request.model
    )


@pytest.mark.parametrize("mode", MODES)
async def test_every_endpoint_in_each_mode(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str], mode: str
) -> None:
    sim.script(TRANSCRIPT)
    home = tmp_path / "home"
    runtime, store = make_runtime(home, sim_server, environ)
    spec = every_endpoint("Explain the decision.")
    run = await runtime.run(spec, explicit_mode=mode)
    assert run.status == "completed", [(t.name, t.error) for t in run.tasks]
    assert run.chain_of_thought == mode
    assert run.chain_of_thought_source == "explicit"

    # What each provider was asked for.
    for request in sim.requests:
        name = task_of(request)
        key = REQUEST_KEYS[ENDPOINTS[name][0]]
        if key is None:
            continue
        body = request.body or {}
        if mode == "hidden":
            if key == "reasoning" and ENDPOINTS[name][0] == "openrouter":
                assert body["reasoning"] == {"exclude": True}
            elif key == "think":  # Ollama: thinking switched off
                assert body["think"] is False
            elif key == "generationConfig":
                assert "thinkingConfig" not in body.get("generationConfig", {})
            else:
                assert key not in body, (name, body)
        else:
            assert key in body, (name, body)
            assert {k: body[k] for k in REQUESTED_SHAPE[name]} == REQUESTED_SHAPE[name], name

    snapshot = run.snapshot()
    for task in snapshot["tasks"]:
        name = task["name"]
        returns_text = name not in NEVER_RETURNS_TEXT
        assert task["status"] == "done"
        assert task["output"] == ANSWER
        assert task["chain_of_thought"] == mode
        if mode == "hidden":
            expected_status = "not_requested"
        elif not returns_text:
            expected_status = "unsupported"
        else:
            expected_status = "shown" if mode in DISPLAYS else "recorded"
        assert task["reasoning_status"] == expected_status, (name, task["reasoning_notice"])
        assert task["reasoning_notice"]
        if mode in DISPLAYS and returns_text:
            assert CANARY in task["reasoning"]
            assert [part["kind"] for part in task["reasoning_parts"]] in (["summary"], ["raw"])
        elif mode in DISPLAYS:  # displayable, but this API returned no text
            assert task["reasoning"] is None
            assert task["reasoning_parts"] == []
        else:
            assert task["reasoning"] is None
            assert task["reasoning_parts"] is None
    assert (CANARY in json.dumps(snapshot)) is (mode in DISPLAYS)

    # Trace layers.
    reasoning_layer = store.trace(run.id, "reasoning")
    raw_layer = store.trace(run.id, "provider_raw")
    answer_layer = store.trace(run.id, "answer")
    assert CANARY not in json.dumps([event.to_dict() for event in answer_layer])
    if mode in RECORDS:
        recorded = {event.task_id for event in reasoning_layer}
        assert recorded == {task.id for task in run.tasks if task.name not in NEVER_RETURNS_TEXT}
        texts = [event for event in reasoning_layer if CANARY in json.dumps(event.metadata)]
        assert len(texts) == len(ENDPOINTS) - len(NEVER_RETURNS_TEXT)
    else:
        assert reasoning_layer == []
    assert len(raw_layer) == len(ENDPOINTS)
    raw_json = json.dumps([event.to_dict() for event in raw_layer])
    assert (CANARY in raw_json) is (mode in RECORDS)
    assert CANARY_KEY not in raw_json
    store.close()

    # Every byte of every file under THOUGHTLINE_HOME (database, WAL, anything else).
    everything = all_bytes_under(home)
    assert (CANARY.encode() in everything) is (mode in DISPLAYS | RECORDS)
    assert CANARY_KEY.encode() not in everything


async def test_hidden_mode_drops_reasoning_a_provider_sends_anyway(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    # DeepSeek reasoner and Ollama thinking models return reasoning without being asked.
    sim.script(TRANSCRIPT)
    home = tmp_path / "home"
    runtime, store = make_runtime(home, sim_server, environ)
    spec = RunSpec(
        request="Go.",
        tasks=(
            TaskSpec(name="d", role="engineer", provider="deepseek", model="deepseek-reasoner"),
            TaskSpec(name="o", role="engineer", provider="ollama", model="qwen3"),
        ),
    )
    events: list[RunEvent] = []
    run = await runtime.run(spec, observer=events.append)
    assert [
        request.body.get("thinking") for request in sim.requests if request.profile == "deepseek"
    ] == [None]  # type: ignore[union-attr]
    assert all(CANARY not in request.raw_body.decode() for request in sim.requests)
    assert all(task.reasoning_status == "not_requested" for task in run.tasks)
    assert not any(isinstance(event, TaskReasoningDelta) for event in events)
    assert CANARY not in json.dumps([to_wire(event).data for event in events])
    # Nor when it came: no reasoning-derived field anywhere.
    for task in run.snapshot()["tasks"]:
        assert task["timings"]["first_reasoning_ms"] is None, task["name"]
    finished = [event.task for event in events if isinstance(event, TaskCompleted)]
    assert [task["timings"]["first_reasoning_ms"] for task in finished] == [None, None]
    for event in store.trace(run.id):
        timings = event.metadata.get("timings")
        if isinstance(timings, dict):
            assert timings.get("first_reasoning_ms") is None, event.type
    assert len(store.trace(run.id, "provider_raw")) == 2
    store.close()
    assert CANARY.encode() not in all_bytes_under(home)


async def test_reasoning_timing_is_kept_where_the_mode_asks_for_reasoning(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    # The other side of the hidden check above: the same field is there when requested.
    sim.script(TRANSCRIPT)
    runtime, store = make_runtime(tmp_path / "home", sim_server, environ)
    spec = RunSpec(
        request="Go.",
        tasks=(
            TaskSpec(name="d", role="engineer", provider="deepseek", model="deepseek-reasoner"),
        ),
    )
    run = await runtime.run(spec, explicit_mode="telemetry_only")
    store.close()
    assert run.tasks[0].timings.first_reasoning_ms is not None


@pytest.mark.parametrize("mode", MODES)
async def test_nothing_secret_reaches_any_log(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    mode: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Every logger at DEBUG (httpx2, uvicorn, asyncio, thoughtline): neither the key nor
    # the reasoning canary may appear in any record, whatever the mode.
    caplog.set_level(logging.DEBUG)
    sim.script(TRANSCRIPT)
    sim.inject(Fault.rate_limited(retry_after_s=0.01))
    runtime, store = make_runtime(tmp_path / "home", sim_server, environ)
    spec = every_endpoint("Explain.")
    run = await runtime.run(spec, explicit_mode=mode)
    store.close()
    assert run.status == "completed"
    assert caplog.records  # the loggers did speak
    text = "\n".join(f"{record.getMessage()} {record.args!r}" for record in caplog.records)
    assert CANARY_KEY not in text
    assert CANARY not in text


# The model echoes the loaded key in its answer and its reasoning; with small deltas the
# key is cut across several of them.
ECHO = Transcript(
    reasoning=(
        SimReasoning(
            kind="summary",
            text=f"The prompt carried {CANARY_KEY}; I must not repeat it. {CANARY}.",
            signature="sig-echo",
        ),
    ),
    answer=f"Your key is {CANARY_KEY} and again {CANARY_KEY}, sorry.",
    reasoning_tokens=64,
    chunk_chars=7,
)


def deltas_of(
    events: list[RunEvent], task_id: str, kind: type[TaskAnswerDelta | TaskReasoningDelta]
) -> str:
    return "".join(
        event.text for event in events if isinstance(event, kind) and event.task_id == task_id
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_key_the_model_echoes_is_redacted_before_anything_keeps_it(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str], mode: str
) -> None:
    sim.script(ECHO)
    home = tmp_path / "home"
    runtime, store = make_runtime(home, sim_server, environ)
    spec = every_endpoint("Explain the decision.")
    events: list[RunEvent] = []
    run = await runtime.run(spec, explicit_mode=mode, observer=events.append)
    assert run.status == "completed", [(t.name, t.error) for t in run.tasks]
    for task in run.tasks:
        assert task.output == f"Your key is {REDACTED} and again {REDACTED}, sorry.", task.name
        # What the surfaces streamed is exactly what the task keeps.
        assert deltas_of(events, task.id, TaskAnswerDelta) == task.output
        streamed_reasoning = deltas_of(events, task.id, TaskReasoningDelta)
        if mode in DISPLAYS and task.name not in NEVER_RETURNS_TEXT:
            assert task.reasoning_parts is not None
            assert streamed_reasoning == "".join(part.text for part in task.reasoning_parts)
            assert f"carried {REDACTED}; I must" in streamed_reasoning
            assert CANARY in streamed_reasoning
        else:
            assert streamed_reasoning == ""
    recorded = json.dumps([event.to_dict() for event in store.trace(run.id, "reasoning")])
    assert (f"carried {REDACTED}; I must" in recorded) is (mode in RECORDS)
    assert CANARY_KEY not in json.dumps([to_wire(event).data for event in events])
    assert CANARY_KEY not in json.dumps(run.snapshot())
    store.close()
    assert CANARY_KEY.encode() not in all_bytes_under(home)


@pytest.mark.parametrize(
    "fault",
    [
        Fault.stream_error("server_error", message=f"upstream rejected key {CANARY_KEY}"),
        Fault.http_error(400, f"Invalid header x-api-key: {CANARY_KEY}"),
    ],
    ids=["in-stream", "http-400"],
)
async def test_a_key_a_provider_error_reflects_is_redacted(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    fault: Fault,
) -> None:
    sim.script(ECHO)
    sim.inject(fault)
    home = tmp_path / "home"
    runtime, store = make_runtime(home, sim_server, environ)
    spec = RunSpec(
        request="Go.",
        tasks=(
            TaskSpec(name="a", role="engineer", provider="anthropic", model="claude-sonnet-4-6"),
        ),
    )
    events: list[RunEvent] = []
    run = await runtime.run(spec, explicit_mode="surface_and_telemetry", observer=events.append)
    task = run.tasks[0]
    assert task.status == "failed"
    assert task.error is not None and REDACTED in task.error.message, task.error
    assert CANARY_KEY not in json.dumps([to_wire(event).data for event in events])
    store.close()
    assert CANARY_KEY.encode() not in all_bytes_under(home)


async def test_a_key_typed_into_the_request_is_neither_stored_nor_sent(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    runtime, store = make_runtime(home, sim_server, environ)
    spec = RunSpec(
        request=f"Why does {CANARY_KEY} fail?",
        tasks=(
            TaskSpec(name="a", role="engineer", provider="anthropic", model="claude-sonnet-4-6"),
        ),
    )
    run = await runtime.run(spec, explicit_mode="surface")
    assert run.status == "completed"
    assert run.request == f"Why does {REDACTED} fail?"
    bodies = [request.raw_body.decode() for request in sim.requests]
    assert bodies and all(CANARY_KEY not in body for body in bodies)
    assert any(f"Why does {REDACTED} fail?" in body for body in bodies)
    store.close()
    assert CANARY_KEY.encode() not in all_bytes_under(home)


# The key loaded for the split test: its pieces are of letters no id, timestamp or text in
# the store holds (CANARY_KEY ends in hex, and so do the store's random ids).
SPLIT_KEY = "tl-QXZVKJWPMYHGNBQXZVKJWPMYHGN"


def _echo_split_every(size: int) -> Transcript:
    """The model writes the loaded key alone, ``size`` characters a delta: the key is cut
    at every multiple of ``size`` (once, for half its length or more)."""
    return Transcript(answer=SPLIT_KEY, reasoning_tokens=0, chunk_chars=size)


@pytest.mark.parametrize("mode", ["hidden", "telemetry_only"])
@pytest.mark.parametrize("size", range(1, len(SPLIT_KEY)))
async def test_a_key_cut_across_frames_leaves_no_piece_in_the_raw_layer(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    size: int,
    mode: str,
) -> None:
    # Each frame's string holds one piece of the key: the whole value is never in the
    # bytes. The raw layer (scrubbed in hidden mode, byte for byte in telemetry_only) must
    # keep no piece of it long enough to mean anything.
    sim.script(_echo_split_every(size))
    home = tmp_path / "home"
    loaded = {
        name: (SPLIT_KEY if value == CANARY_KEY else value) for name, value in environ.items()
    }
    runtime, store = make_runtime(home, sim_server, loaded)
    spec = every_endpoint("Say it back.")
    run = await runtime.run(spec, explicit_mode=mode)
    assert run.status == "completed", [(t.name, t.error) for t in run.tasks]
    assert {task.output for task in run.tasks} == {REDACTED}
    raw_layer = store.trace(run.id, "provider_raw")
    assert len(raw_layer) == len(ENDPOINTS)
    raw = json.dumps([event.to_dict() for event in raw_layer])
    store.close()
    everything = all_bytes_under(home)
    pieces = [SPLIT_KEY[i : i + size] for i in range(0, len(SPLIT_KEY), size)]
    for piece in pieces:
        if len(piece) >= PIECE_MIN_BYTES:
            assert piece not in raw, (piece, raw)
            assert piece.encode() not in everything, piece
    assert raw.count(REDACTED) >= len(ENDPOINTS)
