"""``thoughtline simulate``: the provider simulator in the foreground, to try the CLI offline.

It prints the ``export`` lines that point every built-in endpoint at it (and give the
endpoints that need one a key that is not a credential), then serves until Ctrl-C. The
providers are simulated; the wire protocols are the real ones, so ``thoughtline run`` in
another terminal goes through its real adapters, disclosure gate, store and trace.
"""

from __future__ import annotations

import errno
import os
import shlex
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from thoughtline.errors import ThoughtlineError
from thoughtline.providers.endpoints import BUILTIN_ENDPOINTS

if TYPE_CHECKING:
    from thoughtline.testing import SimulatorServer
    from thoughtline.testing.replay import SimScript

DEFAULT_PORT = 8799
SIMULATED_KEY = "simulated-key-not-a-credential"


def export_lines(url: str) -> list[str]:
    """``export NAME=VALUE`` for each base URL the simulator answers, then a key for
    each endpoint that needs one (a real key is never sent to the simulator)."""
    from thoughtline.testing.profiles import default_profiles

    lines: list[str] = []
    keys: list[str] = []
    for name, profile in default_profiles().items():
        if not profile.base_url_env:
            continue
        lines.append(f"export {profile.base_url_env}={shlex.quote(url + profile.base_path)}")
        spec = BUILTIN_ENDPOINTS.get(name)
        if spec is not None and spec.key_required and spec.api_key_env:
            keys.append(f"export {spec.api_key_env}={SIMULATED_KEY}")
    return lines + keys


def commands_to_try() -> list[str]:
    """Three commands worth running against the simulator, as a person would type them."""
    return [
        'thoughtline run "Why is the sky blue?" --chain-of-thought surface',
        'thoughtline run "Plan a cache" -r architect -r reviewer -p deepseek',
        "thoughtline trace latest",
    ]


@click.command("simulate")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port on 127.0.0.1 to serve (0: any free port).",
)
@click.option(
    "--env",
    "env_only",
    is_flag=True,
    help="Print only the export lines for a simulator on --port, and start nothing.",
)
@click.option(
    "--script",
    "script_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Replay the conversation in this TOML file (one [[turn]] per model turn: "
    "reasoning, tool_calls, answer) instead of the default model.",
)
def simulate_command(port: int, env_only: bool, script_path: Path | None) -> None:
    """The simulated providers on 127.0.0.1, in the foreground until Ctrl-C.

    First the export lines to paste into another terminal (or eval "$(thoughtline
    simulate --env)" there), then what to try; no network, no key, no cost."""
    if env_only:
        if port == 0:
            raise click.UsageError("--env needs the port the simulator serves; give --port N.")
        click.echo("\n".join(export_lines(f"http://127.0.0.1:{port}")))
        return
    from thoughtline.testing import Simulator, SimulatorServer
    from thoughtline.testing.replay import load_script

    # A bad script is refused before anything is served.
    replay = None if script_path is None else load_script(script_path)
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    # Set before the server starts: a Ctrl-C at any moment from here on is a clean stop.
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    server = SimulatorServer(Simulator(replay=replay), port=port)
    try:
        _start(server, port)
        _say_how_to_use(server.url, replay)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _say_how_to_use(url: str, replay: SimScript | None) -> None:
    """The export lines, then what to try, flushed at once; a reader that went away
    (``| head -3``) leaves the simulator serving."""
    replaying = []
    if replay is not None:
        count = len(replay.turns)
        replaying.append(
            f"# Replaying {replay.source} ({count} turn{'' if count == 1 else 's'}): each "
            "conversation gets its turns in order."
        )
    lines = [
        *export_lines(url),
        *replaying,
        f"# Simulated providers on {url}: paste the lines above into another terminal, then try:",
        *(f"#   {command}" for command in commands_to_try()),
        "# Ctrl-C stops the simulator.",
    ]
    try:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)  # the interpreter's last flush too
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _start(server: SimulatorServer, port: int) -> None:
    try:
        server.start()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ThoughtlineError(
                "SERVE_BIND_FAILED",
                f"Port {port} on 127.0.0.1 is in use; give another with --port N "
                "(--port 0 takes any free one).",
            ) from None
        raise ThoughtlineError(
            "SERVE_BIND_FAILED", f"Cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}."
        ) from None
