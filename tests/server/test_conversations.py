"""Conversations through the real daemon and the provider simulator: ``continues`` on
``POST /v1/runs`` (the follow-up's request carries the earlier turn; refusals store
nothing), ``GET /v1/runs?conversation=``, the OpenAPI document, and a hidden
conversation whose reasoning canaries reach no response, no stream, no stored byte and
no follow-up request."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from tests.server.support import LiveDaemon, read_all, start_run, wait_for_status
from tests.support import all_bytes_under
from thoughtline.testing import SimReasoning, Simulator, Transcript

ENDED = {"completed", "completed_with_failures", "completed_prepare_only", "failed", "cancelled"}
FIRST_ANSWER = "Use a token bucket (answer one, 4f1c)."


def error_of(response: httpx2.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    message: str = error["message"]
    assert message.endswith(".") and "\n" not in message, message
    return message


def sent_bodies(sim: Simulator, profile: str = "deepseek") -> list[str]:
    return [json.dumps(request.body) for request in sim.requests_for(profile)]


def run_ids(client: httpx2.Client, **params: Any) -> list[str]:
    response = client.get("/v1/runs", params=params)
    assert response.status_code == 200, response.text
    return [run["id"] for run in response.json()["runs"]]


def test_a_follow_up_is_sent_the_first_turn_and_joins_its_conversation(
    daemon: LiveDaemon, sim: Simulator
) -> None:
    sim.script_turns(
        Transcript(answer=FIRST_ANSWER),
        Transcript(answer="Refill at 10/s (answer two)."),
        profile="deepseek",
    )
    client = daemon.client()
    first = start_run(
        client, request="How to limit rates?", provider="deepseek", chain_of_thought="surface"
    )
    wait_for_status(client, first, {"completed"})
    # No provider, role or mode given: the follow-up runs the first run's tasks again.
    second = start_run(client, request="At what rate? (turn two)", continues=first)
    snapshot = wait_for_status(client, second, {"completed"})

    bodies = sent_bodies(sim)
    assert len(bodies) == 2
    assert "turn two" not in bodies[0]
    for text in ("How to limit rates?", FIRST_ANSWER, "At what rate? (turn two)"):
        assert text in bodies[1], text
    assert snapshot["continues"] == first
    assert snapshot["conversation_id"] == first
    assert snapshot["chain_of_thought"] == "surface"
    (task,) = snapshot["tasks"]
    assert (task["name"], task["provider"]) == ("assistant", "deepseek")
    assert task["output"] == "Refill at 10/s (answer two)."
    assert task["history"]["turns"] == 1
    assert task["history"]["dropped_turns"] == 0
    first_snapshot = client.get(f"/v1/runs/{first}").json()
    assert (first_snapshot["conversation_id"], first_snapshot["continues"]) == (first, None)

    # The conversation by its id or by any of its runs' ids, oldest first; the plain
    # list (newest first) carries the same two fields.
    other = start_run(client, request="Unrelated.", worker_backend="inline")
    wait_for_status(client, other, {"completed_prepare_only"})
    assert run_ids(client, conversation=first) == [first, second]
    assert run_ids(client, conversation=second) == [first, second]
    assert run_ids(client, conversation=second, limit=1) == [second]
    assert run_ids(client, conversation=other) == [other]
    listed = {run["id"]: run for run in client.get("/v1/runs").json()["runs"]}
    assert [listed[second]["conversation_id"], listed[second]["continues"]] == [first, first]
    assert [listed[other]["conversation_id"], listed[other]["continues"]] == [other, None]
    error_of(
        client.get("/v1/runs", params={"conversation": "run_nowhere"}),
        404,
        "CONVERSATION_NOT_FOUND",
    )


def test_the_bodys_fields_win_over_the_continued_runs(daemon: LiveDaemon, sim: Simulator) -> None:
    sim.script(Transcript(answer=FIRST_ANSWER))
    client = daemon.client()
    first = start_run(
        client,
        request="First.",
        provider="deepseek",
        chain_of_thought="surface",
        roles=["architect"],
    )
    wait_for_status(client, first, {"completed"})
    second = start_run(
        client,
        request="Review it.",
        continues=first,
        roles=["reviewer"],
        provider="deepseek",  # a role without a task in the first run: the default otherwise
        chain_of_thought="hidden",
        max_output_tokens=77,
    )
    snapshot = wait_for_status(client, second, {"completed"})
    assert (snapshot["chain_of_thought"], snapshot["chain_of_thought_source"]) == (
        "hidden",
        "explicit",
    )
    (task,) = snapshot["tasks"]
    assert (task["role"], task["generation"]["max_output_tokens"]) == ("reviewer", 77)
    # A role that had no task in the first run is still sent the first turn (as text).
    assert FIRST_ANSWER in sent_bodies(sim)[-1]
    assert sim.requests_for("deepseek")[-1].body["max_tokens"] == 77


def test_continuing_no_run_an_active_run_or_one_without_history_is_refused_storing_nothing(
    daemon: LiveDaemon, sim: Simulator
) -> None:
    client = daemon.client()

    message = error_of(
        client.post("/v1/runs", json={"request": "More.", "continues": "run_nothing_here"}),
        404,
        "RUN_NOT_FOUND",
    )
    assert "run_nothing_here" in message
    assert run_ids(client) == []

    # Prepared only: it ended, but no task answered.
    prepared = start_run(client, request="Prepare.", worker_backend="inline")
    wait_for_status(client, prepared, {"completed_prepare_only"})
    message = error_of(
        client.post("/v1/runs", json={"request": "More.", "continues": prepared}),
        410,
        "CONVERSATION_HISTORY_GONE",
    )
    assert prepared in message
    assert run_ids(client) == [prepared]

    # Still executing: its status is stored as planned or running before the 202.
    sim.script(Transcript(answer="x" * 2000, chunk_chars=2))
    sim.pace_s = 0.01
    active = start_run(client, request="Take a while.", provider="deepseek")
    message = error_of(
        client.post("/v1/runs", json={"request": "More.", "continues": active}),
        409,
        "CONVERSATION_RUN_ACTIVE",
    )
    assert active in message
    assert run_ids(client) == [active, prepared]
    assert client.post(f"/v1/runs/{active}/cancel").status_code == 202
    wait_for_status(client, active, ENDED)
    assert run_ids(client) == [active, prepared]


@pytest.mark.parametrize(
    ("continues", "problem"),
    [("", "at least 1 character"), ("  ", "must not be empty"), (42, "string")],
)
def test_a_malformed_continues_is_a_422_naming_the_field(
    daemon: LiveDaemon, continues: object, problem: str
) -> None:
    client = daemon.client()
    response = client.post("/v1/runs", json={"request": "More.", "continues": continues})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "REQUEST_INVALID"
    assert "continues" in error["message"] and problem in error["message"]
    assert run_ids(client) == []


def test_the_openapi_document_shows_continues_and_the_conversation_filter(
    daemon: LiveDaemon,
) -> None:
    document = daemon.client().get("/openapi.json").json()
    field = document["components"]["schemas"]["RunCreate"]["properties"]["continues"]
    assert "full id" in field["description"]
    create = document["paths"]["/v1/runs"]["post"]["responses"]
    assert "RUN_NOT_FOUND" in create["404"]["description"]
    assert "CONVERSATION_RUN_ACTIVE" in create["409"]["description"]
    assert "CONVERSATION_HISTORY_GONE" in create["410"]["description"]
    listing = document["paths"]["/v1/runs"]["get"]
    parameters = {parameter["name"]: parameter for parameter in listing["parameters"]}
    assert "oldest first" in parameters["conversation"]["description"]
    snapshot = document["components"]["schemas"]["RunSnapshot"]
    assert {"conversation_id", "continues"} <= set(snapshot["required"])


def hidden_turn(canary: str, answer: str) -> Transcript:
    # DeepSeek streams reasoning even when none is asked for; sent whole, so a leak of
    # it would show in any body.
    return Transcript(
        reasoning=(SimReasoning(kind="raw", text=f"Thinking {canary} over."),),
        answer=answer,
        reasoning_tokens=30,
        chunk_chars=4096,
    )


def test_a_hidden_conversations_reasoning_is_nowhere_and_not_sent_back(
    daemon: LiveDaemon, sim: Simulator
) -> None:
    canaries = ("CANARY-CONV-ONE-81d2", "CANARY-CONV-TWO-3b7e")
    sim.script_turns(
        hidden_turn(canaries[0], "Answer one."),
        hidden_turn(canaries[1], "Answer two."),
        profile="deepseek",
    )
    client = daemon.client()
    created = client.post(
        "/v1/runs",
        json={"request": "Question one.", "provider": "deepseek", "chain_of_thought": "hidden"},
    )
    first = created.json()["id"]
    bodies = [created.content]
    events = read_all(client, first)
    # Continued without a mode: the explicit hidden goes on.
    followed = client.post("/v1/runs", json={"request": "Question two.", "continues": first})
    assert followed.status_code == 202, followed.text
    second = followed.json()["id"]
    bodies.append(followed.content)
    events += read_all(client, second)
    # Every event of both runs from the first (a fresh stream of a run that already
    # ended gets its snapshot and end only).
    replay = [
        *read_all(client, first, headers={"Last-Event-ID": "0"}),
        *read_all(client, second, headers={"Last-Event-ID": "0"}),
    ]
    snapshot = wait_for_status(client, second, {"completed"})

    assert snapshot["chain_of_thought"] == "hidden"
    assert snapshot["tasks"][0]["output"] == "Answer two."
    assert snapshot["tasks"][0]["history"]["reasoning_turns"] == 0
    assert not any(event.type == "reasoning.delta" for event in [*events, *replay])
    assert {"answer.delta", "run.completed"} <= {event.type for event in replay}
    sent = sent_bodies(sim)
    assert "Question one." in sent[1] and "Answer one." in sent[1]
    assert canaries[0] not in sent[1]
    responses = [
        client.get(f"/v1/runs/{first}"),
        client.get(f"/v1/runs/{second}"),
        client.get("/v1/runs"),
        client.get("/v1/runs", params={"conversation": second}),
        client.get(f"/v1/runs/{first}/trace"),
        client.get(f"/v1/runs/{second}/trace"),
    ]
    bodies += [response.content for response in responses]
    bodies += [json.dumps(event.data).encode() for event in [*events, *replay]]
    stored = all_bytes_under(daemon.home)
    for canary in canaries:
        for body in bodies:
            assert canary.encode() not in body
        assert canary.encode() not in stored


def test_a_turn_executing_here_is_listed_live_in_its_conversation(
    daemon: LiveDaemon, sim: Simulator
) -> None:
    sim.script_turns(
        Transcript(answer=FIRST_ANSWER),
        Transcript(answer="y" * 3000, chunk_chars=3),
        profile="deepseek",
    )
    client = daemon.client()
    first = start_run(client, request="First.", provider="deepseek")
    wait_for_status(client, first, {"completed"})
    sim.pace_s = 0.01
    second = start_run(client, request="Go on.", continues=first)
    # The stream's first answer delta: from then on the live snapshot has some output.
    read_all(client, second, stop=lambda events: events[-1].type == "answer.delta")
    runs = client.get("/v1/runs", params={"conversation": first}).json()["runs"]
    assert [run["id"] for run in runs] == [first, second]
    assert runs[0]["tasks"][0]["output"] == FIRST_ANSWER
    assert runs[1]["status"] == "running"
    assert 0 < len(runs[1]["tasks"][0]["output"]) < 3000
    assert client.post(f"/v1/runs/{second}/cancel").status_code == 202
    wait_for_status(client, second, ENDED)
