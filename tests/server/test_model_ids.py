"""``POST /v1/runs`` with a model id that could move the request (and the operator's key)
off the wire's model path: a 400 ``MODEL_ID_INVALID`` with the sentence every surface
gives, nothing stored, nothing sent; a real id with ``/`` and ``:`` runs."""

from __future__ import annotations

from tests.server.support import LiveDaemon, wait_for_status
from tests.server.test_api import error_of
from tests.support import HOSTILE_MODEL_IDS
from thoughtline.model.requests import model_id_problem
from thoughtline.testing import Simulator


def test_a_model_id_that_is_not_one_is_a_400_and_nothing_is_stored_or_sent(
    daemon: LiveDaemon, sim: Simulator
) -> None:
    client = daemon.client()
    earlier = client.post("/v1/runs", json={"request": "x", "provider": "gemini"})
    assert earlier.status_code == 202, earlier.text
    earlier_id = earlier.json()["id"]
    assert wait_for_status(client, earlier_id, {"completed"})["status"] == "completed"
    sent = list(sim.requests)
    for model in (*HOSTILE_MODEL_IDS, "", " "):
        for body in (
            {"request": "x", "provider": "gemini", "model": model},
            {"request": "x", "roles": ["engineer"], "model": model},
            {"request": "x", "continues": earlier_id, "model": model},
        ):
            error = error_of(client.post("/v1/runs", json=body), 400)
            assert error == {"code": "MODEL_ID_INVALID", "message": model_id_problem(model)}
    assert [run["id"] for run in client.get("/v1/runs").json()["runs"]] == [earlier_id]
    assert sim.requests == sent
    assert sim.unrouted == []


def test_a_model_id_with_slashes_and_colons_runs(daemon: LiveDaemon, sim: Simulator) -> None:
    client = daemon.client()
    body = {"request": "x", "provider": "openrouter", "model": "deepseek/deepseek-r1:free"}
    created = client.post("/v1/runs", json=body)
    assert created.status_code == 202, created.text
    snapshot = wait_for_status(client, created.json()["id"], {"completed"})
    assert snapshot["tasks"][0]["model"] == "deepseek/deepseek-r1:free"
    (request,) = sim.requests
    assert request.body is not None and request.body["model"] == "deepseek/deepseek-r1:free"
