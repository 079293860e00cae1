"""Limits that protect the daemon process: the caps on tasks per run and on the request's
size (on the daemon, the command line and stdin), and a run being stored while another
process holds the store's write lock does not stop the daemon answering others."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx2

from tests.cli.test_run_cli import cli_env, thoughtline
from tests.server.conftest import StartDaemon
from tests.server.support import LiveDaemon, wait_for_status
from tests.server.test_api import error_of
from thoughtline.config import Config
from thoughtline.runtime.runner import Runtime


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


def test_the_cli_caps_the_request_from_an_argument_and_from_stdin(
    home: Path, environ: dict[str, str]
) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[orchestration]\nmax_request_bytes = 1000\n")
    inline = ("--worker-backend", "inline", "--json")
    refused = thoughtline(home, environ, "run", "x" * 1001, *inline)
    assert refused.returncode == 2, refused.stderr
    assert refused.stdout == ""
    assert refused.stderr == f"thoughtline: {request_too_large(1001, '1,000 bytes')}\n"
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
