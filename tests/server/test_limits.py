"""Limits that protect the daemon process: the caps on tasks per run and on the request's
size (on the daemon, the command line and stdin), ``[server] max_active_runs`` (a 429
with Retry-After, nothing stored), and a run being stored while another process holds
the store's write lock does not stop the daemon answering others."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.cli.test_run_cli import cli_env, thoughtline
from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon, start_run, wait_for_status
from tests.server.test_api import error_of
from thoughtline.config import Config, load_config
from thoughtline.errors import ConfigError
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.testing import Fault, Simulator


def test_a_run_over_the_task_cap_is_refused_before_anything_is_stored(
    daemon: LiveDaemon,
) -> None:
    client = daemon.client()
    for count in (33, 5000):
        body = {"request": "x", "roles": ["engineer"] * count, "worker_backend": "inline"}
        error = error_of(client.post("/v1/runs", json=body), 400)
        assert error["code"] == "RUN_TOO_MANY_TASKS"
        assert error["message"] == (
            f"This run has {count} tasks, more than the limit of 32; raise "
            "orchestration.max_tasks_per_run (up to 1000) in thoughtline.toml to allow more."
        )
    assert client.get("/v1/runs").json()["runs"] == []
    at_cap = {"request": "x", "roles": ["engineer"] * 32, "worker_backend": "inline"}
    created = client.post("/v1/runs", json=at_cap)
    assert created.status_code == 202, created.text
    snapshot = wait_for_status(client, created.json()["id"], {"completed_prepare_only"})
    assert len(snapshot["tasks"]) == 32


def test_the_task_cap_follows_the_config(start_daemon: StartDaemon) -> None:
    daemon = start_daemon(config=Config(path=None, max_tasks_per_run=2))
    client = daemon.client()
    body = {"request": "x", "roles": ["engineer", "reviewer", "architect"]}
    error = error_of(client.post("/v1/runs", json={**body, "worker_backend": "inline"}), 400)
    assert error["code"] == "RUN_TOO_MANY_TASKS"
    assert "3 tasks, more than the limit of 2" in error["message"]
    body["roles"] = ["engineer", "reviewer"]
    assert client.post("/v1/runs", json={**body, "worker_backend": "inline"}).status_code == 202


PLAN = """
request = "Design a cache"
[[task]]
role = "architect"
[[task]]
role = "engineer"
[[task]]
role = "reviewer"
after = ["architect", "engineer"]
"""


@pytest.mark.slow
def test_the_cli_applies_the_configured_cap_to_plan_files(
    home: Path, environ: dict[str, str]
) -> None:
    home.mkdir(parents=True)
    plan = home / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    config = home / "config.toml"
    config.write_text("[orchestration]\nmax_tasks_per_run = 2\n", encoding="utf-8")
    refused = thoughtline(home, environ, "run", "--plan", str(plan), "--worker-backend", "inline")
    assert refused.returncode == 2, refused.stderr
    assert refused.stdout == ""
    assert refused.stderr.strip() == (
        "thoughtline: This run has 3 tasks, more than the limit of 2; raise "
        "orchestration.max_tasks_per_run (up to 1000) in thoughtline.toml to allow more."
    )
    config.write_text("[orchestration]\nmax_tasks_per_run = 3\n", encoding="utf-8")
    allowed = thoughtline(
        home, environ, "run", "--plan", str(plan), "--worker-backend", "inline", "--json"
    )
    assert allowed.returncode == 0, allowed.stderr


@pytest.mark.slow
def test_a_bad_task_cap_in_the_config_names_the_key(home: Path, environ: dict[str, str]) -> None:
    home.mkdir(parents=True)
    config = home / "config.toml"
    for value in ("0", "1001", '"32"', "true"):
        config.write_text(f"[orchestration]\nmax_tasks_per_run = {value}\n", encoding="utf-8")
        result = thoughtline(home, environ, "run", "x", "--worker-backend", "inline")
        assert result.returncode == 2, (value, result.stderr)
        assert "orchestration.max_tasks_per_run" in result.stderr
        assert "1 to 1000" in result.stderr


def test_other_clients_are_answered_while_a_run_waits_for_the_store(
    daemon: LiveDaemon,
) -> None:
    """Another process holds the SQLite write lock (as a busy CLI run can): storing a new
    run waits for it, off the event loop (in the store writer's thread), and unrelated
    requests are answered."""
    runtime: Runtime = daemon.daemon.runtime
    preparing = threading.Event()
    real_store = runtime.store_async

    async def store(*args: Any, **kwargs: Any) -> Any:
        preparing.set()  # the POST reached the store
        return await real_store(*args, **kwargs)

    runtime.store_async = store  # type: ignore[method-assign]
    other_process = sqlite3.connect(daemon.home / "thoughtline.db", isolation_level=None)
    other_process.execute("BEGIN IMMEDIATE")  # the write lock, until released
    outcome: dict[str, httpx2.Response] = {}
    body = {"request": "x", "roles": ["engineer"] * 32, "worker_backend": "inline"}

    def post() -> None:
        outcome["post"] = daemon.client().post("/v1/runs", json=body)

    poster = threading.Thread(target=post)
    try:
        poster.start()
        assert preparing.wait(20), "the POST never reached the store"
        # The store's busy timeout is 10 s: a daemon blocked on the lock would answer
        # this only after it, with the POST failed and done.
        with httpx2.Client(base_url=daemon.url, timeout=8) as client:
            for path in ("/openapi.json", "/"):
                assert client.get(path).status_code == 200
        assert poster.is_alive(), "the run was stored while the lock was held"
    finally:
        other_process.execute("ROLLBACK")
        other_process.close()
        poster.join(30)
    assert outcome["post"].status_code == 202, outcome["post"].text
    run_id = outcome["post"].json()["id"]
    snapshot = wait_for_status(daemon.client(), run_id, {"completed_prepare_only"})
    assert len(snapshot["tasks"]) == 32


def request_too_large(size: int, limit: str = "256 KiB") -> str:
    return (
        f"The request is {size:,} bytes of UTF-8 text, more than the limit of {limit}; raise "
        "orchestration.max_request_bytes (up to 64 MiB) in thoughtline.toml to allow more."
    )


def test_a_request_over_max_request_bytes_is_a_413_with_the_cli_message(
    daemon: LiveDaemon,
) -> None:
    """The request field is held to orchestration.max_request_bytes (256 KiB) with the
    runtime's message; the body limit leaves room for that text JSON-escaped."""
    client = daemon.client()
    limit = 256 * 1024
    over = {"request": "x" * (limit + 1), "worker_backend": "inline"}
    error = error_of(client.post("/v1/runs", json=over), 413)
    assert error == {"code": "REQUEST_TOO_LARGE", "message": request_too_large(limit + 1)}
    assert client.get("/v1/runs").json()["runs"] == []
    # At the limit, in 4-byte characters that JSON escapes to 12 bytes each (\ud83d\ude00).
    at_limit = "😀" * (limit // 4)
    body = json.dumps({"request": at_limit, "worker_backend": "inline"})
    assert len(body) > 3 * limit
    created = client.post("/v1/runs", content=body, headers={"Content-Type": "application/json"})
    assert created.status_code == 202, created.text
    snapshot = wait_for_status(client, created.json()["id"], {"completed_prepare_only"})
    assert snapshot["request"] == at_limit


def test_the_daemon_follows_the_configured_request_limit(start_daemon: StartDaemon) -> None:
    daemon = start_daemon(config=Config(path=None, max_request_bytes=1000))
    client = daemon.client()
    error = error_of(client.post("/v1/runs", json={"request": "é" * 501}), 413)
    assert error["message"] == request_too_large(1002, "1,000 bytes")
    # A body far over what such a request needs is refused before it is parsed.
    huge = client.post("/v1/runs", json={"request": "x" * 100_000})
    assert error_of(huge, 413)["message"] == (
        "The request body is larger than 68,536 bytes; the request text may be up to "
        "1,000 bytes (orchestration.max_request_bytes in thoughtline.toml)."
    )
    accepted = client.post("/v1/runs", json={"request": "é" * 500, "worker_backend": "inline"})
    assert accepted.status_code == 202, accepted.text


@pytest.mark.slow  # the command line as processes
def test_the_cli_caps_the_request_from_an_argument_and_from_stdin(
    home: Path, environ: dict[str, str]
) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[orchestration]\nmax_request_bytes = 1000\n")
    inline = ("--worker-backend", "inline", "--json")
    refused = thoughtline(home, environ, "run", "x" * 1001, *inline)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr == f"thoughtline: {request_too_large(1001, '1,000 bytes')}\n"
    assert json.loads(refused.stdout) == {
        "error": {"code": "REQUEST_TOO_LARGE", "message": request_too_large(1001, "1,000 bytes")}
    }
    env = cli_env(home, environ)
    piped = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "run", "-", *inline],
        input="y" * 1001 + "\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=home.parent,
        timeout=60,
        check=False,
    )
    assert piped.returncode == 2, piped.stderr
    assert piped.stderr == f"thoughtline: {request_too_large(1001, '1,000 bytes')}\n"
    # At the limit, with the final line break stdin usually ends with.
    fits = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "run", "-", *inline],
        input="z" * 1000 + "\r\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=home.parent,
        timeout=60,
        check=False,
    )
    assert fits.returncode == 0, fits.stderr
    assert json.loads(fits.stdout)["request"] == "z" * 1000
    listed = json.loads(thoughtline(home, environ, "runs", "--json").stdout)
    assert [run["request"] for run in listed] == ["z" * 1000]


