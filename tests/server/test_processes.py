"""The daemon with other processes: a `thoughtline run` sharing THOUGHTLINE_HOME is
listed and tailed; `thoughtline serve` as a subprocess shuts down gracefully."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import httpx2
import pytest

from tests.cli.test_run_cli import cli_env
from tests.server.conftest import StartDaemon
from tests.server.support import Event, LiveDaemon, read_all, start_run
from tests.server.test_stored_runs import OtherProcess
from tests.store.builders import make_run
from tests.store.children import holding
from tests.support import daemon_url, start_process
from thoughtline.records.run_events import TaskAnswerDelta
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import Simulator, Transcript

pytestmark = pytest.mark.slow  # daemons in child processes, signals

SLOW = Transcript(answer="abcdefghij" * 8, chunk_chars=2)


def _run_elsewhere(
    daemon: LiveDaemon, sim: Simulator, environ: dict[str, str], request: str, *, stdout: int
) -> subprocess.Popen[bytes]:
    """``thoughtline run REQUEST --json`` in a process of its own on the daemon's store,
    its answer streamed slowly; stderr piped."""
    sim.script(SLOW)
    sim.pace_s = 0.03
    return start_process(
        [sys.executable, "-m", "thoughtline.cli", "run", request, "--provider", "deepseek",
         "--json"],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=cli_env(daemon.home, environ),
        cwd=daemon.home.parent,
    )  # fmt: skip


def _first_listed_run(client: httpx2.Client) -> dict[str, object]:
    """The newest run the daemon lists, once it lists one (at most 15 s)."""
    for _ in range(300):
        runs: list[dict[str, object]] = client.get("/v1/runs").json()["runs"]
        if runs:
            return runs[0]
        time.sleep(0.05)
    raise AssertionError("the daemon never saw the other process's run")


def test_a_run_of_another_process_is_listed_and_tailed(
    daemon: LiveDaemon, sim: Simulator, environ: dict[str, str]
) -> None:
    process = _run_elsewhere(daemon, sim, environ, "Tail me.", stdout=subprocess.PIPE)
    try:
        client = daemon.client()
        listed = _first_listed_run(client)
        run_id = str(listed["id"])
        assert listed["request"] == "Tail me."
        fresh = read_all(client, run_id)
        if fresh[0].data["status"] in ("planned", "running"):
            cancel = client.post(f"/v1/runs/{run_id}/cancel")
            # Finished meanwhile is possible on a slow machine; otherwise it says why.
            assert cancel.status_code == 409
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    assert fresh[0].type == "snapshot"
    assert fresh[-1].type == "run.completed"
    final = json.loads(stdout)
    assert fresh[-1].data["tasks"][0]["output"] == final["tasks"][0]["output"] == SLOW.answer
    replay = read_all(client, run_id, headers={"Last-Event-ID": "0"})
    assert [e.seq for e in replay] == list(range(1, len(replay) + 1))
    assert fresh[1:] == [e for e in replay if e.seq > fresh[0].seq]


def test_tail_mid_run_of_another_process_with_last_event_id(
    daemon: LiveDaemon, sim: Simulator, environ: dict[str, str]
) -> None:
    process = _run_elsewhere(daemon, sim, environ, "Resume me.", stdout=subprocess.DEVNULL)
    try:
        client = daemon.client()
        run_id = str(_first_listed_run(client)["id"])
        first = read_all(client, run_id, headers={"Last-Event-ID": "0"}, stop=lambda e: len(e) >= 3)
        rest = read_all(client, run_id, headers={"Last-Event-ID": str(first[-1].seq)})
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    union = first + rest
    assert [e.seq for e in union] == list(range(1, len(union) + 1))
    assert union[-1].type == "run.completed"


def _serve(home: Path, environ: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
    )


def test_sigterm_mid_run_leaves_the_run_interrupted(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(Transcript(answer="z" * 2000, chunk_chars=2))
    sim.pace_s = 0.02
    process = _serve(home, environ, "--port", "0", "--no-token")
    try:
        with httpx2.Client(base_url=daemon_url(process), timeout=20) as client:
            run_id = start_run(client, provider="deepseek")
            seen: list[Event] = []
            with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
                from thoughtline.wire.frames import SSEDecoder

                decoder = SSEDecoder()
                signalled = False
                for chunk in response.iter_bytes():
                    for frame in decoder.feed(chunk):
                        seen.append(Event.of(frame))
                    if not signalled and any(e.type == "answer.delta" for e in seen):
                        process.send_signal(signal.SIGTERM)
                        signalled = True
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert seen[-1].type == "run.interrupted"
    with SQLiteStore(home / "thoughtline.db") as store:
        run = store.get_run(run_id)
        assert run is not None
        assert run.status == "interrupted"
        assert run.tasks[0].status == "interrupted"
        assert run.tasks[0].output
        assert store.run_events(run_id)[-1].type == "run.interrupted"


def test_refuses_a_non_loopback_address_without_a_token(
    home: Path, environ: dict[str, str]
) -> None:
    process = _serve(home, environ, "--host", "0.0.0.0", "--port", "0")
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    assert stdout == ""
    assert stderr.strip().count("\n") == 0
    assert "without a token" in stderr


def test_a_follower_waiting_to_mark_a_dead_owners_run_leaves_the_daemon_answering(
    start_daemon: StartDaemon, home: Path
) -> None:
    """A subscriber follows a run another process left unfinished; the daemon's follower
    finds its owner gone and marks it interrupted, a write that waits while a third
    process (a CLI run) holds the file's write lock. The daemon goes on answering
    meanwhile: the follower's store work runs off its event loop."""
    daemon = start_daemon(recover_interval_s=0.2)
    path = home / "thoughtline.db"
    with SQLiteStore(path) as other:
        other.create_run(make_run("run_orphan"))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    with closing(sqlite3.connect(path)) as conn:  # owned by a process that has exited
        conn.execute("UPDATE runs SET owner_pid = ?", (int(gone.stdout),))
        conn.commit()
    client = daemon.client()
    with ThreadPoolExecutor(1) as pool:
        with holding(path, "BEGIN IMMEDIATE"):
            following = pool.submit(read_all, daemon.client(), "run_orphan")
            time.sleep(2.0)  # its first look at the owner comes after 1 s
            answered = client.get("/v1/runs?limit=5", timeout=3.0)
            assert answered.status_code == 200
            assert [run["status"] for run in answered.json()["runs"]] == ["running"]
            assert not following.done()  # still waiting to write
        events = following.result(timeout=30)
    assert events[0].type == "snapshot"
    assert events[-1].type == "run.interrupted"
    assert client.get("/v1/runs/run_orphan").json()["status"] == "interrupted"


def test_a_dead_owners_run_is_followed_from_an_event_id_to_an_end_after_its_last_event(
    start_daemon: StartDaemon, home: Path
) -> None:
    """Another process streamed deltas, then died without a terminal event. A client
    resuming from the middle gets every event after its own, then ``run.interrupted``
    numbered one past the last stored event, with the deltas in the task's snapshot."""
    daemon = start_daemon(recover_interval_s=0.2)
    path = home / "thoughtline.db"
    with SQLiteStore(path) as other:
        owner = OtherProcess(other, make_run("run_dead_owner"))
        owner.deltas(40, TaskAnswerDelta)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("UPDATE runs SET owner_pid = ?", (int(gone.stdout),))
        conn.commit()
    events = read_all(daemon.client(), "run_dead_owner", headers={"Last-Event-ID": "12"})
    assert [event.seq for event in events] == list(range(13, owner.seq + 2))
    assert [event.type for event in events[-2:]] == ["answer.delta", "run.interrupted"]
    ended = events[-1].data
    assert ended["status"] == "interrupted"
    assert ended["tasks"][0]["output"] == "".join(f"<{seq}>" for seq in range(3, owner.seq + 1))
