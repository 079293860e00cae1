"""Two ``thoughtline serve`` processes on one PostgreSQL store, with homes of their own:
a run started on daemon A is followed live over SSE on daemon B; when A is killed mid-run,
B reports the run ``interrupted`` with the answer that had arrived."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="the postgres extra is not installed")

import os
import signal
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import httpx2

from tests.server.support import Event, open_stream, start_run
from tests.support import daemon_url, start_process
from thoughtline.store.postgres import PostgresStore
from thoughtline.testing import Simulator, Transcript

pytestmark = pytest.mark.slow  # two daemon processes on one PostgreSQL

# Long enough to outlast the kill, short enough that the simulator, which keeps
# streaming to the killed daemon, finishes within seconds.
LONG = Transcript(answer="abcdefghij" * 40, chunk_chars=2)


def serve_on(home: Path, environ: dict[str, str], store_url: str) -> subprocess.Popen[str]:
    """``thoughtline serve`` in a child process on the store at ``store_url``."""
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.update(environ)
    env.update(THOUGHTLINE_HOME=str(home), THOUGHTLINE_STORE_URL=store_url)
    env.pop("THOUGHTLINE_CONFIG", None)
    home.mkdir(parents=True)
    return start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=home,
    )


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
    process.communicate(timeout=30)


def test_a_run_on_one_daemon_is_followed_on_another_and_outlives_its_death(
    postgres_dsn: str, sim: Simulator, environ: dict[str, str], tmp_path: Path
) -> None:
    sim.script(LONG)
    sim.pace_s = 0.02
    daemon_a = serve_on(tmp_path / "a", environ, postgres_dsn)
    daemon_b = serve_on(tmp_path / "b", environ, postgres_dsn)
    seen: list[Event] = []
    try:
        url_a, url_b = daemon_url(daemon_a), daemon_url(daemon_b)
        with (
            httpx2.Client(base_url=url_a, timeout=20) as on_a,
            httpx2.Client(base_url=url_b, timeout=60) as on_b,
        ):
            run_id = start_run(on_a, provider="deepseek")
            with open_stream(on_b, run_id) as stream:
                for event in stream:
                    seen.append(event)
                    answered = [e for e in seen if e.type == "answer.delta"]
                    if len(answered) == 5:
                        daemon_a.send_signal(signal.SIGKILL)  # no chance to write anything
            assert on_b.get(f"/v1/runs/{run_id}").json()["status"] == "interrupted"
    finally:
        _stop(daemon_a)
        _stop(daemon_b)
    assert daemon_a.returncode == -signal.SIGKILL
    assert seen[0].type == "snapshot"
    assert seen[-1].type == "run.interrupted"
    assert [event.seq for event in seen[1:]] == list(range(seen[1].seq, seen[-1].seq + 1))
    # What B showed: the answer folded into its first snapshot (on a busy machine A may
    # have flushed some deltas before B subscribed), then each delta.
    so_far = "".join(task.get("output") or "" for task in seen[0].data["tasks"])
    streamed = so_far + "".join(e.data["text"] for e in seen if e.type == "answer.delta")
    assert streamed and LONG.answer.startswith(streamed)
    with closing(PostgresStore(postgres_dsn)) as store:
        run = store.get_run(run_id)
        assert run is not None and run.status == "interrupted"
        kept = run.tasks[0].output or ""
        # What B showed is what the run kept (at least; A may have flushed more).
        assert kept.startswith(streamed) and LONG.answer.startswith(kept)
    for home in (tmp_path / "a", tmp_path / "b"):
        assert not (home / "thoughtline.db").exists()  # nothing crossed through SQLite