def test_an_endless_stdin_stops_at_the_limit(home: Path, environ: dict[str, str]) -> None:
    """``cat /dev/zero | thoughtline run -``: the command reads one byte past the limit
    (and the line break allowance) and stops, with the error, nothing stored."""
    with open("/dev/zero", "rb") as endless:
        result = subprocess.run(
            [sys.executable, "-m", "thoughtline.cli", "run", "-", "--worker-backend", "inline"],
            stdin=endless,
            capture_output=True,
            text=True,
            env=cli_env(home, environ),
            cwd=home.parent,
            timeout=60,
            check=False,
        )
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        "thoughtline: The request is larger than the limit of 256 KiB; raise "
        "orchestration.max_request_bytes (up to 64 MiB) in thoughtline.toml to allow more.\n"
    )
    assert json.loads(thoughtline(home, environ, "runs", "--json").stdout) == []


AT_CAPACITY = (
    "This thoughtline server is already running {} run(s), its limit ([server] "
    "max_active_runs in thoughtline.toml); try again in 5 s."
)


def wait_for_health(client: httpx2.Client, status: int) -> httpx2.Response:
    """Poll ``/v1/health`` until it answers ``status`` (bounded, not timed)."""
    answer = client.get("/v1/health")
    for _ in range(400):
        if answer.status_code == status:
            return answer
        time.sleep(0.05)
        answer = client.get("/v1/health")
    raise AssertionError(f"/v1/health never answered {status}: {answer.text}")


