"""The ``backend`` fixture runs a behavioural test against each store: SQLite in a temp
directory, and PostgreSQL in a fresh database of one throwaway cluster per session
(skipped, saying why, where no PostgreSQL server binaries are installed; scripts/check
installs them). Tests on PostgreSQL are marked ``slow`` (they need the cluster), and so
are those of ``thoughtline store migrate`` (each runs commands as processes)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store.backends import StoreBackend
from tests.store.postgres_cluster import Cluster, find_binaries, running_cluster


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("backend") == "postgres"
        fixtures = getattr(item, "fixturenames", ())
        runs_commands = item.nodeid.startswith("tests/store/test_store_migrate.py")
        if on_postgres or runs_commands or {"postgres_dsn", "postgres_cluster"} & set(fixtures):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("psycopg is not installed: pip install 'thoughtline[postgres]'")
    binaries = find_binaries()
    if binaries is None:
        pytest.skip(
            "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in "
            "/usr/lib/postgresql/*/bin; install the distribution's postgresql package"
        )
    with running_cluster(binaries) as cluster:
        yield cluster


@pytest.fixture
def postgres_dsn(postgres_cluster: Cluster) -> str:
    """A fresh, empty database of the session's cluster."""
    return postgres_cluster.new_database()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> StoreBackend:
    if request.param == "sqlite":
        return StoreBackend("sqlite", str(tmp_path / "thoughtline.db"))
    dsn: str = request.getfixturevalue("postgres_dsn")
    return StoreBackend("postgres", dsn)
