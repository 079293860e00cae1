"""The gateway's cost on a streamed Chat Completions call, against the same client
calling the simulator directly, in one invocation.

The simulator runs in a process of its own, streaming ``--deltas`` answer deltas of a
DeepSeek model one every ``--pace`` seconds; ``thoughtline serve`` (gateway on, one
``hidden`` client) runs in another, its upstream the simulator. The official ``openai``
SDK in this process streams ``--calls`` calls each way, in turn (the order rotated at
each turn, so that no path always follows the same one):

- *direct*: ``base_url`` the simulator's DeepSeek endpoint;
- *gateway*: ``base_url`` the daemon's ``/openai/v1``, ``model`` ``deepseek/…``;
- *litellm*: ``base_url`` LiteLLM's proxy (``litellm --config``, on loopback, in a
  process of its own), its one model entry an ``openai/…`` model whose ``api_base`` is
  the simulator's DeepSeek endpoint (the config is written to a temporary directory; the
  cost map is LiteLLM's local copy, so nothing leaves the machine). Skipped, with the
  reason printed, when ``litellm[proxy]`` (the ``bench`` extra) is not installed.

Reported: time to the first content chunk (median, p99); the delay of each delta, from
the simulator's handing it to its server to write (stamped in the simulator's process,
on the monotonic clock all processes share) to the client's reading of the same text, on every path (median, p99), and what
the gateway adds to it (the path's figure less the direct call's); and the daemon's CPU
time per delta of the upstream stream (its threads' time on a CPU, to the nanosecond, from ``/proc``, over the
gateway's calls only: parsing, the run, its store writes, the gate and the render), and
the same for LiteLLM's proxy process. (The delay is not taken as the difference between
two calls' arrival times since each call's start: the simulator's pacing of one stream
drifts from the next by tens of milliseconds over 200 deltas on a loaded machine, which
that comparison counted as the gateway's.)

``--against DIR`` adds a second daemon run from ``DIR/src`` (``git archive COMMIT src |
tar -x -C DIR``), path ``before``: two commits of the gateway in one invocation.

``--profile FILE`` runs the ``gateway`` daemon under :mod:`cProfile` on the thread CPU
clock, from the end of the unmeasured first call to the daemon's end, writes the stats
to ``FILE`` (for :mod:`pstats`) and prints the functions that cost most of their own
time, per delta. The profiler's own cost lands on that daemon's CPU figures: they are
not comparable with a run without it.

    .venv/bin/python bench/bench_gateway.py [--calls 20] [--deltas 200] [--pace 0.005]
        [--against DIR] [--profile FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import pstats
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx2
import openai

from fresh_rounds import simulator_process
from thoughtline.config.gateway import new_token, token_digest

SIMULATOR = """
import json, re, sys, time
from thoughtline.testing import Simulator, SimulatorServer, Transcript
deltas = int(sys.argv[2])
# Each delta differs from the one before: LiteLLM's proxy ends a stream that repeats
# one chunk 100 times as a model stuck in a loop.
sim = Simulator(pace_s=float(sys.argv[1]), default_transcript=Transcript(
    answer="".join(f"{n % 10000:04d} " for n in range(deltas)), chunk_chars=CHUNK))
stamps = open(sys.argv[3], "a", buffering=1)
answer_delta = re.compile(rb'"content": ?"[0-9]{4} "')
respond = Simulator.__call__
async def stamped(self, scope, receive, send):
    # When each answer delta of a call is handed to the server to write (before the
    # write: a write that wakes the reader may let it run first), by the call's mark.
    mark = None
    async def hear():
        nonlocal mark
        message = await receive()
        if found := re.search(rb"call-[0-9]+", message.get("body", b"")):
            mark = found.group().decode()
        return message
    async def write(message):
        if mark and answer_delta.search(message.get("body", b"")):
            stamps.write(f"{mark}\\t{time.monotonic()}\\n")
        await send(message)
    await respond(self, scope, hear, write)
