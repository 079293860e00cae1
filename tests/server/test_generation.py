"""Generation settings (max_output_tokens, temperature) through the daemon's JSON API to
the provider's request body, and refused out of range with the field named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon, start_run, wait_for_status
from thoughtline.config import load_config
from thoughtline.testing import Simulator, Transcript


def test_settings_reach_the_wire_and_the_trace(daemon: LiveDaemon, sim: Simulator) -> None:
    sim.script(Transcript(answer="Short."))
    client = daemon.client()
    run_id = start_run(client, provider="deepseek", max_output_tokens=77, temperature=0.25)
    wait_for_status(client, run_id, {"completed"})
    (sent,) = sim.requests
    assert sent.body is not None
    assert sent.body["max_tokens"] == 77
    assert sent.body["temperature"] == 0.25
    trace = client.get(f"/v1/runs/{run_id}/trace", params={"layer": "answer"}).json()
    (requested,) = [event for event in trace if event["type"] == "worker.requested"]
    assert requested["metadata"]["max_output_tokens"] == 77
    assert requested["metadata"]["temperature"] == 0.25


def test_config_defaults_apply_and_the_body_wins(
    start_daemon: StartDaemon, sim: Simulator, tmp_path: Path
) -> None:
    path = tmp_path / "thoughtline.toml"
    path.write_text("[defaults]\nmax_output_tokens = 500\ntemperature = 1\n", encoding="utf-8")
    daemon = start_daemon(config=load_config(path))
    sim.script(Transcript(answer="Short."))
    client = daemon.client()
    first = start_run(client, provider="deepseek")
    wait_for_status(client, first, {"completed"})
    second = start_run(client, provider="deepseek", temperature=0)
    wait_for_status(client, second, {"completed"})
    bodies = [request.body or {} for request in sim.requests]
    assert [(body["max_tokens"], body["temperature"]) for body in bodies] == [(500, 1.0), (500, 0)]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_output_tokens", 0),
        ("max_output_tokens", 1.5),
        ("temperature", 2.5),
        ("temperature", -1),
    ],
)
def test_out_of_range_settings_are_refused(
    daemon: LiveDaemon, sim: Simulator, field: str, value: float
) -> None:
    response = daemon.client().post("/v1/runs", json={"request": "Hi", field: value})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "REQUEST_INVALID"
    assert field in str(error["details"])
    assert sim.requests == []
