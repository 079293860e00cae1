"""A finished run's frames, kept in memory for late subscribers, hold its displayed
reasoning: they are never kept longer than the reasoning retention keeps it stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from thoughtline.config import Config
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.server.daemon import Daemon, ServerSettings
from thoughtline.server.events import DEFAULT_RETAIN_S
from thoughtline.store.sqlite import SQLiteStore


@pytest.mark.parametrize(
    ("retention", "kept_s"),
    [({}, DEFAULT_RETAIN_S), ({"reasoning": "20s"}, 20), ({"reasoning": "30d"}, DEFAULT_RETAIN_S)],
)
def test_finished_runs_are_kept_no_longer_than_their_reasoning(
    tmp_path: Path, retention: dict[str, str], kept_s: float
) -> None:
    store = SQLiteStore(tmp_path / "thoughtline.db")
    runtime = Runtime(config=Config(path=None, retention=retention), store=store, environ={})
    daemon = Daemon(runtime=runtime, store=store, settings=ServerSettings(port=0))
    assert daemon.hub.retained.max_age_s == kept_s
    store.close()
