"""``thoughtline store migrate --to postgresql://…`` copies a real SQLite home into
PostgreSQL without loss, says what it moved, and refuses to duplicate or to copy runs
still running."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="the postgres extra is not installed")

import json
import os
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.runtime.test_disclosure_e2e import TRANSCRIPT
from tests.store.builders import DAY, ago, make_event, make_run
from tests.store.children import stream_events
from tests.store.postgres_cluster import Cluster
from tests.store.test_roundtrip import _run_in_every_state
from thoughtline.records import TRACE_LAYERS, Run, RunEventRecord, TraceEvent
from thoughtline.store.base import Store
from thoughtline.store.postgres import PostgresStore
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import Simulator

pytestmark = pytest.mark.slow  # commands as processes, into the PostgreSQL cluster

PASSWORD = "pw-migrate-9d2e"


def _cli(home: Path, environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.update(environ)
    env["THOUGHTLINE_HOME"] = str(home)
    config = home.parent / "thoughtline.toml"
    config.write_text("[trace]\nprovider_raw = true\n", encoding="utf-8")
    env["THOUGHTLINE_CONFIG"] = str(config)
    env.pop("THOUGHTLINE_STORE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home.parent,
        timeout=60,
        check=False,
    )


def _everything(store: Store) -> list[tuple[Run, list[TraceEvent], list[RunEventRecord]]]:
    """Every run with its tasks, trace (all layers) and event log, newest first."""
    runs = store.list_runs(limit=1000)
    return [(run, store.trace(run.id), store.run_events(run.id)) for run in runs]


def _seed_home(home: Path, sim: Simulator, environ: dict[str, str]) -> None:
    # Real runs through the command line: answer, reasoning and provider_raw layers.
    for mode in ("hidden", "surface_and_telemetry"):
        sim.script(TRANSCRIPT)
        result = _cli(
            home, environ, "run", f"Explain ({mode}).", "--provider", "deepseek",
            "--chain-of-thought", mode, "--json",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    # And rows in every state, several created in the same millisecond.
    with closing(SQLiteStore(home / "thoughtline.db")) as store:
        every_state = _run_in_every_state()
        every_state.status, every_state.finished_at = "completed", ago(0)  # its tasks vary
        store.create_run(every_state)
        for n in range(3):
            store.create_run(
                make_run(f"run_same_{n}", created_at="2026-03-03T00:00:00.000Z", status="completed")
            )
        interrupted = make_run("run_gone", tasks=5, status="interrupted")
        store.create_run(interrupted)
        store.append_run_events(
            stream_events(interrupted.id, [task.id for task in interrupted.tasks], None)
        )
        store.append_trace(
            [
                make_event("run_gone", layer=layer, at=ago(40 * DAY), metadata={"l": layer})
                for layer in TRACE_LAYERS
            ]
        )
        store.set_meta("last_purge_at", ago(DAY))


def test_migrate_copies_a_sqlite_home_without_loss(
    postgres_cluster: Cluster,
    postgres_dsn: str,
    sim: Simulator,
    environ: dict[str, str],
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    _seed_home(home, sim, environ)
    target = postgres_cluster.dsn(postgres_dsn.rpartition("/")[2], password=PASSWORD)

    result = _cli(home, environ, "store", "migrate", "--to", target, "--json")

    assert result.returncode == 0, result.stderr
    assert PASSWORD not in result.stdout + result.stderr
    report = json.loads(result.stdout)
    with closing(SQLiteStore(home / "thoughtline.db")) as source:
        expected = _everything(source)
        source_meta = source.get_meta("last_purge_at")
    runs = [item[0] for item in expected]
    assert report["from"] == str(home / "thoughtline.db")
    assert report["to"].endswith(
        f":***@127.0.0.1:{postgres_cluster.port}/{target.rpartition('/')[2]}"
    )
    assert report["runs"] == len(runs) == 7
    assert report["tasks"] == sum(len(run.tasks) for run in runs)
    assert report["run_events"] == sum(len(item[2]) for item in expected)
    assert report["trace_events"] == sum(len(item[1]) for item in expected)
    assert all(count > 0 for count in report["trace_events_by_layer"].values())
    assert report["meta"] == ["last_purge_at"]

    with closing(PostgresStore(postgres_dsn)) as copied:
        assert _everything(copied) == expected
        assert copied.get_meta("last_purge_at") == source_meta
        assert copied.unfinished_runs() == []

    human = _cli(home, environ, "store", "migrate", "--to", target)
    assert human.returncode == 2
    assert human.stderr.startswith("thoughtline: The PostgreSQL store at 127.0.0.1:")
    assert "already holds 7 run(s)" in human.stderr and PASSWORD not in human.stderr
    with closing(PostgresStore(postgres_dsn)) as copied:
        assert _everything(copied) == expected  # the refusal wrote nothing


def test_migrate_says_what_it_moved_and_refuses_running_runs(
    postgres_dsn: str, environ: dict[str, str], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    with closing(SQLiteStore(home / "thoughtline.db")) as store:
        store.create_run(make_run("run_done", tasks=2, status="completed"))
        store.append_trace([make_event("run_done")])
        # This process is alive: its running run must not be copied half-written.
        store.create_run(make_run("run_live"))
        refused = _cli(home, environ, "store", "migrate", "--to", postgres_dsn)
        assert refused.returncode == 2
        assert "1 run(s) of the store being copied are still running (run_live)" in refused.stderr
        run = store.get_run("run_live")
        assert run is not None
        run.status, run.finished_at = "completed", ago(0)
        store.update_run(run)

    moved = _cli(home, environ, "store", "migrate", "--to", postgres_dsn)

    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.startswith(
        "Copied 2 run(s), 3 task(s), 0 tool call(s), 0 run event(s) and 1 trace event(s) "
        "(answer 1, reasoning 0, provider_raw 0) from "
    )
    assert "THOUGHTLINE_STORE_URL" in moved.stdout


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("sqlite:///x.db", "--to: must be a postgresql:// URL"),
        (
            "postgresql://postgres@127.0.0.1:1/nothing",
            "Cannot use the thoughtline PostgreSQL store at 127.0.0.1:1/nothing",
        ),
    ],
)
def test_migrate_names_a_bad_target(
    target: str, message: str, environ: dict[str, str], tmp_path: Path
) -> None:
    result = _cli(tmp_path / "home", environ, "store", "migrate", "--to", target)
    assert result.returncode == 2
    assert result.stderr.startswith(f"thoughtline: {message}"), result.stderr
    assert "Traceback" not in result.stderr
