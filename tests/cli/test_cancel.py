"""Ctrl-C (SIGINT) to a real ``thoughtline run`` at several points; the store is read
directly afterwards (not through a command, which would recover what a dead process left
and hide it): no run or task is left running, and each says what really happened."""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.cli.test_run_cli import start_thoughtline
from thoughtline.config import Config
from thoughtline.store.opening import open_store
from thoughtline.testing import SimReasoning, Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

SLOW = Transcript(
    reasoning=(SimReasoning(kind="summary", text="slow thought " * 40),),
    answer="slow answer " * 60,
    chunk_chars=6,
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def _query(database: Path, sql: str, *params: str) -> list[sqlite3.Row]:
    if not database.exists():
        return []
    try:
        with sqlite3.connect(database, timeout=5) as connection:
            connection.row_factory = sqlite3.Row
            return connection.execute(sql, params).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []


def _wait_until(database: Path, sql: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _query(database, sql):
            return
        time.sleep(0.02)
    raise AssertionError(f"never true: {sql}")


def stored_reasoning(home: Path) -> str | None:
    """The run's one task's displayed reasoning, read through the store."""
    store = open_store(Config(path=None), {"THOUGHTLINE_HOME": str(home)})
    try:
        [run] = store.list_runs()
        [task] = run.tasks
        return task.reasoning
    finally:
        store.close()


def _interrupt(
    home: Path, environ: dict[str, str], when: str, *extra: str
) -> tuple[int, str, list[sqlite3.Row]]:
    database = home / "thoughtline.db"
    process = start_thoughtline(home, environ, "run", "slow", *extra)
    try:
        if when != "at once":
            _wait_until(database, when)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    tasks = _query(
        database,
        "select t.*, r.status as run_status from tasks t join runs r on r.id = t.run_id",
    )
    return process.returncode, stderr, tasks


BOTH_CALLING = "select 1 where (select count(*) from tasks where status = 'running') = 2"
ANSWERING = "select 1 from run_events where type = 'answer.delta'"
REASONING = "select 1 from run_events where type = 'reasoning.delta'"


def test_ctrl_c_before_anything_arrives_cancels_every_task(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.pace_s = 0.5  # the first byte waits
    sim.script(SLOW)
    code, stderr, tasks = _interrupt(
        home, environ, BOTH_CALLING, "--role", "engineer", "--role", "reviewer"
    )
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert [task["status"] for task in tasks] == ["cancelled", "cancelled"]
    assert {task["run_status"] for task in tasks} == {"cancelled"}
    for task in tasks:
        assert task["reasoning_status"] == "not_requested"  # hidden: nothing was asked
        assert task["started_at"] and task["finished_at"]


def test_ctrl_c_at_once_leaves_no_run_behind_running(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.pace_s = 0.05
    sim.script(SLOW)
    code, stderr, tasks = _interrupt(home, environ, "at once")
    # Python itself handles a Ctrl-C that lands while modules are still being imported:
    # 130, or the default action before it installs its handler; and landing while the
    # interpreter sets itself up (its standard streams, runpy), Python's own fatal error.
    in_python_setup = (
        code == 1
        and ("Fatal Python error" in stderr or "Could not import runpy module" in stderr)
        and stderr.rstrip().endswith("KeyboardInterrupt")
    )
    assert code in (130, -signal.SIGINT) or in_python_setup, stderr
    # Interrupted before or after the run was stored: if it was, it ended.
    for task in tasks:
        assert task["run_status"] == "cancelled"
        assert task["status"] == "cancelled"
        assert task["reasoning_status"] is not None
        assert task["finished_at"]


def test_ctrl_c_during_the_answer_says_so(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.pace_s = 0.02
    sim.script(SLOW)
    code, stderr, tasks = _interrupt(home, environ, ANSWERING, "--chain-of-thought", "surface")
    assert code == 130, stderr
    [task] = tasks
    assert task["status"] == "cancelled"
    assert task["run_status"] == "cancelled"
    assert task["reasoning_status"] == "interrupted"
    # All of it arrived before the answer (the row keeps it once, in its parts: read it
    # back as any reader does).
    assert stored_reasoning(home) == "slow thought " * 40
    notice = task["reasoning_notice"]
    assert "during the answer" in notice
    assert "during reasoning" not in notice
    assert task["output"] and ("slow answer " * 60).startswith(task["output"])
    # What happened is timed: the first reasoning and answer bytes, and the whole call.
    assert task["first_reasoning_ms"] is not None
    assert task["first_answer_ms"] is not None
    assert task["total_ms"] is not None
    assert task["started_at"] and task["finished_at"]


def test_ctrl_c_during_reasoning_says_so(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.pace_s = 0.05
    sim.script(SLOW)
    code, stderr, tasks = _interrupt(home, environ, REASONING, "--chain-of-thought", "surface")
    assert code == 130, stderr
    [task] = tasks
    assert task["status"] == "cancelled"
    assert task["reasoning_status"] == "interrupted"
    assert "cancelled during reasoning" in task["reasoning_notice"]
    assert task["first_reasoning_ms"] is not None
    assert task["total_ms"] is not None
