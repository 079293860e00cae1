"""A throwaway PostgreSQL cluster on 127.0.0.1 for the tests: ``initdb`` into a temp
directory, ``pg_ctl start`` on a free port (trust authentication, no fsync), a fresh
database per test, ``pg_ctl stop -m immediate`` at the end.

The server binaries come from PATH or the distribution's packages
(``/usr/lib/postgresql/<version>/bin``, which ``scripts/check`` installs when missing).
PostgreSQL refuses to run as root, so as root the cluster belongs to ``nobody``.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SERVER_USER = "nobody"
"""Who runs the server when the tests run as root."""


def find_binaries() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or ``None``."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda path: int(Path(path).parent.parent.name),
        reverse=True,
    )
    return Path(candidates[0]).parent if candidates else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Cluster:
    """A running cluster; :meth:`new_database` hands out fresh databases."""

    root: Path
    binaries: Path
    port: int
    _names: Iterator[int]
    durable: bool = False

    @property
    def data(self) -> Path:
        return self.root / "data"

    def dsn(self, dbname: str = "postgres", *, password: str | None = None) -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://postgres{secret}@127.0.0.1:{self.port}/{dbname}"

    def new_database(self) -> str:
        """A new, empty database; its connection string."""
        import psycopg

        name = f"test_{next(self._names)}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE template0 STRATEGY FILE_COPY")
        return self.dsn(name)

    def pg_ctl(self, *args: str) -> None:
        _as_server_user([str(self.binaries / "pg_ctl"), "-D", str(self.data), *args])

    def start(self) -> None:
        # Tests trade durability for speed; a benchmark measures what a server pays.
        speed = (
            ""
            if self.durable
            else ("-c fsync=off -c synchronous_commit=off -c full_page_writes=off ")
        )
        self.pg_ctl(
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-o",
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' "
            f"{speed}-c max_connections=300",
            "start",
        )

    def stop(self, mode: str = "immediate") -> None:
        """``immediate`` loses commits not yet written (synchronous_commit is off): fine
        for a cluster thrown away, not for one started again (use ``fast``)."""
        self.pg_ctl("-m", mode, "stop")


def _as_server_user(command: list[str]) -> None:
    if os.geteuid() == 0:
        command = ["runuser", "-u", SERVER_USER, "--", *command]
    subprocess.run(command, check=True, capture_output=True, timeout=120)


@contextmanager
def running_cluster(binaries: Path, *, durable: bool = False) -> Iterator[Cluster]:
    # Not under pytest's tmp_path: the server user must reach it (root's is 0700).
    root = Path(tempfile.mkdtemp(prefix="thoughtline-pg-"))
    root.chmod(0o755)
    if os.geteuid() == 0:
        server = pwd.getpwnam(SERVER_USER)
        os.chown(root, server.pw_uid, server.pw_gid)
    cluster = Cluster(
        root=root, binaries=binaries, port=free_port(), _names=itertools.count(), durable=durable
    )
    try:
        _as_server_user(
            [
                str(binaries / "initdb"),
                "-D",
                str(cluster.data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]
        )
        cluster.start()
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def database_for_bench(dsn: str | None, *, durable: bool = True) -> Iterator[str | None]:
    """A benchmark's database: ``dsn`` when given, else a new one on a throwaway cluster
    (``durable``: fsync on, as a server runs); ``None`` when no server binaries are
    installed."""
    if dsn is not None:
        yield dsn
        return
    binaries = find_binaries()
    if binaries is None:
        yield None
        return
    with running_cluster(binaries, durable=durable) as cluster:
        yield cluster.new_database()


@contextmanager
def required_database_for_bench(dsn: str | None, *, durable: bool = True) -> Iterator[str]:
    """:func:`database_for_bench`, ending the benchmark with a sentence when there is none."""
    with database_for_bench(dsn, durable=durable) as found:
        if found is None:
            raise SystemExit("no PostgreSQL server binaries: install postgresql or pass --dsn")
        yield found
