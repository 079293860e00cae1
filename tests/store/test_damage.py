"""A damaged database: every command says so in one sentence naming the file and what to
do, exits 2, and leaves the file byte for byte as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.store.builders import make_event, make_run
from tests.support import assert_refusal_stdout
from thoughtline.store import _sqlite_connection as sqlite_connection
from thoughtline.store.base import StoreError
from thoughtline.store.sqlite import SQLiteStore

pytestmark = pytest.mark.slow  # every command, as a process, on a damaged file

PAGE = 4096


def _garbage(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(range(256)) * 80)


def _overwritten_mid_file(path: Path) -> None:
    """A real store whose middle pages were overwritten (a bad sector, a stray write)."""
    with SQLiteStore(path) as store:
        for n in range(30):
            run = make_run(f"run_{n:03d}", status="completed", tasks=2)
            for task in run.tasks:
                task.status, task.output = "done", f"answer {n} " * 300
            store.create_run(run)
            store.append_trace(
                [make_event(run.id, metadata={"text": "t" * 2000}) for _ in range(4)]
            )
    data = bytearray(path.read_bytes())
    middle = len(data) // PAGE // 2
    data[middle * PAGE : (middle + 2) * PAGE] = b"\x5a" * (2 * PAGE)
    path.write_bytes(bytes(data))


COMMANDS = [
    ("status",),
    ("status", "--json"),
    ("runs", "--json"),
    ("trace", "run_001"),
    ("purge",),
    ("run", "Hello.", "--worker-backend", "inline"),
    ("run", "-c", "Hello."),
    ("runs", "--conversation", "latest", "--json"),
    ("serve", "--port", "0"),
    ("mcp",),
    ("acp",),
]


@pytest.mark.parametrize("damage", [_garbage, _overwritten_mid_file], ids=["garbage", "pages"])
def test_every_command_reports_a_damaged_file_and_leaves_it_alone(
    tmp_path: Path, damage: object
) -> None:
    home = tmp_path / "home"
    database = home / "thoughtline.db"
    damage(database)  # type: ignore[operator]
    before = database.read_bytes()
    files_before = sorted(path.name for path in home.iterdir())
    env = {key: value for key, value in os.environ.items() if key != "THOUGHTLINE_CONFIG"}
    env["THOUGHTLINE_HOME"] = str(home)

    for command in COMMANDS:
        result = subprocess.run(
            [sys.executable, "-m", "thoughtline.cli", *command],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )
        assert result.returncode == 2, (command, result.stderr)
        assert "Traceback" not in result.stderr, command
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (command, result.stderr)
        assert lines[0].startswith(f"thoughtline: {database} is not a thoughtline database") or (
            lines[0].startswith(f"thoughtline: The thoughtline database {database} is damaged")
        ), (command, lines[0])
        assert "move it aside" in lines[0] and "restore it from a backup" in lines[0]
        assert f"sqlite3 {database} .recover" in lines[0]
        assert_refusal_stdout(result.stdout, result.stderr, command)
        assert database.read_bytes() == before, command
        assert sorted(path.name for path in home.iterdir()) == files_before, command


def _read_everything(store: SQLiteStore) -> None:
    for run in store.list_runs(limit=100):
        store.trace(run.id)


def test_damage_found_after_opening_is_one_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "thoughtline.db"
    _overwritten_mid_file(path)
    before = path.read_bytes()
    # A file too large to check within the budget is opened unchecked ...
    monkeypatch.setattr(sqlite_connection, "check_integrity", lambda conn, path: None)
    store = SQLiteStore(path)
    try:
        # ... and the damaged page, once read, is reported like damage found on opening.
        with pytest.raises(StoreError, match="is damaged") as raised:
            _read_everything(store)
        assert raised.value.problem == "damaged"
        assert str(path) in raised.value.message
    finally:
        store.close()
    assert path.read_bytes() == before


def test_a_sound_file_passes_the_check(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    with SQLiteStore(path) as store:
        store.create_run(make_run("run_ok"))
    with SQLiteStore(path) as store:
        assert store.get_run("run_ok") is not None
