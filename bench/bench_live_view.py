"""The terminal live view against ``--json`` on the same stream, in the same run.

A real ``thoughtline run --chain-of-thought surface`` process streams N reasoning deltas
(plus a multi-line answer) from the provider simulator (its own process on 127.0.0.1):

- *terminal*: stdout and stderr on a pseudo-terminal (120x40), read as fast as it writes,
  so the live view renders as it would for a person;
- *json*: ``--json``, stdout a pipe: no view at all, the floor.

Each contender runs ``--repeat`` times, interleaved, and keeps its best wall time (the
machine is shared). The terminal run is checked for the whole answer at the end.

    .venv/bin/python bench/bench_live_view.py [--deltas 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import NamedTuple

SIMULATOR = """
import sys
from thoughtline.testing import Simulator, SimulatorServer, SimReasoning, Transcript
deltas = int(sys.argv[1])
answer = "\\n".join(f"answer line {i:03d} of the benchmark" for i in range(200))
sim = Simulator(default_transcript=Transcript(
    reasoning=(SimReasoning(kind="raw", text="thinking, " * (deltas * 12 // 10 + 1)),),
    answer=answer, chunk_chars=12))
server = SimulatorServer(sim).start()
for name, value in server.environ().items():
    print(f"{name}={value}", flush=True)
print("ready", flush=True)
sys.stdin.read()
"""
KEY = "bench-key-0000000000"
LAST_LINE = "answer line 199 of the benchmark"


class Timing(NamedTuple):
    wall: float  # seconds
    cpu: float  # the child's user + system seconds
    output: bytes
    code: int


def finish(process: subprocess.Popen[bytes], started: float, output: bytes) -> Timing:
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return Timing(wall, usage.ru_utime + usage.ru_stime, output, process.returncode)


def run_on_pty(args: list[str], env: dict[str, str], cwd: Path) -> Timing:
    """Run ``thoughtline ARGS`` on a 120x40 pseudo-terminal, reading all it writes."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "thoughtline.cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=cwd,
    )
    os.close(slave)
    output = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer of the terminal has closed it
            break
        if not chunk:
            break
        output += chunk
    os.close(master)
    return finish(process, started, bytes(output))


def run_json(args: list[str], env: dict[str, str], cwd: Path) -> Timing:
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "thoughtline.cli", *args, "--json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    assert process.stdout is not None
    output = process.stdout.read()
    return finish(process, started, output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    simulator = subprocess.Popen(
        [sys.executable, "-c", SIMULATOR, str(options.deltas)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert simulator.stdout is not None
    sim_env: dict[str, str] = {}
    for line in simulator.stdout:
        if line.strip() == "ready":
            break
        name, _, value = line.strip().partition("=")
        sim_env[name] = value
    try:
        with tempfile.TemporaryDirectory() as scratch:
            home = Path(scratch) / "home"
            env = {key: value for key, value in os.environ.items() if "API_KEY" not in key}
            env.update(sim_env)
            env.update(
                THOUGHTLINE_HOME=str(home),
                DEEPSEEK_API_KEY=KEY,
                TERM="xterm-256color",
                OTEL_SDK_DISABLED="true",
            )
            env.pop("THOUGHTLINE_CONFIG", None)
            args = ["run", "Think at length.", "--provider", "deepseek"]
            args += ["--chain-of-thought", "surface"]
            wall = {"terminal": float("inf"), "json": float("inf")}
            cpu = dict(wall)
            for round_index in range(options.repeat):
                shown = run_on_pty(args, env, Path(scratch))
                assert shown.code == 0, shown.output[-2000:]
                assert LAST_LINE.encode() in shown.output, "the terminal lost the answer's end"
                printed = run_json(args, env, Path(scratch))
                assert printed.code == 0, printed.output[-2000:]
                assert b'"status": "completed"' in printed.output
                for name, timing in (("terminal", shown), ("json", printed)):
                    wall[name] = min(wall[name], timing.wall)
                    cpu[name] = min(cpu[name], timing.cpu)
                print(
                    f"round {round_index + 1}: terminal {shown.wall:.2f} s "
                    f"({shown.cpu:.2f} s CPU), json {printed.wall:.2f} s ({printed.cpu:.2f} s CPU)",
                    file=sys.stderr,
                )
    finally:
        assert simulator.stdin is not None
        simulator.stdin.close()
        simulator.wait(timeout=30)
    print(
        f"python {sys.version.split()[0]}; {options.deltas:,} reasoning deltas (surface), "
        f"best of {options.repeat}\n"
    )
    print("| view | wall s | vs --json | CPU s | vs --json |")
    print("|---|---:|---:|---:|---:|")
    for name, label in (("terminal", "terminal (pty 120x40)"), ("json", "--json (pipe)")):
        print(
            f"| {label} | {wall[name]:.2f} | {wall[name] / wall['json']:.2f}x "
            f"| {cpu[name]:.2f} | {cpu[name] / cpu['json']:.2f}x |"
        )


if __name__ == "__main__":
    main()
