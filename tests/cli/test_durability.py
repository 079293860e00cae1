"""Nothing that arrived is lost: real `thoughtline run` / `thoughtline serve` processes
killed with SIGKILL mid-answer, or stopped by a full disk, against the simulator; a new
process then shows exactly what had reached the store."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import httpx2
import pytest

from tests.cli.test_run_cli import cli_env, thoughtline
from tests.runtime.test_disclosure_e2e import all_bytes_under
from tests.support import assert_refusal_stdout, daemon_url, start_process
from thoughtline.testing import SimReasoning, Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

CANARY = "CANARY-HIDDEN-REASONING-9d3e"
REASONING = "First I weigh the two designs, then I pick the simpler one. "
ANSWER = "".join(f"[{n:04d}] a token bucket per client. " for n in range(400))
SLOW = Transcript(
    reasoning=(SimReasoning(kind="raw", text=REASONING),),
    answer=ANSWER,
    chunk_chars=8,
)
PACE_S = 0.01  # per frame: the answer alone takes tens of seconds, the kill lands mid-way


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def _log(database: Path, run_id: str | None = None) -> list[tuple[str, str, str | None, str]]:
    """(run_id, type, task_id, text) of the run event log, read like any other process."""
    if not database.exists():
        return []
    try:
        with closing(sqlite3.connect(database, timeout=5)) as conn:
            rows = conn.execute(
                "SELECT run_id, type, task_id, data_json FROM run_events "
                "WHERE (? IS NULL OR run_id = ?) ORDER BY run_id, seq",
                (run_id, run_id),
            ).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []
    deltas = []
    for run, type_, task, data in rows:
        fields = json.loads(data)
        # Consecutive deltas of a task share a record ({"texts": [...]}): one entry each.
        for text in fields.get("texts", [fields.get("text")]):
            deltas.append((run, type_, task, text))
    return deltas


def _wait_for_answer_deltas(database: Path, count: int) -> str:
    """Poll the store (bounded) until a run logged ``count`` answer deltas; its id."""
    for _ in range(600):
        runs = [run for run, type_, _, _ in _log(database) if type_ == "answer.delta"]
        if len(runs) >= count:
            return runs[0]
        time.sleep(0.05)
    raise AssertionError(f"no run logged {count} answer deltas")


def _full_id(database: Path, short_id: str) -> str:
    """The whole id of the run a message names by its short id."""
    with closing(sqlite3.connect(database)) as conn:
        (found,) = conn.execute(
            "SELECT id FROM runs WHERE substr(id, 1, ?) = ?",
            (len(short_id) + 4, f"run_{short_id}"),
        ).fetchall()
    return str(found[0])


def _joined(database: Path, run_id: str, type_: str) -> str:
    return "".join(text or "" for _, kind, _, text in _log(database, run_id) if kind == type_)


def _kill(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


def _status(home: Path, environ: dict[str, str], run_id: str) -> dict[str, object]:
    result = thoughtline(home, environ, "status", run_id, "--json")
    assert result.returncode == 0, result.stderr
    snapshot: dict[str, object] = json.loads(result.stdout)
    return snapshot


def _start_cli_run(home: Path, environ: dict[str, str], mode: str) -> subprocess.Popen[str]:
    return start_process(
        [sys.executable, "-m", "thoughtline.cli", "run", "Design a rate limiter.",
         "--provider", "deepseek", "--chain-of-thought", mode, "--json"],
        env=cli_env(home, environ),
        cwd=home.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip


def _assert_kept_what_arrived(task: dict[str, object], answer: str) -> None:
    assert task["status"] == "interrupted"
    assert task["output"] == answer
    assert isinstance(answer, str) and 0 < len(answer) < len(ANSWER)
    assert ANSWER.startswith(answer)
    notice = str(task["reasoning_notice"])
    assert notice.startswith("The process running this task stopped (process ")
    assert (
        f"the {len(answer)} characters of answer that reached the store before it are kept"
        in notice
    )
    error = task["error"]
    assert isinstance(error, dict) and error["code"] == "RUN_INTERRUPTED"


def test_killed_cli_run_keeps_the_answer_and_displayed_reasoning_that_arrived(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(SLOW)
    sim.pace_s = PACE_S
    process = _start_cli_run(home, environ, "surface")
    try:
        run_id = _wait_for_answer_deltas(home / "thoughtline.db", 5)
        _kill(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    database = home / "thoughtline.db"
    answer = _joined(database, run_id, "answer.delta")
    reasoning = _joined(database, run_id, "reasoning.delta")

    snapshot = _status(home, environ, run_id)  # a new process: recovery runs here

    assert snapshot["status"] == "interrupted"
    (task,) = snapshot["tasks"]  # type: ignore[misc]
    _assert_kept_what_arrived(task, answer)
    # All of the reasoning streamed before the answer began, so all of it arrived.
    assert reasoning == REASONING
    assert task["reasoning"] == reasoning
    assert task["reasoning_status"] == "interrupted"
    assert f"so are the {len(reasoning)} characters of reasoning" in task["reasoning_notice"]
    # Every surface reads the same rows: the run list too.
    listed = thoughtline(home, environ, "runs", "--json")
    assert json.loads(listed.stdout)[0]["tasks"][0]["output"] == answer


def test_killed_hidden_run_keeps_the_answer_and_no_reasoning_anywhere(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    # DeepSeek reasons (and returns it) even when nothing was requested.
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="raw", text=f"Secret thought {CANARY}."),),
            answer=ANSWER,
            chunk_chars=8,
        )
    )
    sim.pace_s = PACE_S
    process = _start_cli_run(home, environ, "hidden")
    try:
        run_id = _wait_for_answer_deltas(home / "thoughtline.db", 5)
        _kill(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    database = home / "thoughtline.db"
    answer = _joined(database, run_id, "answer.delta")
    assert _joined(database, run_id, "reasoning.delta") == ""

    snapshot = _status(home, environ, run_id)

    (task,) = snapshot["tasks"]  # type: ignore[misc]
    _assert_kept_what_arrived(task, answer)
    assert (task["reasoning"], task["reasoning_parts"]) == (None, None)
    assert task["reasoning_status"] == "not_requested"
    assert "reasoning" not in str(task["reasoning_notice"]).replace(
        "reasoning was not requested", ""
    )
    assert CANARY not in json.dumps(snapshot)
    assert CANARY.encode() not in all_bytes_under(home)


def _serve(home: Path, environ: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
    )
    return process, daemon_url(process)


@contextmanager
def _daemon(home: Path, environ: dict[str, str]) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process, url = _serve(home, environ)
    try:
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_killed_daemon_run_is_shown_with_what_arrived_by_a_new_daemon_and_the_cli(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(SLOW)
    sim.pace_s = PACE_S
    with (
        _daemon(home, environ) as (process, url),
        httpx2.Client(base_url=url, timeout=20) as client,
    ):
        response = client.post(
            "/v1/runs",
            json={"request": "Design it.", "provider": "deepseek", "chain_of_thought": "surface"},
        )
        assert response.status_code == 202, response.text
        run_id = response.json()["id"]
        assert _wait_for_answer_deltas(home / "thoughtline.db", 5) == run_id
        _kill(process)
    database = home / "thoughtline.db"
    answer = _joined(database, run_id, "answer.delta")
    reasoning = _joined(database, run_id, "reasoning.delta")

    with (
        _daemon(home, environ) as (process, url),
        httpx2.Client(base_url=url, timeout=20) as client,
    ):
        served = client.get(f"/v1/runs/{run_id}").json()
        listed = client.get("/v1/runs").json()["runs"]
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    snapshot = _status(home, environ, run_id)

    assert served == snapshot
    assert [run["id"] for run in listed] == [run_id]
    assert listed[0]["tasks"] == snapshot["tasks"]
    assert snapshot["status"] == "interrupted"
    (task,) = snapshot["tasks"]  # type: ignore[misc]
    _assert_kept_what_arrived(task, answer)
    assert task["reasoning"] == reasoning == REASONING


# -- a full disk ---------------------------------------------------------------------
# The run's process sees a database that may grow only a little (PRAGMA max_page_count):
# SQLite refuses the write that would exceed it with SQLITE_FULL, as on a full disk.
FULL_AFTER_PAGES = """
import sys
from thoughtline.store import sqlite as store_sqlite
from thoughtline.cli import main

