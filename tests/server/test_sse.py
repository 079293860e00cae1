"""The SSE stream of a run, end to end over HTTP: ordering, deltas, resume, fan-out."""

from __future__ import annotations

import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing

import httpx2
import pytest

from tests.runtime.test_disclosure_e2e import TRANSCRIPT
from tests.server.conftest import StartDaemon
from tests.server.support import (
    TERMINAL,
    Event,
    LiveDaemon,
    read_all,
    start_run,
    wait_for_status,
)
from tests.store.builders import make_run
from thoughtline.records import RunEventRecord
from thoughtline.records.event_log import to_records
from thoughtline.records.run_events import RunCompleted, RunEvent, RunStarted, TaskAnswerDelta
from thoughtline.server.events import RetainedRuns
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import Fault, Simulator, Transcript

AT = "2026-12-01T00:00:00.000Z"
SLOW = Transcript(answer="0123456789" * 6, chunk_chars=3)


def test_snapshot_first_then_deltas_then_terminal(daemon: LiveDaemon, sim: Simulator) -> None:
    sim.script(SLOW)
    sim.pace_s = 0.01
    client = daemon.client()
    run_id = start_run(client, provider="deepseek")
    events = read_all(client, run_id)
    assert events[0].type == "snapshot"
    assert events[0].data["id"] == run_id
    assert events[-1].type == "run.completed"
    assert [e.type for e in events].count("run.completed") == 1
    seqs = [e.seq for e in events[1:]]
    assert seqs == list(range(events[0].seq + 1, events[0].seq + 1 + len(seqs)))
    text = "".join(e.data["text"] for e in events if e.type == "answer.delta")
    snapshot = events[0].data
    already = "".join(t["output"] or "" for t in snapshot["tasks"])
    assert already + text == SLOW.answer
    completed = [e for e in events if e.type == "task.completed"]
    assert completed[0].data["status"] == "done"
    assert completed[0].data["reasoning_notice"]
    assert events[-1].data["tasks"][0]["output"] == SLOW.answer


def _full(client: httpx2.Client, run_id: str) -> list[Event]:
    """Every event of the run from seq 1 (Last-Event-ID: 0)."""
    return read_all(client, run_id, headers={"Last-Event-ID": "0"})


@pytest.mark.slow  # a paced stream read twice
def test_resume_mid_run_loses_and_duplicates_nothing(daemon: LiveDaemon, sim: Simulator) -> None:
    sim.script(SLOW)
    sim.pace_s = 0.02
    client = daemon.client()
    run_id = start_run(client, provider="deepseek")
    with ThreadPoolExecutor(1) as pool:
        uninterrupted = pool.submit(read_all, daemon.client(), run_id)
        first = read_all(client, run_id, stop=lambda events: len(events) >= 4)
        assert first[0].type == "snapshot"
        assert first[-1].type not in TERMINAL, "the run ended before the reconnect"
        rest = read_all(client, run_id, headers={"Last-Event-ID": str(first[-1].seq)})
        whole = uninterrupted.result(timeout=30)
    assert all(event.type != "snapshot" for event in rest)
    union = first[1:] + rest
    assert [e.seq for e in union] == list(range(first[0].seq + 1, union[-1].seq + 1))
    # Both subscribers saw the same events from where both had started.
    start = max(first[0].seq, whole[0].seq)
    assert [e for e in union if e.seq > start] == [e for e in whole[1:] if e.seq > start]
    assert union[-1].type == "run.completed"
    # Everything is also in the store, numbered identically.
    assert [e for e in _full(client, run_id) if e.seq > first[0].seq] == union


