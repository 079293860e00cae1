"""Files under THOUGHTLINE_HOME are private whatever the umask: processes run with umask
022 (the usual default, which would make new files world-readable)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.cli.test_providers_refresh import BUDGET_ONLY
from tests.conftest import CANARY_KEY
from thoughtline.testing import Simulator

pytestmark = [
    pytest.mark.slow,  # file modes read from a process under another umask
    pytest.mark.skipif(os.name != "posix", reason="POSIX file modes"),
]

# Opens the store while a run is being written, and reports the modes of every file then
# (the -wal and -shm files exist only while a connection is open).
REPORT_MODES = """
import json, stat, sys
from pathlib import Path
from tests.store.builders import make_run
from thoughtline.store.sqlite import SQLiteStore

database = Path(sys.argv[1])
with SQLiteStore(database) as store:
    store.create_run(make_run("run_private"))
    files = [database.parent, database, *database.parent.glob("thoughtline.db-*")]
    print(json.dumps({path.name: stat.S_IMODE(path.stat().st_mode) for path in files}))
"""


def _modes(database: Path) -> dict[str, int]:
    result = subprocess.run(
        [sys.executable, "-c", REPORT_MODES, str(database)],
        capture_output=True,
        text=True,
        umask=0o022,
        cwd=Path(__file__).parents[2],
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    modes: dict[str, int] = json.loads(result.stdout)
    return modes


def test_a_new_home_and_database_are_private(tmp_path: Path) -> None:
    home = tmp_path / "made" / "by" / "thoughtline"
    modes = _modes(home / "thoughtline.db")
    assert modes == {
        "thoughtline": 0o700,
        "thoughtline.db": 0o600,
        "thoughtline.db-wal": 0o600,
        "thoughtline.db-shm": 0o600,
    }
    # Only the home itself is thoughtline's; parents are ordinary directories.
    assert stat.S_IMODE((tmp_path / "made").stat().st_mode) == 0o755


def test_an_existing_database_is_made_private_but_not_its_chosen_home(tmp_path: Path) -> None:
    home = tmp_path / "shared"
    home.mkdir()
    home.chmod(0o755)  # chosen by the user: left as it is
    database = home / "thoughtline.db"
    # A database (and its -wal/-shm, kept by an open connection) created world-readable.
    old_umask = os.umask(0o022)
    try:
        holder = sqlite3.connect(database, isolation_level=None)
        holder.execute("PRAGMA journal_mode = WAL")
        holder.execute("CREATE TABLE t (x)")
        holder.execute("INSERT INTO t VALUES (1)")
    finally:
        os.umask(old_umask)
    with closing(holder):
        for name in ("thoughtline.db", "thoughtline.db-wal", "thoughtline.db-shm"):
            assert stat.S_IMODE((home / name).stat().st_mode) == 0o644, name

        modes = _modes(database)

    assert modes == {
        "shared": 0o755,
        "thoughtline.db": 0o600,
        "thoughtline.db-wal": 0o600,
        "thoughtline.db-shm": 0o600,
    }


def test_the_capability_cache_is_private(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    sim.anthropic_models = {"claude-sonnet-4-6": BUDGET_ONLY}
    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "providers", "--refresh"],
        capture_output=True,
        text=True,
        env={**os.environ, **environ, "THOUGHTLINE_HOME": str(home)},
        umask=0o022,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert CANARY_KEY not in result.stdout + result.stderr
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "capabilities.json").stat().st_mode) == 0o600
    assert sorted(path.name for path in home.iterdir()) == ["capabilities.json"]