def test_past_max_active_runs_a_run_is_a_429_with_retry_after_and_nothing_is_stored(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    """Two runs held open (their provider streams stall) fill a daemon allowing two: a
    third is refused with the usual error JSON and Retry-After, health says why, and a
    place freed by a run ending is taken again."""
    sim.inject(Fault.stall(at="mid_answer", max_s=30), times=2)
    live = start_daemon(config=Config(path=None, max_active_runs=2))
    client = live.client()
    held = [start_run(client, request=f"hold {n}") for n in range(2)]
    refused = client.post("/v1/runs", json={"request": "one too many"})
    assert error_of(refused, 429) == {
        "code": "SERVER_AT_CAPACITY",
        "message": AT_CAPACITY.format(2),
    }
    assert refused.headers["Retry-After"] == "5"
    stored = client.get("/v1/runs").json()["runs"]
    assert sorted(run["id"] for run in stored) == sorted(held)
    assert all(run["request"] != "one too many" for run in stored)
    health = client.get("/v1/health")
    assert (health.status_code, health.json()) == (503, {"status": "at_capacity", "store": "ok"})
    assert health.headers["Retry-After"] == "5"

    assert client.post(f"/v1/runs/{held[0]}/cancel").status_code == 202
    wait_for_status(client, held[0], {"cancelled"})
    assert wait_for_health(client, 200).json() == {"status": "ok", "store": "ok"}
    again = client.post("/v1/runs", json={"request": "now", "worker_backend": "inline"})
    assert again.status_code == 202, again.text
    assert wait_for_status(client, again.json()["id"], {"completed_prepare_only"})
    assert client.get(f"/v1/runs/{held[1]}").json()["status"] == "running"


def test_of_two_posts_racing_for_the_last_place_the_second_is_refused(
    start_daemon: StartDaemon,
) -> None:
    """The place is taken when the POST is accepted, not when its run is stored: a first
    POST held while it is stored keeps a second, sent meanwhile, out."""
    live = start_daemon(config=Config(path=None, max_active_runs=1))
    runtime: Runtime = live.daemon.runtime
    reached, gate = threading.Event(), threading.Event()
    real_store = runtime.store_async

    async def store(*args: Any, **kwargs: Any) -> Any:
        reached.set()
        await asyncio.to_thread(gate.wait, 30)
        return await real_store(*args, **kwargs)

    runtime.store_async = store  # type: ignore[method-assign]
    outcome: dict[str, httpx2.Response] = {}
    body = {"request": "first", "worker_backend": "inline"}

    def post() -> None:
        outcome["first"] = live.client().post("/v1/runs", json=body)

    poster = threading.Thread(target=post)
    poster.start()
    try:
        assert reached.wait(20), "the first POST never reached the store"
        client = live.client()
        second = client.post("/v1/runs", json={**body, "request": "second"})
        health = client.get("/v1/health")
    finally:
        gate.set()
        poster.join(30)
    assert error_of(second, 429)["message"] == AT_CAPACITY.format(1)
    assert health.json()["status"] == "at_capacity"
    assert outcome["first"].status_code == 202, outcome["first"].text
    first_id = outcome["first"].json()["id"]
    assert [run["id"] for run in client.get("/v1/runs").json()["runs"]] == [first_id]
    wait_for_status(client, first_id, {"completed_prepare_only"})
    wait_for_health(client, 200)
    assert client.post("/v1/runs", json={**body, "request": "third"}).status_code == 202


def test_a_refused_start_gives_its_place_back(start_daemon: StartDaemon) -> None:
    """A run refused for bad input holds no place afterwards."""
    live = start_daemon(config=Config(path=None, max_active_runs=1))
    client = live.client()
    bad = client.post("/v1/runs", json={"request": "x", "roles": ["nosuch"]})
    assert error_of(bad, 400)["code"] == "ROLE_UNKNOWN"
    assert live.daemon.runs.active == 0
    created = client.post("/v1/runs", json={"request": "x", "worker_backend": "inline"})
    assert created.status_code == 202, created.text


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "max_active_runs = 0",
            "server.max_active_runs: must be an integer from 1 to 100,000, got 0",
        ),
        ('max_active_runs = "8"', "server.max_active_runs: wrong type: must be an integer"),
        (
            "max_runs = 8",
            "server.max_runs: unknown key. Allowed keys in [server]: max_active_runs, "
            "max_connections, header_timeout_s, keep_alive_timeout_s",
        ),
        (
            "max_connections = 0",
            "server.max_connections: must be an integer from 1 to 1,000,000, got 0",
        ),
        ("max_connections = 1.5", "server.max_connections: wrong type: must be an integer"),
        (
            "header_timeout_s = 0.5",
            "server.header_timeout_s: must be from 1 to 3600 seconds, got 0.5",
        ),
        (
            'header_timeout_s = "10s"',
            "server.header_timeout_s: wrong type: must be a number of seconds from 1 to 3600",
        ),
        (
            "keep_alive_timeout_s = nan",
            "server.keep_alive_timeout_s: must be from 1 to 3600 seconds, got nan",
        ),
        (
            "keep_alive_timeout_s = 7200",
            "server.keep_alive_timeout_s: must be from 1 to 3600 seconds, got 7200",
        ),
    ],
)
def test_a_bad_server_setting_is_one_sentence_naming_the_file_and_key(
    tmp_path: Path, line: str, expected: str
) -> None:
    path = tmp_path / "thoughtline.toml"
    path.write_text(f"[server]\n{line}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert refused.value.message.startswith(f"{path}: {expected}")


def test_thoughtline_config_shows_max_active_runs(home: Path, environ: dict[str, str]) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[server]\nmax_active_runs = 3\n", encoding="utf-8")
    shown = thoughtline(home, environ, "config", "--json")
    assert shown.returncode == 0, shown.stderr
    settings = {entry["key"]: entry for entry in json.loads(shown.stdout)["settings"]}
    assert settings["server.max_active_runs"] == {
        "key": "server.max_active_runs",
        "value": 3,
        "source": str(home / "config.toml"),
    }
    assert load_config(None, environ={}, cwd=home).max_active_runs is None  # no file: no limit


def test_the_connection_settings_are_read_from_server(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.toml"
    path.write_text(
        "[server]\nmax_connections = 500\nheader_timeout_s = 2.5\nkeep_alive_timeout_s = 30\n",
        encoding="utf-8",
    )
    config = load_config(path)
    assert (config.max_connections, config.header_timeout_s, config.keep_alive_timeout_s) == (
        500,
        2.5,
        30.0,
    )
    assert config.sources["server.header_timeout_s"] == str(path)
    defaults = load_config(None, environ={}, cwd=tmp_path / "nowhere")
    assert (defaults.max_connections, defaults.header_timeout_s) == (4096, 10.0)
    assert defaults.keep_alive_timeout_s == 5.0
