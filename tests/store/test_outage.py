"""When the PostgreSQL server goes away mid-run (``pg_ctl stop -m fast``, then start):
the run streams on to its own observers, the writer holds what it could not write and
writes it once the server is back — every event exactly once, in order, and the run's
end; past the hold's limits the tasks fail ``STORE_UNAVAILABLE`` saying what was lost,
and their end still reaches the database once it is back. A daemon refuses new runs
with 503 and ``Retry-After`` meanwhile, and its health route says why."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="the postgres extra is not installed")

import asyncio
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx2

from tests.runtime.test_background import spec
from tests.server.support import open_stream, start_run
from tests.store.postgres_cluster import Cluster, running_cluster
from tests.store.test_two_daemons import serve_on
from tests.support import daemon_url
from thoughtline.config import Config, StoreSettings
from thoughtline.providers.endpoints import EndpointSettings
from thoughtline.providers.retry import RetryPolicy
from thoughtline.records.run_events import RunEvent, TaskAnswerDelta, TaskCompleted
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.store.postgres import PostgresStore
from thoughtline.testing import SimReasoning, Simulator, SimulatorServer, Transcript

pytestmark = pytest.mark.slow  # a PostgreSQL server stopped and started under a daemon

ANSWER = "".join(f"{n:04d}" for n in range(600))  # 2400 characters, 600 deltas of 4
LONG = Transcript(
    reasoning=(SimReasoning(kind="summary", text="r" * 40),), answer=ANSWER, chunk_chars=4
)


@pytest.fixture
def own_cluster(postgres_cluster: Cluster) -> Iterator[Cluster]:
    """A cluster of its own: the test stops and starts it under open stores."""
    with running_cluster(postgres_cluster.binaries) as cluster:
        try:
            yield cluster
        finally:
            try:
                cluster.pg_ctl("status")
            except subprocess.CalledProcessError:  # a test that failed while it was down
                cluster.start()


def make_runtime(
    sim_server: SimulatorServer, environ: dict[str, str], store: PostgresStore
) -> Runtime:
    endpoint = EndpointSettings(
        wire_api="anthropic-messages",
        base_url=sim_server.base_url_for("anthropic"),
        api_key_env="ANTHROPIC_API_KEY",
    )
    return Runtime(
        config=Config(path=None, providers={"anthropic": endpoint}),
        store=store,
        environ=environ,
        retry=RetryPolicy(max_retries=0),
    )


async def _until(predicate: object, what: str, within_s: float = 30.0) -> None:
    deadline = time.monotonic() + within_s
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        await asyncio.sleep(0.05)


def _stored_seqs(dsn: str, run_id: str) -> list[int]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT seq FROM run_events WHERE run_id = %s ORDER BY seq", (run_id,)
        ).fetchall()
    return [row[0] for row in rows]


async def test_a_run_streams_through_a_server_restart_and_each_event_is_written_once(
    own_cluster: Cluster, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(LONG)
    sim.pace_s = 0.01
    dsn = own_cluster.dsn()
    store = PostgresStore(dsn)
    runtime = make_runtime(sim_server, environ, store)
    seen: list[RunEvent] = []
    run = runtime.prepare(spec("only"), explicit_mode="surface")
    running = asyncio.ensure_future(runtime.execute(run, observer=seen.append))
    try:
        answered = lambda: sum(isinstance(e, TaskAnswerDelta) for e in seen)  # noqa: E731
        await _until(lambda: answered() >= 20, "the answer streaming")
        await asyncio.to_thread(own_cluster.stop, "fast")
        await _until(lambda: runtime.writer.outage is not None, "the writer noticing")
        # The task streams to its end while nothing can be written...
        await _until(lambda: any(isinstance(e, TaskCompleted) for e in seen), "the task's end")
        await asyncio.sleep(0.3)
        # ...but the run does not say it is over before all of it is in the store.
        assert not running.done()
        await asyncio.to_thread(own_cluster.start)
        finished = await asyncio.wait_for(running, 60)
    finally:
        if not running.done():
            running.cancel()
        await runtime.aclose()
        store.close()
    assert finished.status == "completed"
    assert runtime.writer.outage is None
    with closing(PostgresStore(dsn)) as reader:
        stored = reader.get_run(run.id)
        assert stored is not None
        assert (stored.status, stored.tasks[0].status) == ("completed", "done")
        assert stored.tasks[0].output == ANSWER
        logged = reader.run_events(run.id)
    # Every event is in the log exactly once, in order, up to the run's end (adjacent
    # deltas are stored merged, under the last one's number).
    seqs = _stored_seqs(dsn, run.id)
    assert seqs == sorted(set(seqs))
    assert seqs[0] == 1
    assert seqs[-1] == seen[-1].seq
    answer = "".join(
        "".join(e.data["texts"]) if "texts" in e.data else e.data["text"]
        for e in logged
        if e.type == "answer.delta"
    )
    assert answer == ANSWER


async def test_past_the_hold_limit_the_tasks_fail_and_their_end_is_written_once_back(
    own_cluster: Cluster, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(LONG)
    sim.pace_s = 0.02  # 12 s: the hold gives up while the answer streams
    dsn = own_cluster.dsn()
    store = PostgresStore(dsn, settings=StoreSettings(outage_limit_s=1.0))
    runtime = make_runtime(sim_server, environ, store)
    seen: list[RunEvent] = []
    run = runtime.prepare(spec("only"), explicit_mode="surface")
    running = asyncio.ensure_future(runtime.execute(run, observer=seen.append))
    try:
        await _until(lambda: sum(isinstance(e, TaskAnswerDelta) for e in seen) >= 20, "the answer")
        before = _stored_seqs(dsn, run.id)
        await asyncio.to_thread(own_cluster.stop, "fast")
        await _until(lambda: any(isinstance(e, TaskCompleted) for e in seen), "the task giving up")
        await asyncio.to_thread(own_cluster.start)
        finished = await asyncio.wait_for(running, 60)
    finally:
        if not running.done():
            running.cancel()
        await runtime.aclose()
        store.close()
    task = finished.tasks[0]
    assert (finished.status, task.status) == ("failed", "failed")
    assert task.error is not None
    assert task.error.code == "STORE_UNAVAILABLE"
    assert "gave them up" in task.error.message
    assert "store.outage_limit_s (1 s)" in task.error.message
    assert task.reasoning_notice is not None
    assert "the events it held for it were lost" in task.reasoning_notice
    with closing(PostgresStore(dsn)) as reader:
        stored = reader.get_run(run.id)
        assert stored is not None
        # The end reached the database once it was back: not a run left `running`.
        assert (stored.status, stored.tasks[0].status) == ("failed", "failed")
        assert stored.tasks[0].error is not None
        assert stored.tasks[0].error.code == "STORE_UNAVAILABLE"
    seqs = _stored_seqs(dsn, run.id)
    # What was written before stays; each event at most once; the end is the last.
    assert seqs[: len(before)] == before
    assert seqs == sorted(set(seqs))
    assert seqs[-1] == seen[-1].seq
    assert len(seqs) < seen[-1].seq  # the events held past the limit were lost


def test_a_daemon_refuses_new_runs_while_the_server_is_away_and_its_run_ends_written(
    own_cluster: Cluster, sim: Simulator, environ: dict[str, str], tmp_path: Path
) -> None:
    sim.script(LONG)
    sim.pace_s = 0.005
    dsn = own_cluster.dsn()
    daemon = serve_on(tmp_path / "home", environ, dsn)
    try:
        with httpx2.Client(base_url=daemon_url(daemon), timeout=30) as client:
            run_id = start_run(client, provider="anthropic")
            seen = []
            with open_stream(client, run_id) as stream:
                for event in stream:
                    seen.append(event)
                    if sum(e.type == "answer.delta" for e in seen) == 20:
                        own_cluster.stop("fast")
                        refused = client.post("/v1/runs", json={"request": "another"})
                        health = client.get("/v1/health")
                        own_cluster.start()
            ended = client.get(f"/v1/runs/{run_id}").json()
    finally:
        if daemon.poll() is None:
            daemon.terminate()
        daemon.communicate(timeout=30)
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "5"
    assert refused.json()["error"]["code"] == "STORE_UNAVAILABLE"
    assert health.status_code == 503
    assert health.json()["status"] == "unavailable"
    assert f"127.0.0.1:{own_cluster.port}" in health.json()["store"]
    # Locally the stream never stopped: every event once, in order, to the end.
    assert seen[-1].type == "run.completed"
    assert [e.seq for e in seen[1:]] == sorted({e.seq for e in seen[1:]})
    assert ended["status"] == "completed"
    with closing(PostgresStore(dsn)) as reader:
        stored = reader.get_run(run_id)
    assert stored is not None
    assert stored.status == "completed"
    assert stored.tasks[0].output == ANSWER
    seqs = _stored_seqs(dsn, run_id)
    assert seqs == sorted(set(seqs))
    assert seqs[-1] == seen[-1].seq
