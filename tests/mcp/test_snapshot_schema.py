"""One ``thoughtline.run/v1`` definition: the daemon's OpenAPI document and the MCP tools'
output schema are the same document, and real snapshots validate against it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import TypeAdapter

from tests.runtime.test_disclosure_e2e import TRANSCRIPT, make_runtime
from thoughtline.integrations.mcp.schema import RUN_SNAPSHOT_SCHEMA, STATUS_SCHEMA
from thoughtline.records import SNAPSHOT_SCHEMA, Run
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.schema.run import RunSnapshot, inline_references
from thoughtline.server.app import create_app
from thoughtline.server.daemon import Daemon
from thoughtline.testing import Fault, Simulator, SimulatorServer


def openapi_snapshot_schema(
    tmp_path: Path, sim_server: SimulatorServer, environ: dict[str, str]
) -> dict[str, Any]:
    """The snapshot as the daemon's OpenAPI document describes it (references inlined)."""
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    try:
        document = create_app(Daemon(runtime, store)).openapi()
    finally:
        store.close()
    response = document["paths"]["/v1/runs/{run_id}"]["get"]["responses"]["200"]
    snapshot = response["content"]["application/json"]["schema"]
    assert snapshot == {"$ref": "#/components/schemas/RunSnapshot"}
    return inline_references({**snapshot, "components": document["components"]})


def test_openapi_and_mcp_describe_the_snapshot_with_one_document(
    tmp_path: Path, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    from_openapi = openapi_snapshot_schema(tmp_path, sim_server, environ)
    assert "components" not in from_openapi and "$ref" not in json.dumps(from_openapi)
    assert from_openapi == RUN_SNAPSHOT_SCHEMA
    assert STATUS_SCHEMA["properties"]["run"] == RUN_SNAPSHOT_SCHEMA
    jsonschema.Draft202012Validator.check_schema(RUN_SNAPSHOT_SCHEMA)
    assert RUN_SNAPSHOT_SCHEMA["properties"]["schema"] == {
        "type": "string",
        "const": SNAPSHOT_SCHEMA,
    }
    # Enums everywhere the records have a closed set (the two used to disagree here).
    task = RUN_SNAPSHOT_SCHEMA["properties"]["tasks"]["items"]["properties"]
    assert task["effort"]["enum"][0] == "provider-default"
    assert task["reasoning_status"]["enum"][-1] is None
    assert task["reasoning_parts"]["type"] == ["array", "null"]
    parts = task["reasoning_parts"]["items"]["properties"]
    assert parts["kind"]["enum"] == ["summary", "raw", "redacted", "encrypted"]
    assert task["reasoning"]["type"] == ["string", "null"]


def spec(*names: str) -> RunSpec:
    return RunSpec(
        request="x",
        tasks=tuple(
            TaskSpec(name=name, role="engineer", provider="anthropic", model="claude-sonnet-4-6")
            for name in names
        ),
    )


async def real_runs(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> tuple[dict[str, Any], list[Run]]:
    """A planned snapshot (before execution) and finished runs of every kind."""
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    planned = runtime.prepare(spec("a"), explicit_mode="surface")
    planned_snapshot = json.loads(json.dumps(planned.snapshot()))
    sim.script(TRANSCRIPT)
    runs = [await runtime.execute(planned)]
    runs.append(await runtime.run(spec("a", "b"), explicit_mode="hidden"))
    sim.inject(Fault.http_error(400, "bad request (simulated)"))
    runs.append(await runtime.run(spec("a"), explicit_mode="surface_and_telemetry"))
    runs.append(await runtime.run(spec("a"), worker_backend="inline", explicit_mode="surface"))
    store.close()
    return planned_snapshot, runs


async def test_real_snapshots_validate_against_the_one_schema(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    planned, runs = await real_runs(tmp_path, sim, sim_server, environ)
    assert planned["status"] == "planned"
    statuses = [run.status for run in runs]
    assert statuses == ["completed", "completed", "failed", "completed_prepare_only"]
    surfaced = runs[0].snapshot()["tasks"][0]
    assert surfaced["reasoning_parts"] and surfaced["usage"]["reasoning_tokens"] is not None
    assert runs[2].snapshot()["tasks"][0]["error"]["code"] == "PROVIDER_BAD_REQUEST"

    validator = jsonschema.Draft202012Validator(RUN_SNAPSHOT_SCHEMA)
    for snapshot in [planned, *(json.loads(json.dumps(run.snapshot())) for run in runs)]:
        validator.validate(snapshot)
        assert TypeAdapter(RunSnapshot).validate_python(snapshot) == snapshot
    status = {"run": runs[0].snapshot(), "runs": [run.summary() for run in runs]}
    jsonschema.Draft202012Validator(STATUS_SCHEMA).validate(json.loads(json.dumps(status)))


async def test_a_follow_up_snapshot_validates_with_its_conversation_and_history(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    sim.script(TRANSCRIPT)
    first = await runtime.run(spec("a"), explicit_mode="surface")
    second = await runtime.run(replace(spec("a"), request="y", continues=first.id))
    store.close()
    snapshot = json.loads(json.dumps(second.snapshot()))
    assert (snapshot["conversation_id"], snapshot["continues"]) == (first.id, first.id)
    assert snapshot["tasks"][0]["history"]["turns"] == 1
    jsonschema.Draft202012Validator(RUN_SNAPSHOT_SCHEMA).validate(snapshot)
    assert TypeAdapter(RunSnapshot).validate_python(snapshot) == snapshot
    summaries = {"run": snapshot, "runs": [second.summary(), first.summary()]}
    jsonschema.Draft202012Validator(STATUS_SCHEMA).validate(json.loads(json.dumps(summaries)))
    # Described like every other object of the snapshot: plain, closed, no negative count.
    history = RUN_SNAPSHOT_SCHEMA["properties"]["tasks"]["items"]["properties"]["history"]
    assert "title" not in json.dumps(history)
    assert history["additionalProperties"] is False
    assert history["properties"]["note"]["type"] == ["string", "null"]
    assert history["properties"]["dropped_turns"]["minimum"] == 0
    for path, value in ((("continues",), 7), (("tasks", 0, "history", "turns"), -1)):
        broken = json.loads(json.dumps(snapshot))
        target = broken
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft202012Validator(RUN_SNAPSHOT_SCHEMA).validate(broken)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("status",), "finished"),
        (("tasks", 0, "effort"), "enormous"),
        (("tasks", 0, "reasoning_parts"), [{"kind": "thoughts", "text": "x"}]),
        (("tasks", 0, "usage", "input_tokens"), -1),
        (("tasks", 0, "colour"), "red"),
    ],
)
async def test_the_schema_rejects_what_no_run_produces(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    path: tuple[str | int, ...],
    value: object,
) -> None:
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    snapshot = runtime.prepare(spec("a")).snapshot()
    store.close()
    target: Any = snapshot
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(RUN_SNAPSHOT_SCHEMA).validate(snapshot)


def test_the_core_package_does_not_import_pydantic() -> None:
    code = (
        "import sys, thoughtline, thoughtline.records, thoughtline.runtime.engine.runner, "
        "thoughtline.cli; print('pydantic' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"