extra_pages = int(sys.argv.pop(1))
opened = store_sqlite.SQLiteStore._open


def _open_with_little_room(self):
    conn = opened(self)
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + extra_pages}")
    return conn


store_sqlite.SQLiteStore._open = _open_with_little_room
sys.argv[0] = "thoughtline"
main()
"""

BIG = Transcript(answer="".join(f"<{n:05d}> " for n in range(30_000)), chunk_chars=64)


def _assert_one_final_line(stderr: str, *needles: str) -> None:
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("thoughtline: "), stderr
    for needle in needles:
        assert needle in lines[0], stderr


@pytest.mark.parametrize("mode", ["--json", "--plain"])
def test_a_full_database_mid_run_ends_with_one_line_and_keeps_what_was_written(
    home: Path, sim: Simulator, environ: dict[str, str], mode: str
) -> None:
    sim.script(BIG)
    sim.pace_s = 0.002  # small batches of deltas, so some fit before the limit
    assert thoughtline(home, environ, "runs").returncode == 0  # the store exists
    args = ["run", "Write a lot.", "--provider", "deepseek"] + ([mode] if mode == "--json" else [])
    result = subprocess.run(
        [sys.executable, "-c", FULL_AFTER_PAGES, "40", *args],
        capture_output=True,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
        timeout=120,
        check=False,
    )

    assert result.returncode == 2, result.stderr
    database = home / "thoughtline.db"
    # Piped, progress lines come first on stderr; the last line says why the run stopped.
    last = result.stderr if mode == "--json" else result.stderr.strip().splitlines()[-1]
    assert "Traceback" not in result.stderr
    _assert_one_final_line(last, "is full", str(database), "thoughtline status ")
    if mode == "--json":  # piped, the answer so far streamed to stdout
        assert_refusal_stdout(result.stdout, result.stderr, args)
    short_id = result.stderr.rsplit("thoughtline status ", 1)[1].strip()
    run_id = _full_id(database, short_id)
    answer = _joined(database, run_id, "answer.delta")
    assert answer and BIG.answer.startswith(answer) and len(answer) < len(BIG.answer)

    snapshot = _status(home, environ, run_id)  # the disk has room again: recovery marks it
    assert snapshot["status"] == "interrupted"
    (task,) = snapshot["tasks"]  # type: ignore[misc]
    assert task["output"] == answer
    with closing(sqlite3.connect(database)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


PLAN_OF_TWO = """
request = "Write a lot."
chain_of_thought = "surface"