Simulator.__call__ = stamped
server = SimulatorServer(sim).start()
print(json.dumps(server.environ()), flush=True)
sys.stdin.read()
"""
CHUNK = 5
"""Characters per answer delta (each delta is one ``NNNN `` of the answer)."""
SIMULATOR = SIMULATOR.replace("CHUNK", str(CHUNK))
KEY = "bench-key-0000000000"
MODEL = "deepseek-v4-pro"
PROXY_KEY = "sk-bench-" + secrets.token_hex(16)
"""LiteLLM's proxy refuses to start without a master key; this one lives as long as the
bench and only on loopback."""


def cpu_seconds(pid: int) -> float:
    """CPU time of a process's threads so far, to the nanosecond: the scheduler's own
    count of each thread's time on a CPU (``/proc/PID/task/TID/schedstat``). The user and
    system times of ``/proc/PID/stat`` are counted in clock ticks (10 ms): a daemon that
    works 30 ms a call gets a few ticks a call, and whole figures moved by 10% between
    invocations of the same code."""
    total = 0
    for thread in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            total += int(Path(f"/proc/{pid}/task/{thread}/schedstat").read_text().split()[0])
    return total / 1e9


def stream(client: openai.OpenAI, model: str, mark: str) -> tuple[float, list[float]]:
    """Seconds to the first content chunk, and when (monotonic clock) the client had
    each answer delta: the ``i``-th, once it had ``CHUNK * (i + 1)`` characters (a chunk
    may carry several deltas, a network read's worth)."""
    started = time.monotonic()
    arrivals: list[float] = []
    length = 0
    for chunk in client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": f"Go ({mark})."}], stream=True
    ):
        if chunk.choices and chunk.choices[0].delta.content:
            length += len(chunk.choices[0].delta.content)
            now = time.monotonic()
            arrivals += [now] * (length // CHUNK - len(arrivals))
    return arrivals[0] - started, arrivals


class Stamps:
    """The simulator's record of when it handed each answer delta to its server, by
    call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.read = 0
        self.sent: dict[str, list[float]] = {}

    def of(self, mark: str, count: int) -> list[float]:
        """When the simulator handed over the ``count`` deltas of call ``mark`` (each
        stamp is written before its delta; a file that lags is waited for, up to 2 s)."""
        for _ in range(200):
            with self.path.open(encoding="utf-8") as stamps:
                stamps.seek(self.read)
                lines = stamps.read()
            complete = lines[: lines.rfind("\n") + 1]
            self.read += len(complete.encode())
            for line in complete.splitlines():
                name, at = line.split("\t")
                self.sent.setdefault(name, []).append(float(at))
            if len(self.sent.get(mark, [])) >= count:
                return self.sent.pop(mark)
            time.sleep(0.01)
        raise RuntimeError(f"the simulator stamped {len(self.sent.get(mark, []))} of {count}")


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) > 1 else values[0]


# ``thoughtline serve`` under cProfile (CPU clock of the loop's thread), started by
# SIGUSR1 and written to $BENCH_PROFILE at SIGTERM (uvicorn hands the signal back to
# this handler once it has shut down).
PROFILED = """
import cProfile, os, runpy, signal, sys, time
profile = cProfile.Profile(time.thread_time)
def dump(*_):
    profile.disable()
    profile.dump_stats(os.environ["BENCH_PROFILE"])
    os._exit(0)
signal.signal(signal.SIGTERM, dump)
signal.signal(signal.SIGUSR1, lambda *_: profile.enable())
sys.argv = ["thoughtline", *sys.argv[1:]]
runpy.run_module("thoughtline.cli", run_name="__main__")
"""


def daemon(
    home: Path,
    environ: dict[str, str],
    token: str,
    source: Path | None = None,
    profile: Path | None = None,
) -> tuple[subprocess.Popen[str], str]:
    """``thoughtline serve`` with the gateway on (from ``source/src`` when given; under
    the profiler, to ``profile``, when given), and its URL once it answers."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[gateway]\nenabled = true\n"
        f'[gateway.clients.bench]\ntoken_sha256 = "{token_digest(token)}"\n',
        encoding="utf-8",
    )
    env = {**os.environ, **environ, "THOUGHTLINE_HOME": str(home), "DEEPSEEK_API_KEY": KEY}
    env.pop("THOUGHTLINE_CONFIG", None)
    if source is not None:
        env["PYTHONPATH"] = str(source.resolve() / "src")
    command = ["-m", "thoughtline.cli"]
    if profile is not None:
        env["BENCH_PROFILE"] = str(profile.resolve())
        command = ["-c", PROFILED]
    served = subprocess.Popen(
        [sys.executable, *command, "serve", "--port", "0", "--no-token"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=home,
    )
    assert served.stdout is not None
    url = served.stdout.readline().split()[3]
    for _ in range(200):
        try:
            httpx2.get(f"{url}/v1/health", timeout=5)
            break
        except httpx2.TransportError:
            time.sleep(0.05)
    return served, url


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def litellm_proxy(scratch: Path, environ: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """LiteLLM's proxy in front of the simulator's OpenAI-compatible endpoint."""
    command = shutil.which("litellm", path=str(Path(sys.executable).parent))
    if command is None:
        raise LookupError("litellm is not installed (pip install -e '.[bench]')")
    config = scratch / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        f"      model: openai/{MODEL}\n"
        f"      api_base: {environ['DEEPSEEK_BASE_URL']}\n"
        f"      api_key: {KEY}\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
        "general_settings:\n"
        f"  master_key: {PROXY_KEY}\n",
        encoding="utf-8",
    )
    port = free_port()
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
        "LITELLM_LOG": "ERROR",
        "NO_DOCS": "True",
    }
    proxy = subprocess.Popen(
        [command, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=(scratch / "litellm.log").open("w"),
        text=True,
        env=env,
        cwd=scratch,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(1200):
        if proxy.poll() is not None:
            tail = (scratch / "litellm.log").read_text(errors="replace")[-2000:]
            raise LookupError(f"litellm's proxy exited {proxy.returncode}: {tail}")
        try:
            if httpx2.get(f"{url}/health/liveliness", timeout=5).status_code == 200:
                return proxy, url
        except httpx2.TransportError:
            pass
        time.sleep(0.1)
    proxy.terminate()
    raise LookupError("litellm's proxy did not answer in 120 s")


def quantiles(values: list[float]) -> tuple[float, float]:
    """Median and p99, in milliseconds."""
    return statistics.median(values) * 1000, p99(values) * 1000


def print_profile(path: Path, deltas: int) -> None:
    """The functions of the profiled daemon that cost most of their own time."""
    stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in stats.values())
    print(
        f"gateway profile, {deltas} deltas: {total / deltas * 1e6:.0f} µs a delta "
        "(CPU clock, the profiler's own cost included)"
    )
    print("  own µs   cum µs  calls/delta  function")
    ranked = sorted(stats.items(), key=lambda item: -item[1][2])
    for (file, line, name), (_, calls, own, cum, _) in ranked[:30]:
        where = re.sub(r"^.*/(site-packages|src|lib/python3\.\d+)/", "", file)
        print(
            f"{own / deltas * 1e6:8.2f} {cum / deltas * 1e6:8.2f} {calls / deltas:12.2f}  "
            f"{where}:{line}({name})"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--deltas", type=int, default=200)
    parser.add_argument("--pace", type=float, default=0.005)
    parser.add_argument("--against", type=Path, help="a source tree to compare (its src/)")
    parser.add_argument("--profile", type=Path, help="profile the gateway daemon to this file")
    args = parser.parse_args()
    token = new_token()
    first: dict[str, list[float]] = {}
    delay: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}
    events = 0
    skipped = ""
    processes: list[subprocess.Popen[str]] = []
    with tempfile.TemporaryDirectory() as scratch:
        stamps = Path(scratch) / "stamps"
        stamps.touch()
        with simulator_process(SIMULATOR, str(args.pace), str(args.deltas), str(stamps)) as line:
            environ = json.loads(line)
            try:
                paths: dict[str, tuple[openai.OpenAI, str, int | None]] = {
                    "direct": (
                        openai.OpenAI(base_url=environ["DEEPSEEK_BASE_URL"], api_key=KEY),
                        MODEL,
                        None,
                    )
                }
                daemons = {"gateway": None} | ({"before": args.against} if args.against else {})
                for name, source in daemons.items():
                    profile = args.profile if name == "gateway" else None
                    served, url = daemon(Path(scratch) / name, environ, token, source, profile)
                    processes.append(served)
                    paths[name] = (
                        openai.OpenAI(base_url=f"{url}/openai/v1", api_key=token),
                        f"deepseek/{MODEL}",
                        served.pid,
                    )
                try:
                    proxy, proxy_url = litellm_proxy(Path(scratch), environ)
                    processes.append(proxy)
                    paths["litellm"] = (
                        openai.OpenAI(base_url=proxy_url, api_key=PROXY_KEY),
                        MODEL,
                        proxy.pid,
                    )
                except LookupError as exc:
                    skipped = str(exc)
                record = Stamps(stamps)
                calls = 0
                for name, (client, model, _) in paths.items():
                    # Each path once, unmeasured (imports, the store).
                    calls += 1
                    stream(client, model, f"call-{calls}")
                    first[name], delay[name], cpu[name] = [], [], 0.0
                names = list(paths)
                profiled = paths["gateway"][2]
                if args.profile and profiled is not None:
                    os.kill(profiled, signal.SIGUSR1)
                    time.sleep(0.2)  # the handler runs when the daemon's loop wakes
                for turn in range(args.calls):
                    # Each path in each place in turn: a call right after another
                    # process's call pays for what that one left running.
                    for name in names[turn % len(names) :] + names[: turn % len(names)]:
                        client, model, pid = paths[name]
                        calls += 1
                        before = cpu_seconds(pid) if pid else 0.0
                        head, arrived = stream(client, model, f"call-{calls}")
                        if pid:
                            cpu[name] += cpu_seconds(pid) - before
                        sent = record.of(f"call-{calls}", len(arrived))
                        first[name].append(head)
                        delay[name] += [got - out for got, out in zip(arrived, sent, strict=True)]
                        if name == "direct":
                            events += len(arrived)
            finally:
                for process in processes:
                    process.terminate()
                    process.wait(timeout=30)
    print(f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores")
    print(f"{args.calls} calls each way, {args.deltas} deltas a call, one every {args.pace} s")
    if skipped:
        print(f"litellm: not measured: {skipped}")
    for name, values in first.items():
        median, worst = quantiles(values)
        print(f"first content chunk, {name:8}: median {median:6.2f} ms, p99 {worst:6.2f} ms")
    plain = quantiles(delay["direct"])
    for name, values in delay.items():
        median, worst = quantiles(values)
        line = f"delay per delta, {name:8}: median {median:6.2f} ms, p99 {worst:6.2f} ms"
        if name != "direct":
            line += f" (added: median {median - plain[0]:+.2f} ms, p99 {worst - plain[1]:+.2f} ms)"
        print(line)
    for name, spent in cpu.items():
        if name != "direct":
            print(f"{name:8} CPU per delta: {spent / events * 1e6:.0f} µs ({events} deltas)")
    for name in ("gateway", "before"):
        if name in cpu and cpu.get("litellm", 0.0) > 0:
            print(f"{name} CPU per delta / LiteLLM's: {cpu[name] / cpu['litellm']:.2f}")
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    if args.profile:
        print_profile(args.profile, events)


if __name__ == "__main__":
    main()
