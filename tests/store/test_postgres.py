"""What only the PostgreSQL store has to prove: migrations raced by several processes,
a newer database refused, a server that is down or restarts, the owner lease across
hosts, purge, and a real command line run whose canaries never reach the database."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="the postgres extra is not installed")

import json
import multiprocessing
import os
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import psycopg
import pytest

from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import CANARY, ECHO, TRANSCRIPT
from tests.store import children
from tests.store.backends import StoreBackend
from tests.store.builders import DAY, ago, make_event, make_run
from tests.store.postgres_cluster import Cluster, free_port, running_cluster
from thoughtline.errors import ConfigError
from thoughtline.records import RunEventRecord
from thoughtline.runtime.policy.recovery import recover_interrupted
from thoughtline.runtime.policy.retention import purge
from thoughtline.store import _postgres_connection
from thoughtline.store._postgres_listen import RunEventsAppended
from thoughtline.store._postgres_schema import MIGRATIONS
from thoughtline.store.base import StoreError
from thoughtline.store.postgres import PostgresStore
from thoughtline.testing import Simulator

PASSWORD = "pw-never-printed-51c0"


def _migrations(dsn: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT name FROM migrations ORDER BY position").fetchall()


@pytest.mark.slow
def test_processes_starting_at_once_migrate_once(postgres_dsn: str) -> None:
    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(6)
    openers = [
        spawn.Process(target=children.open_and_close, args=(postgres_dsn, barrier))
        for _ in range(6)
    ]
    for process in openers:
        process.start()
    for process in openers:
        process.join()
    assert [process.exitcode for process in openers] == [0] * 6
    assert _migrations(postgres_dsn) == [(migration.name,) for migration in MIGRATIONS]


@pytest.mark.slow
def test_a_database_of_a_newer_version_is_refused_untouched(postgres_dsn: str) -> None:
    PostgresStore(postgres_dsn).close()
    with psycopg.connect(postgres_dsn) as conn:
        conn.execute("INSERT INTO migrations (name, applied_at) VALUES ('m999_future', 'x')")
    before = StoreBackend("postgres", postgres_dsn).table_dumps()
    with pytest.raises(ConfigError) as raised:
        PostgresStore(postgres_dsn)
    message = raised.value.message
    assert "was written by a newer version of thoughtline" in message
    assert "m999_future" in message
    assert postgres_dsn.rpartition("@")[2] in message
    assert "The database was not modified." in message
    assert StoreBackend("postgres", postgres_dsn).table_dumps() == before


def test_a_server_that_is_not_there_is_a_clear_error() -> None:
    dsn = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{free_port()}/runs"
    with pytest.raises(StoreError) as raised:
        PostgresStore(dsn)
    assert raised.value.problem == "unavailable"
    assert raised.value.code == "STORE_UNAVAILABLE"
    message = raised.value.message
    assert message.startswith("Cannot use the thoughtline PostgreSQL store at 127.0.0.1:")
    assert "/runs" in message and "check that the server is running" in message
    assert PASSWORD not in message and "\n" not in message


@pytest.mark.slow
def test_a_server_going_down_and_back_mid_use(
    postgres_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_postgres_connection, "POOL_WAIT_S", 1.0)
    # A cluster of its own: this one is stopped under a store that stays open.
    with running_cluster(postgres_cluster.binaries) as cluster:
        dsn = cluster.dsn("postgres", password=PASSWORD)
        with closing(PostgresStore(dsn)) as store:
            store.create_run(make_run("run_before"))
            cluster.stop("fast")
            with pytest.raises(StoreError) as raised:
                store.get_run("run_before")
            assert raised.value.problem == "unavailable"
            assert raised.value.message.startswith(
                f"No connection to the thoughtline PostgreSQL store at 127.0.0.1:{cluster.port}"
                "/postgres in time"
            )
            assert PASSWORD not in raised.value.message
            cluster.start()
            # Broken connections are replaced: the same store works again (the pool
            # retries connecting with a growing pause, so give it a few seconds).
            deadline = time.monotonic() + 30
            while True:
                try:
                    stored = store.get_run("run_before")
                    break
                except StoreError:
                    assert time.monotonic() < deadline
            assert stored is not None and stored.id == "run_before"


@pytest.mark.slow
def test_a_silent_owner_on_another_host_is_recovered_after_its_lease(postgres_dsn: str) -> None:
    beat = 0.2
    owner = PostgresStore(postgres_dsn, heartbeat_interval_s=beat)
    observer = PostgresStore(postgres_dsn, heartbeat_interval_s=beat)
    try:
        owner.create_run(make_run("run_remote"))
        # As if created on another machine: only the heartbeat can tell whether it lives.
        StoreBackend("postgres", postgres_dsn).sql(
            "UPDATE runs SET owner_host = 'other-machine', owner_pid = 1"
        )
        time.sleep(beat * 6)  # twice the lease: the owner's beats keep it alive
        assert recover_interrupted(observer) == []
        owner.close()  # the owner dies: its beats stop
        time.sleep(beat * 4)
        assert recover_interrupted(observer) == ["run_remote"]
        event = observer.trace("run_remote")[-1]
        assert (event.type, event.metadata["reason"]) == ("run.interrupted", "heartbeat_stale")
        assert "other-machine" in event.metadata["detail"]
    finally:
        owner.close()
        observer.close()


@pytest.mark.slow
def test_purge_removes_rows_from_every_table_and_says_what_postgres_keeps(
    postgres_dsn: str,
) -> None:
    backend = StoreBackend("postgres", postgres_dsn)
    with closing(PostgresStore(postgres_dsn)) as store:
        store.create_run(make_run("run_p"))
        old = make_event("run_p", layer="reasoning", at=ago(40 * DAY), metadata={"t": CANARY})
        store.append_trace([old, make_event("run_p", metadata={"t": "keep me"})])
        assert backend.holds(CANARY)  # the scan sees what it looks for
        assert store.purge_residue() is None
        assert purge(store, {"reasoning": 30 * DAY}, dry_run=True)["reasoning"] == 1
        assert store.purge_residue() is None
        assert purge(store, {"reasoning": 30 * DAY})["reasoning"] == 1
        assert not backend.holds(CANARY)
        assert backend.holds("keep me")
        residue = store.purge_residue()
    assert residue is not None and "VACUUM" in residue and "\n" not in residue


@pytest.mark.slow
def test_concurrent_writers_keep_each_runs_event_numbers(postgres_dsn: str) -> None:
    backend = StoreBackend("postgres", postgres_dsn)
    stores = [PostgresStore(postgres_dsn) for _ in range(3)]
    try:
        runs = [make_run(f"run_{n}", tasks=5) for n in range(3)]
        for store, run in zip(stores, runs, strict=True):
            store.create_run(run)
        spawn = multiprocessing.get_context("spawn")
        writers = [
            spawn.Process(target=children.stream_many, args=(postgres_dsn, run.id, 40))
            for run in runs
        ]
        for process in writers:
            process.start()
        for process in writers:
            process.join()
        assert [process.exitcode for process in writers] == [0, 0, 0]
        for run in runs:
            assert [event.seq for event in stores[0].run_events(run.id)] == list(range(1, 41))
        # A number given twice is refused, not silently renumbered.
        with pytest.raises(psycopg.errors.UniqueViolation):
            stores[0].append_run_events(stores[1].run_events("run_0", limit=1))
        assert backend.query("SELECT COUNT(*) FROM run_events") == [(120,)]
    finally:
        for store in stores:
            store.close()


def _cli(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
        check=False,
    )


@pytest.mark.slow
def test_a_cli_run_on_postgres_is_read_back_by_other_processes_and_leaks_nothing(
    postgres_cluster: Cluster,
    postgres_dsn: str,
    sim: Simulator,
    environ: dict[str, str],
    tmp_path: Path,
) -> None:
    database = postgres_dsn.rpartition("/")[2]
    url = postgres_cluster.dsn(database, password=PASSWORD)
    config = tmp_path / "thoughtline.toml"
    config.write_text("[trace]\nprovider_raw = true\n", encoding="utf-8")
    home = tmp_path / "home"
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.update(environ)
    env.update(
        THOUGHTLINE_HOME=str(home), THOUGHTLINE_CONFIG=str(config), THOUGHTLINE_STORE_URL=url
    )

    sim.script(TRANSCRIPT)
    hidden = _cli(env, tmp_path, "run", "Explain.", "--provider", "deepseek", "--json")
    assert hidden.returncode == 0, hidden.stderr
    run_id = json.loads(hidden.stdout)["id"]
    sim.script(ECHO)
    surface = _cli(
        env, tmp_path, "run", "Echo.", "--provider", "deepseek",
        "--chain-of-thought", "surface", "--json",
    )  # fmt: skip
    assert surface.returncode == 0, surface.stderr

    status = _cli(env, tmp_path, "status", run_id, "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout) == json.loads(hidden.stdout)
    trace = _cli(env, tmp_path, "trace", run_id, "--json")
    assert trace.returncode == 0, trace.stderr
    types = [event["type"] for event in json.loads(trace.stdout)]
    assert types[0] == "run.started" and types[-1] == "run.completed"
    runs = _cli(env, tmp_path, "runs", "--json")
    assert runs.returncode == 0, runs.stderr
    assert run_id in runs.stdout

    backend = StoreBackend("postgres", postgres_dsn)
    assert backend.holds("The final answer")  # the scan reads what the runs wrote
    assert backend.holds(CANARY)  # shown by the surface run, as its mode allows
    with psycopg.connect(postgres_dsn) as conn:
        hidden_rows = "\n".join(
            str(row[0])
            for table in ("runs", "tasks", "trace_events", "run_events")
            for row in conn.execute(
                f"SELECT t::text FROM {table} AS t WHERE {'id' if table == 'runs' else 'run_id'} = %s",  # type: ignore[arg-type]
                (run_id,),
            ).fetchall()
        )
    assert "provider.exchange" in hidden_rows  # raw bodies were stored, scrubbed
    assert CANARY not in hidden_rows  # hidden: nowhere, not even in provider_raw
    assert not backend.holds(CANARY_KEY)  # the key: nowhere at all
    for output in (hidden, surface, status, trace, runs):
        assert PASSWORD not in output.stdout + output.stderr
        assert CANARY_KEY not in output.stdout + output.stderr
    assert not (home / "thoughtline.db").exists()  # nothing went to the SQLite store


@pytest.mark.slow
def test_a_nul_character_from_a_model_is_stored_as_a_replacement(postgres_dsn: str) -> None:
    # PostgreSQL text cannot hold U+0000; a model that emits one must not fail the run.
    with closing(PostgresStore(postgres_dsn)) as store:
        run = make_run("run_nul", request="ask\x00ed")
        store.create_run(run)
        task = run.tasks[0]
        task.status, task.output, task.reasoning = "done", "an\x00swer", "thought\x00"
        store.update_task(task)
        store.append_trace([make_event("run_nul", metadata={"text": "kept\x00exactly"})])
        stored = store.get_run("run_nul")
        assert stored is not None
        assert (stored.request, stored.tasks[0].output, stored.tasks[0].reasoning) == (
            "ask\ufffded",
            "an\ufffdswer",
            "thought\ufffd",
        )
        assert store.trace("run_nul")[0].metadata == {"text": "kept\x00exactly"}  # JSON escapes it


def _delta(run_id: str, seq: int, text: str) -> RunEventRecord:
    return RunEventRecord(
        run_id=run_id, seq=seq, type="answer.delta", task_id=f"{run_id}_task0",
        at=ago(0), data={"text": text},
    )  # fmt: skip


@pytest.mark.slow
def test_appended_run_events_are_announced_to_listeners_elsewhere(postgres_dsn: str) -> None:
    with closing(PostgresStore(postgres_dsn)) as reader, closing(reader.listen()) as listener:
        runs = [make_run(f"run_live_{n}") for n in range(2)]
        for run in runs:
            reader.create_run(run)
        spawn = multiprocessing.get_context("spawn")
        writers = [
            spawn.Process(target=children.stream_many, args=(postgres_dsn, run.id, 40))
            for run in runs
        ]
        for process in writers:
            process.start()
        seen: dict[str, int] = {}
        deadline = time.monotonic() + 60
        while any(seen.get(run.id) != 40 for run in runs) and time.monotonic() < deadline:
            for announced in listener.wait(1.0):
                assert announced.seq > seen.get(announced.run_id, 0)  # in order, per run
                seen[announced.run_id] = announced.seq
        for process in writers:
            process.join()
        assert seen == {run.id: 40 for run in runs}
        # An announcement carries ids only: the events are read from the table.
        assert [event.seq for event in reader.run_events("run_live_0")] == list(range(1, 41))

        huge = "x" * 100_000  # far past NOTIFY's 8000-byte payload limit
        reader.append_run_events([_delta("run_live_0", 41, huge)])
        assert listener.wait(5.0, limit=1) == [RunEventsAppended("run_live_0", 41, first=41)]
        assert reader.run_events("run_live_0", after_seq=40)[0].data == {"text": huge}

        # A write that is rolled back announces nothing.
        with pytest.raises(psycopg.errors.UniqueViolation):
            reader.append_run_events([_delta("run_live_0", 41, "again")])
        assert listener.wait(0.5) == []


@pytest.mark.slow
def test_cross_process_delivery_latency(postgres_dsn: str) -> None:
    """From the append call on one connection to the listener's receipt on another."""
    with (
        closing(PostgresStore(postgres_dsn)) as writer,
        closing(PostgresStore(postgres_dsn)) as observer,
        closing(observer.listen()) as listener,
    ):
        writer.create_run(make_run("run_latency"))
        latencies = []
        for seq in range(1, 201):
            started = time.perf_counter()
            writer.append_run_events([_delta("run_latency", seq, "token ")])
            (announced,) = listener.wait(5.0, limit=1)
            latencies.append(time.perf_counter() - started)
            assert announced == RunEventsAppended("run_latency", seq, first=seq)
    latencies.sort()
    p50, p99 = latencies[100] * 1000, latencies[197] * 1000
    print(f"append → listener: p50 {p50:.2f} ms, p99 {p99:.2f} ms over 200 appends")
    assert p99 < 500  # loose: CI shares two cores; the measured numbers are printed


