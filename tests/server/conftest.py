"""A real daemon on 127.0.0.1 (uvicorn in a background thread) against the provider
simulator, with THOUGHTLINE_HOME in a temporary directory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.support import LiveDaemon
from thoughtline.config import Config
from thoughtline.providers.client import RetryPolicy
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.server.app import DaemonServer
from thoughtline.server.daemon import Daemon, ServerSettings
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import SimulatorServer

StartDaemon = Callable[..., LiveDaemon]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def start_daemon(
    home: Path, sim_server: SimulatorServer, environ: dict[str, str]
) -> Iterator[StartDaemon]:
    """Start a daemon on a free loopback port; every one started is stopped at the end."""
    started: list[LiveDaemon] = []

    def start(
        env: dict[str, str] | None = None,
        config: Config | None = None,
        loop: str | None = None,
        **settings: Any,
    ) -> LiveDaemon:
        store = SQLiteStore(home / "thoughtline.db")
        runtime = Runtime(
            config=config or Config(path=None, trace_provider_raw=True),
            store=store,
            environ=environ if env is None else env,
            retry=RetryPolicy(max_retries=1, initial_delay_s=0.01, max_delay_s=0.02),
        )
        options: dict[str, Any] = {"port": 0, "keepalive_s": 15.0, "poll_s": 0.05}
        options.update(settings)
        daemon = Daemon(runtime=runtime, store=store, settings=ServerSettings(**options))
        server = (DaemonServer(daemon) if loop is None else DaemonServer(daemon, loop=loop)).start()
        live = LiveDaemon(server=server, daemon=daemon, home=home)
        started.append(live)
        return live

    yield start
    for live in started:
        live.close()


@pytest.fixture
def daemon(start_daemon: StartDaemon) -> LiveDaemon:
    return start_daemon()
