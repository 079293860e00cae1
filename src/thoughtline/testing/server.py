"""The simulator served over HTTP: uvicorn on 127.0.0.1 in a background thread, with
the base URLs that point endpoints at each simulated provider."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

from thoughtline.testing.simulator import Simulator

__all__ = ["SimulatorServer"]


class SimulatorServer:
    """Serves a :class:`Simulator` with uvicorn on 127.0.0.1 and a free port (or
    ``port``), in a background thread. Use as a context manager, or call
    :meth:`start`/:meth:`stop`. A port in use fails :meth:`start` with ``OSError``."""

    def __init__(
        self, simulator: Simulator | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.simulator = simulator or Simulator()
        self.host = host
        self._wanted_port = port
        self.port: int | None = None
        self._thread: threading.Thread | None = None
        self._server: Any = None
        self._started = threading.Event()
        self._failure: BaseException | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the simulator server is not running; call start() first")
        return f"http://{self.host}:{self.port}"

    def base_url_for(self, profile: str) -> str:
        """The base URL an endpoint should use to reach the simulated ``profile``."""
        return self.url + self.simulator.profiles[profile].base_path

    def environ(self) -> dict[str, str]:
        """Base-URL environment variables pointing every built-in endpoint here."""
        return {
            profile.base_url_env: self.base_url_for(name)
            for name, profile in self.simulator.profiles.items()
            if profile.base_url_env
        }

    def start(self, timeout_s: float = 10.0) -> SimulatorServer:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((self.host, self._wanted_port))
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.simulator,
            log_level="critical",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        server = uvicorn.Server(config)
        self._server = server

        def serve() -> None:
            try:
                asyncio.run(server.serve(sockets=[sock]))
            except BaseException as exc:  # reported to the starting thread
                self._failure = exc
            finally:
                self._started.set()
                sock.close()

        self._thread = threading.Thread(target=serve, name="thoughtline-simulator", daemon=True)
        self._thread.start()
        waited = 0.0
        while not server.started and waited < timeout_s:
            if self._failure is not None or not self._thread.is_alive():
                break
            self._started.wait(0.01)
            waited += 0.01
        if not server.started:
            self.stop()
            raise RuntimeError(f"the simulator server did not start: {self._failure!r}")
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._thread = None

    def __enter__(self) -> SimulatorServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
