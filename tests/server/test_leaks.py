"""Disclosure through the daemon: the reasoning canary reaches the SSE stream and the
snapshot exactly when the mode displays reasoning; the canary API key never appears in
any response."""

from __future__ import annotations

import re

import pytest

from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import CANARY, TRANSCRIPT
from tests.server.support import LiveDaemon, wait_for_status
from tests.support import all_bytes_under
from thoughtline.testing import Simulator

MODES = ("hidden", "surface", "telemetry_only", "surface_and_telemetry")
DISPLAYS = {"surface", "surface_and_telemetry"}
RECORDS = {"telemetry_only", "surface_and_telemetry"}


@pytest.mark.parametrize("provider", ["deepseek", "anthropic"])
@pytest.mark.parametrize("mode", MODES)
def test_reasoning_canary_only_where_the_mode_displays_it(
    daemon: LiveDaemon, sim: Simulator, mode: str, provider: str
) -> None:
    sim.script(TRANSCRIPT)
    client = daemon.client()
    created = client.post(
        "/v1/runs",
        json={"request": "Explain.", "provider": provider, "chain_of_thought": mode},
    )
    run_id = created.json()["id"]
    bodies: list[bytes] = [created.content]
    with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
        fresh = b"".join(response.iter_bytes())
    with client.stream(
        "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "0"}
    ) as response:
        replay = b"".join(response.iter_bytes())
    snapshot = wait_for_status(client, run_id, {"completed"})
    responses = [
        client.get(f"/v1/runs/{run_id}"),
        client.get("/v1/runs"),
        client.get(f"/v1/runs/{run_id}/trace"),
        client.get(f"/v1/runs/{run_id}/trace?layer=answer"),
        client.get(f"/v1/runs/{run_id}/trace?layer=reasoning"),
        client.get(f"/v1/runs/{run_id}/trace?layer=provider_raw"),
    ]
    bodies += [fresh, replay, *(r.content for r in responses)]
    shows = mode in DISPLAYS
    assert (CANARY.encode() in fresh) is shows
    assert (CANARY.encode() in replay) is shows
    assert (b"event: reasoning.delta" in replay) is shows
    assert (CANARY.encode() in responses[0].content) is shows
    assert (CANARY.encode() in responses[1].content) is shows
    assert (snapshot["tasks"][0]["reasoning"] is not None) is shows
    assert snapshot["tasks"][0]["reasoning_notice"]
    assert CANARY.encode() not in responses[3].content  # the answer layer
    assert (CANARY.encode() in responses[2].content) is (mode in RECORDS)
    # A hidden task carries nothing derived from the reasoning it dropped: not even when
    # it came (DeepSeek and Anthropic send reasoning first in this transcript).
    first_reasoning = snapshot["tasks"][0]["timings"]["first_reasoning_ms"]
    assert (first_reasoning is None) is (mode == "hidden")
    timed = [body for body in bodies if re.search(rb'"first_reasoning_ms":\s*[0-9]', body)]
    assert (timed == []) is (mode == "hidden")
    for body in bodies:
        assert CANARY_KEY.encode() not in body
    assert CANARY_KEY.encode() not in all_bytes_under(daemon.home)