def test_resume_after_the_end_replays_from_the_store(daemon: LiveDaemon, sim: Simulator) -> None:
    sim.script(SLOW)
    client = daemon.client()
    run_id = start_run(client, provider="deepseek")
    live = read_all(client, run_id, headers={"Last-Event-ID": "0"})
    assert live[0].type == "run.started" and live[0].seq == 1
    assert live[-1].type == "run.completed"
    wait_for_status(client, run_id, {"completed"})
    replay = _full(client, run_id)
    assert replay == live
    middle = live[len(live) // 2].seq
    assert read_all(client, run_id, headers={"Last-Event-ID": str(middle)}) == [
        e for e in live if e.seq > middle
    ]
    assert read_all(client, run_id, query=f"?last_event_id={middle}") == [
        e for e in live if e.seq > middle
    ]
    assert read_all(client, run_id, headers={"Last-Event-ID": str(live[-1].seq)}) == []
    # A fresh connection to a finished run: the snapshot before the end, then the end.
    fresh = read_all(client, run_id)
    assert [e.type for e in fresh] == ["snapshot", "run.completed"]
    assert fresh[0].seq == live[-1].seq - 1
    assert fresh[0].data["tasks"][0]["output"] == SLOW.answer
    assert fresh[1] == live[-1]


def test_two_subscribers_receive_identical_sequences(daemon: LiveDaemon, sim: Simulator) -> None:
    sim.script(SLOW)
    sim.pace_s = 0.01
    client = daemon.client()
    run_id = start_run(client, provider="deepseek", roles=["engineer", "reviewer"])
    with ThreadPoolExecutor(4) as pool:
        replays = [pool.submit(_full, daemon.client(), run_id) for _ in range(2)]
        fresh = [pool.submit(read_all, daemon.client(), run_id) for _ in range(2)]
        a, b = (future.result(timeout=30) for future in replays)
        c, d = (future.result(timeout=30) for future in fresh)
    assert a == b
    assert [e.seq for e in a] == list(range(1, len(a) + 1))
    for stream in (c, d):
        assert stream[0].type == "snapshot"
        assert stream[1:] == [e for e in a if e.seq > stream[0].seq]
    assert sum(e.type == "task.completed" for e in a) == 2


def test_keep_alive_comments_while_idle(start_daemon: StartDaemon, sim: Simulator) -> None:
    daemon = start_daemon(keepalive_s=0.02)
    sim.script(Transcript(answer="slow answer", chunk_chars=4))
    sim.pace_s = 0.08
    client = daemon.client()
    run_id = start_run(client, provider="deepseek")
    raw = b""
    with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
        for chunk in response.iter_bytes():
            raw += chunk
    assert b": keep-alive\n\n" in raw
    assert raw.rstrip().splitlines()[-3].startswith(b"id: ")
    assert b"event: run.completed" in raw


def test_unknown_run_and_bad_last_event_id(daemon: LiveDaemon) -> None:
    client = daemon.client()
    response = client.get("/v1/runs/run_nope/events")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "RUN_NOT_FOUND"
    run_id = start_run(client, worker_backend="inline")
    response = client.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "x"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "REQUEST_INVALID"


def test_inline_run_streams_prepared_tasks(daemon: LiveDaemon) -> None:
    client = daemon.client()
    run_id = start_run(client, worker_backend="inline", roles=["architect", "reviewer"])
    events = read_all(client, run_id, headers={"Last-Event-ID": "0"})
    assert events[-1].type == "run.completed"
    assert events[-1].data["status"] == "completed_prepare_only"
    assert {e.data["status"] for e in events if e.type == "task.completed"} == {"prepared"}


def test_uses_sim_transcript_with_reasoning(daemon: LiveDaemon, sim: Simulator) -> None:
    sim.script(TRANSCRIPT)
    client = daemon.client()
    run_id = start_run(client, provider="deepseek", chain_of_thought="surface")
    events = read_all(client, run_id)
    deltas = [e for e in events if e.type == "reasoning.delta"]
    assert all(set(e.data) == {"task_id", "text"} for e in deltas)
    assert events[-1].data["tasks"][0]["reasoning_status"] == "shown"


def _raw(client: httpx2.Client, run_id: str, headers: dict[str, str] | None = None) -> bytes:
    """The stream's bytes as the client receives them."""
    with client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers or {}) as response:
        assert response.status_code == 200
        return b"".join(response.iter_bytes())


