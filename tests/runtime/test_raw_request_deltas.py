"""The provider_raw layer stores a tool loop's requests as what each added since the
last (the first whole): bytes stored per step stay flat over 100 steps, the whole body
is rebuilt on demand by the Python API, ``thoughtline trace --json`` and the daemon's
trace route, equal after parsing to the body sent on every wire, a loaded key and (in
hidden mode) the echoed reasoning stay out of what is stored, and retention removes the
rows (a delta whose earlier row expired reads as stored)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.cli.test_run_cli import thoughtline
from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import make_runtime
from tests.support import all_bytes_under
from thoughtline import Orchestrator
from thoughtline.config import Config
from thoughtline.records import TraceEvent
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.policy import retention
from thoughtline.runtime.policy.scrub_requests import scrub_request
from thoughtline.server.app import DaemonServer
from thoughtline.server.daemon import Daemon, ServerSettings
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, SimulatorServer, Transcript

CANARY = "CANARY-RAWDELTA-5be1"
SIGNATURE = f"sig-{CANARY}"
REASONING = (SimReasoning(kind="summary", text=f"Look it up; {CANARY}.", signature=SIGNATURE),)

# task name -> (endpoint, model)
WIRES = {
    "anthropic": ("anthropic", "claude-sonnet-4-6"),
    "openai-responses": ("openai", "gpt-5.5"),
    "openai-chat": ("openai-chat", "gpt-4.1"),
    "openrouter": ("openrouter", "anthropic/claude-sonnet-4.6"),
    "gemini": ("gemini", "gemini-3-pro"),
    "deepseek": ("deepseek", "deepseek-v4-pro"),
    "ollama": ("ollama", "qwen3:8b"),
}


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}: {CANARY_KEY}" if key == "secret" else f"value of {key}"


def _loop(steps: int, *, key: str = "k") -> list[Transcript]:
    """``steps`` model calls: each but the last calls the tool once, the last answers."""
    calling = [
        Transcript(
            reasoning=REASONING,
            answer=f"Step {step} of the lookups.",
            tool_calls=(
                SimToolCall(
                    call_id=f"c{step}",
                    name="python__lookup",
                    arguments=json.dumps({"key": key if step == 1 else f"k{step}"}),
                ),
            ),
            reasoning_tokens=5,
        )
        for step in range(steps - 1)
    ]
    return [*calling, Transcript(reasoning=REASONING, answer="Done.", reasoning_tokens=5)]


async def _run(
    home: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    *,
    wire: str = "anthropic",
    steps: int,
    mode: str = "surface",
    key: str = "k",
) -> tuple[str, Orchestrator]:
    endpoint, model = WIRES[wire]
    profile = "openai" if endpoint == "openai-chat" else endpoint
    sim.script_turns(*_loop(steps, key=key), profile=profile, model=model)
    runtime, _store = make_runtime(home, sim_server, environ)
    orchestrator = Orchestrator(runtime)
    run = await orchestrator.start(
        "Look up the keys.",
        provider=endpoint,
        model=model,
        tools=[lookup],
        max_steps=steps,
        chain_of_thought=mode,  # type: ignore[arg-type]
    )
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.steps == steps
    return run.id, orchestrator


def _exchanges(events: list[TraceEvent]) -> list[dict[str, Any]]:
    return [event.metadata for event in events if event.type == "provider.exchange"]


def _stored_request_bytes(metadata: dict[str, Any]) -> int:
    stored = metadata.get("request_delta", metadata.get("request_body"))
    return len(json.dumps(stored))


@pytest.mark.slow
async def test_a_hundred_steps_store_as_many_request_bytes_per_step_at_the_end_as_early(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    run_id, orchestrator = await _run(tmp_path / "home", sim, sim_server, environ, steps=100)
    try:
        stored = _exchanges(orchestrator.store.trace(run_id, "provider_raw"))
        rebuilt = _exchanges(orchestrator.trace(run_id, "provider_raw"))
    finally:
        await orchestrator.aclose()
    assert len(stored) == len(rebuilt) == 100
    sizes = [_stored_request_bytes(metadata) for metadata in stored]
    whole = [len(metadata["request_body"]) for metadata in rebuilt]
    # Each step stored whole grew by a turn (step 100: 30 times step 10); as deltas, the
    # bytes stored per step stay those of the turns it added.
    assert whole[99] > 8 * whole[9]
    assert max(sizes[10:]) < 1.5 * sizes[9], sizes
    assert sum(sizes) < 3 * whole[99]


@pytest.mark.parametrize("wire", list(WIRES))
async def test_the_rebuilt_request_is_the_body_sent_on_every_wire(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    wire: str,
) -> None:
    # A mode that records reasoning: nothing of the bodies is scrubbed.
    run_id, orchestrator = await _run(
        tmp_path / "home", sim, sim_server, environ, wire=wire, steps=4, mode="telemetry_only"
    )
    try:
        stored = _exchanges(orchestrator.store.trace(run_id, "provider_raw"))
        rebuilt = _exchanges(orchestrator.trace(run_id, "provider_raw"))
    finally:
        await orchestrator.aclose()
    sent = [request.body for request in sim.requests]
    assert len(sent) == len(rebuilt) == 4
    assert [json.loads(metadata["request_body"]) for metadata in rebuilt] == sent
    # Stored: the first whole, each later one as what it added.
    assert "request_body" in stored[0] and "request_delta" not in stored[0]
    assert all(
        "request_delta" in metadata and "request_body" not in metadata for metadata in stored[1:]
    )
    # The rebuilt event has the fields the stored one has, the body where the delta was.
    assert list(rebuilt[2]) == [
        "request_body" if key == "request_delta" else key for key in stored[2]
    ]


# The wires whose hidden calls still return reasoning that goes back (an encrypted item,
# a thought signature, DeepSeek's reasoning_content); hidden turns the others' off.
@pytest.mark.parametrize("wire", ["openai-responses", "gemini", "deepseek"])
async def test_hidden_keeps_the_echoed_reasoning_and_the_key_out_of_every_stored_byte(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    wire: str,
) -> None:
    home = tmp_path / "home"
    run_id, orchestrator = await _run(
        home, sim, sim_server, environ, wire=wire, steps=4, mode="hidden", key="secret"
    )
    try:
        rebuilt = _exchanges(orchestrator.trace(run_id, "provider_raw"))
    finally:
        await orchestrator.aclose()
    sent = [request.raw_body.decode() for request in sim.requests]
    # Each later request carried the earlier turns' reasoning back (the carrier holds
    # the canary); the tool's result held the key (redacted before it was sent).
    assert all(CANARY in body for body in sent[1:])
    stored = all_bytes_under(home)
    assert CANARY_KEY.encode() not in stored
    assert CANARY.encode() not in stored
    # Rebuilt: what the whole body stored as before would hold, the key redacted.
    for metadata, body in zip(rebuilt[1:], sent[1:], strict=True):
        expected = json.loads(scrub_request(body).replace(CANARY_KEY, "[REDACTED]"))
        assert json.loads(metadata["request_body"]) == expected
    assert CANARY not in json.dumps(rebuilt)


async def test_retention_removes_the_stored_requests_and_an_orphaned_delta_reads_as_stored(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    run_id, orchestrator = await _run(home, sim, sim_server, environ, steps=3)
    store = orchestrator.store
    try:
        stored = _exchanges(store.trace(run_id, "provider_raw"))
        # Retention removes a layer's older events first: with the first request gone,
        # the next (a delta after it) reads as stored, and the one after that, whole.
        with closing(sqlite3.connect(home / "thoughtline.db")) as conn, conn:
            conn.execute(
                "DELETE FROM trace_events WHERE seq = (SELECT MIN(seq) FROM trace_events "
                "WHERE run_id = ? AND type = 'provider.exchange')",
                (run_id,),
            )
        left = _exchanges(orchestrator.trace(run_id, "provider_raw"))
        assert left[0] == stored[1]
        assert "request_delta" in left[1] and "request_body" not in left[1]
        assert left[1] == stored[2]

        removed = retention.purge(store, {"provider_raw": 0})
        assert removed["provider_raw"] == 2
        assert store.trace(run_id, "provider_raw") == []
    finally:
        await orchestrator.aclose()


# -- the CLI and the daemon ----------------------------------------------------------------
@pytest.mark.slow
async def test_trace_json_and_the_daemon_route_give_the_whole_requests(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    run_id, orchestrator = await _run(
        home, sim, sim_server, environ, steps=3, mode="surface_and_telemetry"
    )
    await orchestrator.aclose()
    sent = [request.body for request in sim.requests]

    shown = thoughtline(home, environ, "trace", run_id, "--json", "--layer", "provider_raw")
    assert shown.returncode == 0, shown.stderr
    bodies = [json.loads(event["metadata"]["request_body"]) for event in json.loads(shown.stdout)]
    assert bodies == sent

    store = SQLiteStore(home / "thoughtline.db")
    runtime = Runtime(config=Config(path=None), store=store, environ=environ)
    daemon = Daemon(runtime=runtime, store=store, settings=ServerSettings(port=0))
    server = DaemonServer(daemon).start()
    try:
        with httpx2.Client(base_url=server.url, timeout=20.0) as client:
            response = client.get(f"/v1/runs/{run_id}/trace", params={"layer": "provider_raw"})
    finally:
        server.stop()
    assert response.status_code == 200, response.text
    routed = [json.loads(event["metadata"]["request_body"]) for event in response.json()]
    assert routed == sent