[[task]]
name = "first"
role = "engineer"
provider = "deepseek"

[[task]]
name = "second"
role = "reviewer"
provider = "deepseek"
after = ["first"]
"""


def test_a_disk_that_fills_mid_run_tells_one_story_from_the_run_to_its_recovery(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    # The first task's answer fills the database; the second has not started. What the
    # run says as it stops and what recovery keeps later must be the same story.
    sim.script(BIG)
    sim.pace_s = 0.002
    assert thoughtline(home, environ, "runs").returncode == 0
    plan = home.parent / "plan.toml"
    plan.write_text(PLAN_OF_TWO)
    result = subprocess.run(
        [sys.executable, "-c", FULL_AFTER_PAGES, "40", "run", "--plan", str(plan)],
        capture_output=True,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    _assert_one_final_line(lines[-1], "is full", "thoughtline status ")
    short_id = lines[-1].rsplit("thoughtline status ", 1)[1].strip()
    run_id = _full_id(home / "thoughtline.db", short_id)
    # As it stops: interrupted because the store failed; never "done" or "completed".
    told = {line.split()[1]: line for line in lines if line.startswith("task ") and "—" in line}
    assert set(told) == {"first", "second"}, lines
    assert f"run {short_id} interrupted" in lines
    assert not any("completed" in line or " done " in line for line in lines[:-1]), lines
    for line in told.values():
        assert " interrupted — " in line
        assert "the store could not be written (its disk is full)" in line
    assert "reasoning not_applicable" in told["second"]
    assert "before this task started" in told["second"]

    # Later, with room again: recovery keeps what reached the store and says the same.
    snapshot = _status(home, environ, run_id)
    assert snapshot["status"] == "interrupted"
    first, second = snapshot["tasks"]  # type: ignore[misc]
    answer = _joined(home / "thoughtline.db", run_id, "answer.delta")
    assert answer and BIG.answer.startswith(answer)
    assert (first["status"], first["reasoning_status"]) == ("interrupted", "interrupted")
    assert first["output"] == answer
    assert (
        f"the {len(answer)} characters of answer that reached the store"
        in (first["reasoning_notice"])
    )
    assert (second["status"], second["reasoning_status"]) == ("interrupted", "not_applicable")
    assert second["output"] is None
    assert "before this task started" in second["reasoning_notice"]


@contextmanager
def _small_tmpfs(directory: Path, size: str) -> Iterator[Path]:
    directory.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)


@pytest.mark.skipif(
    shutil.which("mount") is None or not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="mounting a small tmpfs needs root",
)
def test_a_really_full_disk_mid_run_ends_with_one_line_and_stays_readable(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(BIG)
    # Paced, so the answer arrives (and is committed) piece by piece until the disk is
    # full; sent all at once it could reach the store as one transaction too big to fit.
    sim.pace_s = 0.001
    with _small_tmpfs(tmp_path / "disk", "1m") as disk:
        home = disk / "home"
        spare = disk / "spare"
        spare.write_bytes(b"\0" * 256 * 1024)  # freed below, so the disk has room again
        result = thoughtline(
            home, environ, "run", "Write a lot.", "--provider", "deepseek", "--json"
        )

        assert result.returncode == 2, result.stderr
        assert_refusal_stdout(result.stdout, result.stderr, ["--json"])
        _assert_one_final_line(result.stderr, str(home / "thoughtline.db"))
        assert "full" in result.stderr or "disk I/O error" in result.stderr
        run_id = _log(home / "thoughtline.db")[0][0]
        answer = _joined(home / "thoughtline.db", run_id, "answer.delta")
        assert answer and BIG.answer.startswith(answer)

        # Still full: reading works, and says why the run could not be marked yet.
        still_full = thoughtline(home, environ, "status", run_id, "--json")
        assert still_full.returncode == 0, still_full.stderr
        assert json.loads(still_full.stdout)["id"] == run_id
        assert "Traceback" not in still_full.stderr

        # Room again: the next process marks it interrupted with what arrived.
        spare.unlink()
        snapshot = _status(home, environ, run_id)
        assert snapshot["status"] == "interrupted"
        (task,) = snapshot["tasks"]  # type: ignore[misc]
        assert task["output"] == answer