def test_a_run_that_finished_lately_is_served_from_memory_as_the_store_serves_it(
    daemon: LiveDaemon, sim: Simulator
) -> None:
    """Late subscribers of a run that has left the hub get its retained frames: exactly
    the bytes the store replay gives, fresh or resumed."""
    sim.script(TRANSCRIPT)
    client = daemon.client()
    run_id = start_run(client, provider="deepseek", chain_of_thought="surface")
    live = _raw(client, run_id, {"Last-Event-ID": "0"})
    hub = daemon.daemon.hub
    for _ in range(400):  # the run leaves the hub once everything is in the store
        if hub.get(run_id) is None:
            break
        time.sleep(0.01)
    assert hub.get(run_id) is None
    assert hub.retained.get(run_id) is not None
    last = int(live.rstrip(b"\n").split(b"\n\n")[-1].split(b"\n")[0].removeprefix(b"id: "))
    resumes = ({}, {"Last-Event-ID": "0"}, {"Last-Event-ID": str(last // 2)})
    store = daemon.daemon.store
    reads: list[str] = []
    read_run = store.get_run
    store.get_run = lambda run_id: reads.append(run_id) or read_run(run_id)  # type: ignore[method-assign]
    from_memory = [_raw(client, run_id, headers) for headers in resumes]
    del store.get_run
    assert reads == []  # memory answered: no store read, no thread hop
    assert from_memory[1] == live
    assert b"event: reasoning.delta" in live
    hub.retained = RetainedRuns(max_bytes=0, max_age_s=0)  # nothing kept: the store serves
    from_store = [_raw(client, run_id, headers) for headers in resumes]
    assert from_memory == from_store
    assert from_store[0].count(b"\n\n") == 2  # the snapshot before the end, then the end
    assert _raw(client, run_id, {"Last-Event-ID": str(last)}) == b""


def test_a_page_on_a_configured_origin_follows_a_live_run_with_cors_headers(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    """The frames skip the middlewares' send wrappers; the response start does not, so
    CORS still names the page's origin, and the frames are the ones a replay gives."""
    daemon = start_daemon(cors_origins=("https://app.example",))
    sim.script(SLOW)
    sim.pace_s = 0.01
    client = daemon.client()
    run_id = start_run(client, provider="deepseek")
    headers = {"Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"}
    with client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] == "https://app.example"
        assert response.headers["content-type"].startswith("text/event-stream")
        live = b"".join(response.iter_bytes())
    assert live.startswith(b"id: ")
    frames = [frame for frame in live.split(b"\n\n") if frame]
    answer = "".join(
        json.loads(frame.split(b"data: ", 1)[1])["text"]
        for frame in frames
        if b"event: answer.delta" in frame
    )
    snapshot = json.loads(frames[0].split(b"data: ", 1)[1])
    assert (snapshot["tasks"][0]["output"] or "") + answer == "0123456789" * 6
    assert b"event: run.completed" in frames[-1]


def _dechunk(raw: bytes) -> bytes:
    """The body of an HTTP/1.1 chunked response read off a raw socket (head removed)."""
    body: list[bytes] = []
    at = raw.index(b"\r\n\r\n") + 4
    while True:
        line_end = raw.index(b"\r\n", at)
        size = int(raw[at:line_end], 16)
        if size == 0:
            return b"".join(body)
        body.append(raw[line_end + 2 : line_end + 2 + size])
        at = line_end + 2 + size + 2


@pytest.mark.slow  # a stalled subscriber waited out
def test_a_stalled_subscriber_holds_up_no_other_and_catches_up_consistently(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    """One client reads nothing until the run has ended, so the daemon's writes to it
    back up (the run's frames are twice what the kernel's buffers on both ends hold);
    another client of the same run still gets every event as it comes, to the end. The
    stalled one, read afterwards, gets a consistent stream: ids in order, a resync in
    place of what it could not take, and the end."""
    answer = "".join(f"{i:07d}" for i in range(1_200_000))  # 8.4 MB
    sim.script(Transcript(answer=answer, chunk_chars=3000))
    sim.pace_s = 0.001
    daemon = start_daemon(subscriber_queue=50)
    client = daemon.client()
    run_id = start_run(client, provider="deepseek")
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    stalled = socket.create_connection((host, int(port)), timeout=30)
    stalled.sendall(
        f"GET /v1/runs/{run_id}/events HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    )
    try:
        reader = read_all(daemon.client(), run_id)
        assert reader[-1].type == "run.completed"
        text = "".join(e.data["text"] for e in reader if e.type == "answer.delta")
        assert (reader[0].data["tasks"][0]["output"] or "") + text == answer
        pieces: list[bytes] = []
        end = b"\r\n0\r\n\r\n"
        tail = b""  # the last bytes read: the end may arrive split over two reads
        while not tail.endswith(end):
            data = stalled.recv(1 << 20)
            assert data, "the stalled subscriber's stream closed before its end"
            pieces.append(data)
            tail = (tail + data)[-len(end) :]
        raw = b"".join(pieces)
    finally:
        stalled.close()
    frames = [frame for frame in _dechunk(raw).split(b"\n\n") if frame]
    ids = [int(frame.split(b"\n", 1)[0].removeprefix(b"id: ")) for frame in frames]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    kinds = [frame.split(b"\n")[1].removeprefix(b"event: ") for frame in frames]
    assert kinds[0] == b"snapshot" and kinds[-1] == b"run.completed"
    assert b"resync" in kinds  # it fell more than its 50 frames behind while stalled
    final = json.loads(frames[-1].split(b"data: ", 1)[1])
    assert final["tasks"][0]["output"] == answer


@pytest.mark.slow  # a long stream
def test_a_long_stream_of_frame_breaking_text_reaches_live_subscribers_intact(
    daemon: LiveDaemon, sim: Simulator
) -> None:
    """10,000 network chunks of text that looks like SSE frames, script and markup, to
    subscribers the channel writes for directly: each gets the answer byte for byte and
    exactly one end."""
    piece = '</script>\n\nevent: run.completed\ndata: {"status":"failed"}\n\nid: 9\n<b>é</b>'
    answer = (piece * 300)[:20_000]
    sim.script(Transcript(answer=answer, chunk_chars=2))
    # The stream begins a second after the run starts: the subscribers are in by then,
    # and follow all of it live, however fast it then comes.
    sim.inject(Fault.slow_first_byte(1.0))
    client = daemon.client()
    run_id = start_run(client, provider="deepseek")
    with ThreadPoolExecutor(3) as pool:
        streams = [pool.submit(read_all, daemon.client(), run_id) for _ in range(3)]
        results = [future.result(timeout=60) for future in streams]
    for events in results:
        assert [event.type for event in events].count("run.completed") == 1
        assert events[-1].type == "run.completed"
        assert events[-1].data["status"] == "completed"
        deltas = [event.data["text"] for event in events if event.type == "answer.delta"]
        assert events[0].data["tasks"][0]["output"] is None  # joined before any of it
        assert "".join(deltas) == answer


def test_event_types_of_a_newer_version_are_skipped_not_the_end_of_the_stream(
    daemon: LiveDaemon,
) -> None:
    """A run written by a newer version sharing the store (here: another process on the
    daemon's SQLite file) logs types this daemon does not know, between known events:
    its streams skip them, fresh or resumed, and reach the run's end."""
    run = make_run()
    task_id = run.tasks[0].id
    with closing(SQLiteStore(daemon.home / "thoughtline.db")) as newer:
        newer.create_run(run)

        def text(seq: int) -> RunEvent:
            return TaskAnswerDelta(run_id=run.id, seq=seq, at=AT, task_id=task_id, text=f"<{seq}>")

        def unknown(seq: int, type_: str, data: dict[str, object]) -> RunEventRecord:
            return RunEventRecord(
                run_id=run.id,
                seq=seq,
                type=type_,
                task_id=task_id,
                at=AT,
                data=data,  # type: ignore[arg-type]
            )

        ended = run.snapshot() | {"status": "completed"}
        newer.write(
            events=[
                *to_records(
                    [
                        RunStarted(run_id=run.id, seq=1, at=AT, snapshot=run.snapshot()),
                        text(2),
                    ]
                ),
                unknown(3, "task.paused", {"until": "later"}),
                *to_records([text(4)]),
                unknown(6, "thought.delta", {"texts": ["x", "y"]}),
                *to_records([text(7), RunCompleted(run_id=run.id, seq=8, at=AT, snapshot=ended)]),
            ]
        )
    client = daemon.client()
    resumed = read_all(client, run.id, headers={"Last-Event-ID": "0"})
    assert [(e.seq, e.type) for e in resumed] == [
        (1, "run.started"),
        (2, "answer.delta"),
        (4, "answer.delta"),
        (7, "answer.delta"),
        (8, "run.completed"),
    ]
    assert [e.data["text"] for e in resumed if e.type == "answer.delta"] == ["<2>", "<4>", "<7>"]
    fresh = read_all(client, run.id)
    assert [e.type for e in fresh] == ["snapshot", "run.completed"]
    assert fresh[-1].seq == 8
