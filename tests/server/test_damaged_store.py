"""A daemon whose database is damaged under it: once it has seen the damage it refuses
every write with 503 and the reason, and the file is left as it was until the daemon is
restarted on a sound one."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import httpx2
import pytest

from tests.cli.test_run_cli import cli_env
from tests.server.support import LiveDaemon
from tests.store.builders import make_run
from tests.support import daemon_url, start_process
from thoughtline.config import Config
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.policy.retention import purge_if_due
from thoughtline.server.app import DaemonServer
from thoughtline.server.daemon import Daemon, ServerSettings
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import Simulator

TOKEN = "damaged-store-test-token-0123456789abcdef"
PROBE = {"request": "Still there?", "provider": "deepseek"}


def _serve(home: Path, environ: dict[str, str]) -> subprocess.Popen[str]:
    return start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**cli_env(home, environ), "THOUGHTLINE_TOKEN": TOKEN},
        cwd=home.parent,
    )


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _files(home: Path) -> dict[str, tuple[int, int]]:
    """Size and modification time of the database and its side files."""
    found = {}
    for name in ("thoughtline.db", "thoughtline.db-wal"):
        path = home / name
        if path.exists():
            info = path.stat()
            found[name] = (info.st_size, info.st_mtime_ns)
    return found


def _client(url: str) -> httpx2.Client:
    return httpx2.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=20.0)


def _sound_database(path: Path) -> None:
    """A store with finished runs and its daily purge done, so that the daemon opening
    it writes nothing of its own."""
    with SQLiteStore(path) as store:
        for n in range(3):
            store.create_run(make_run(f"run_{n:03d}", status="completed"))
        purge_if_due(store, {})


@pytest.mark.slow  # a daemon in a child process
def test_a_database_damaged_under_the_daemon_is_not_written_to_again(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    database = home / "thoughtline.db"
    _sound_database(database)
    process = _serve(home, environ)
    try:
        with (
            _client(daemon_url(process)) as client,
            closing(sqlite3.connect(database, isolation_level=None)) as other,
        ):
            assert len(client.get("/v1/runs").json()["runs"]) == 3
            # Another process appends to the WAL, so the daemon's next read cannot trust
            # the pages it cached and reads the file, which a stray write then damages.
            other.execute("UPDATE runs SET request = 'Changed elsewhere.' WHERE id = 'run_001'")
            with database.open("r+b") as file:
                file.write(b"\x5a" * 32 * 1024)
            seen = client.get("/v1/runs")
            assert seen.status_code == 503, seen.text
            assert seen.json()["error"]["code"] == "STORE_UNAVAILABLE"
            before = _files(home)

            refused = client.post("/v1/runs", json=PROBE)
            cancelled = client.post("/v1/runs/run_000/cancel")
            again = client.get("/v1/runs")

            assert refused.status_code == 503, refused.text
            error = refused.json()["error"]
            assert error["code"] == "STORE_UNAVAILABLE"
            assert "damaged" in error["message"] and "restart" in error["message"]
            assert str(database) in error["message"]
            assert cancelled.status_code == 503, cancelled.text
            assert cancelled.json()["error"]["message"] == error["message"]
            assert again.status_code == 503
            assert _files(home) == before
    finally:
        _stop(process)

    # Restarted on a sound file (the damaged one moved aside), the daemon writes again.
    database.rename(tmp_path / "damaged.db")
    for side in home.glob("thoughtline.db-*"):
        side.unlink()
    process = _serve(home, environ)
    try:
        with _client(daemon_url(process)) as client:
            assert client.post("/v1/runs", json=PROBE).status_code == 202
    finally:
        _stop(process)


def test_after_a_read_finds_damage_a_write_its_cache_would_allow_is_refused(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    """The repro as reported: the daemon's reader finds the damage while its writer's
    cache still holds every page a new run needs, so SQLite alone would append it."""
    home = tmp_path / "home"
    database = home / "thoughtline.db"
    _sound_database(database)
    # No checkpoint while the test looks: the file changes only if the daemon writes.
    store = SQLiteStore(database, checkpoint_interval_s=3600)
    runtime = Runtime(config=Config(path=None), store=store, environ=environ)
    daemon = Daemon(runtime=runtime, store=store, settings=ServerSettings(port=0))
    live = LiveDaemon(server=DaemonServer(daemon).start(), daemon=daemon, home=home)
    try:
        client = live.client()
        assert len(client.get("/v1/runs").json()["runs"]) == 3
        store.create_run(make_run("run_new", status="completed"))  # the writer's last commit
        with database.open("r+b") as file:
            file.write(b"\x5a" * 32 * 1024)
        assert client.get("/v1/runs").status_code == 503
        before = _files(home)

        refused = client.post("/v1/runs", json=PROBE)

        assert refused.status_code == 503, refused.text
        assert "restart it on a sound file" in refused.json()["error"]["message"]
        assert _files(home) == before
        assert daemon.store_damage is not None
    finally:
        live.close()