@pytest.mark.slow
def test_purge_on_postgres_says_what_the_server_keeps_and_succeeds(
    postgres_cluster: Cluster, postgres_dsn: str, tmp_path: Path
) -> None:
    """A daily cron job must not fail on every purge: PostgreSQL keeps deleted bytes until
    VACUUM by design, which no second purge could change (SQLite's unfinished erasure,
    which the next purge completes, still exits 1: tests/store/test_purge.py)."""
    database = postgres_dsn.rpartition("/")[2]
    url = postgres_cluster.dsn(database, password=PASSWORD)
    with closing(PostgresStore(url)) as store:
        store.create_run(make_run("run_p"))
        store.append_trace([make_event("run_p", layer="reasoning", at=ago(40 * DAY))])
    config = tmp_path / "thoughtline.toml"
    config.write_text('[trace.retention]\nreasoning = "30d"\n', encoding="utf-8")
    env = dict(os.environ)
    env.update(
        THOUGHTLINE_HOME=str(tmp_path / "home"),
        THOUGHTLINE_CONFIG=str(config),
        THOUGHTLINE_STORE_URL=url,
    )
    purged = _cli(env, tmp_path, "purge")
    assert purged.returncode == 0, purged.stderr
    assert "reasoning: removed 1 event(s)" in purged.stdout
    assert "VACUUM" in purged.stderr
    again = _cli(env, tmp_path, "purge")  # nothing deleted: nothing to say
    assert again.returncode == 0, again.stderr
    assert "reasoning: removed 0 event(s)" in again.stdout
    assert again.stderr == ""
