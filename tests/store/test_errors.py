"""Paths that cannot hold a database give a clear error naming the path, not a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from thoughtline.errors import ConfigError
from thoughtline.store.base import StoreError
from thoughtline.store.sqlite import SQLiteStore


def test_missing_directories_are_created(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "thoughtline.db"
    SQLiteStore(path).close()
    assert path.is_file()


def test_path_is_a_directory(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    path.mkdir()
    with pytest.raises(ConfigError, match="is a directory") as raised:
        SQLiteStore(path)
    assert str(path) in str(raised.value)
    assert "THOUGHTLINE_HOME" in str(raised.value)


def test_parent_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("not a directory")
    path = blocker / "thoughtline.db"
    with pytest.raises(ConfigError) as raised:
        SQLiteStore(path)
    assert str(path) in str(raised.value)
    assert raised.value.code == "CONFIG_INVALID"


def test_not_a_database_file(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.db"
    junk = b"this is a text file, not SQLite\n" * 200
    path.write_bytes(junk)
    with pytest.raises(StoreError, match="is not a thoughtline database") as raised:
        SQLiteStore(path)
    assert str(path) in str(raised.value)
    assert raised.value.problem == "damaged"
    assert ".recover" in str(raised.value)
    assert isinstance(raised.value.__cause__, Exception)
    assert path.read_bytes() == junk


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores file permissions"
)
def test_directory_without_permission(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        path = locked / "thoughtline.db"
        with pytest.raises(ConfigError, match="writable") as raised:
            SQLiteStore(path)
        assert str(path) in str(raised.value)
    finally:
        locked.chmod(0o700)
