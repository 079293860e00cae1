"""The ``backend`` fixture runs a behavioural test against each store: SQLite in a temp
directory, and PostgreSQL in a fresh database of one throwaway cluster per session
(skipped, saying why, where no PostgreSQL server binaries are installed; scripts/check
installs them). A test on PostgreSQL is ``slow`` (it needs the cluster): ``backend``'s
PostgreSQL parameter carries the mark, and a test asking for ``postgres_dsn`` or
``postgres_cluster`` itself is marked where it is written."""

from __future__ import annotations

import gc
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.store.backends import StoreBackend
from tests.store.postgres_cluster import Cluster, find_binaries, running_cluster

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool


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
def postgres_dsn(postgres_cluster: Cluster) -> Iterator[str]:
    """A fresh, empty database of the session's cluster. A test that leaves a connection
    pool open on it fails (the pool would keep reconnecting after the cluster stops)."""
    dsn = postgres_cluster.new_database()
    yield dsn
    database = dsn.rpartition("/")[2]
    left_open = _open_pools(database)
    for pool in left_open:
        pool.close(timeout=1)
    assert not left_open, f"the test left a PostgreSQL pool open on {database}: close the store"


def _open_pools(database: str) -> list[ConnectionPool]:
    from psycopg_pool import ConnectionPool

    gc.collect()
    return [
        candidate
        for candidate in gc.get_objects()
        if isinstance(candidate, ConnectionPool)
        and not candidate.closed
        # The store names its pool "thoughtline HOST:PORT/DATABASE".
        and (candidate.name or "").endswith(f"/{database}")
    ]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreBackend]:
    if request.param == "sqlite":
        chosen = StoreBackend("sqlite", str(tmp_path / "thoughtline.db"))
    else:
        chosen = StoreBackend("postgres", request.getfixturevalue("postgres_dsn"))
    yield chosen
    chosen.close_all()
