"""The gateway's cost on a streamed Chat Completions call, against the same client
calling the simulator directly, in one invocation.

The simulator runs in a process of its own, streaming ``--deltas`` answer deltas of a
DeepSeek model one every ``--pace`` seconds; ``thoughtline serve`` (gateway on, one
``hidden`` client) runs in another, its upstream the simulator. The official ``openai``
SDK in this process streams ``--calls`` calls each way, alternating:

- *direct*: ``base_url`` the simulator's DeepSeek endpoint;
- *gateway*: ``base_url`` the daemon's ``/openai/v1``, ``model`` ``deepseek/…``;
- *litellm*: ``base_url`` LiteLLM's proxy (``litellm --config``, on loopback, in a
  process of its own), its one model entry an ``openai/…`` model whose ``api_base`` is
  the simulator's DeepSeek endpoint (the config is written to a temporary directory; the
  cost map is LiteLLM's local copy, so nothing leaves the machine). Skipped, with the
  reason printed, when ``litellm[proxy]`` (the ``bench`` extra) is not installed.

Reported: time to the first content chunk (median, p99), the delay each delta gains
through the gateway (when the client had the same text, after the call's start, gateway
minus direct, over every delta of paired calls: median and p99; and the same less the
first delta's, what the gateway adds per event once the stream runs), and the daemon's CPU
time per delta of the upstream stream
(user + system, read from ``/proc``, over the gateway's calls only: parsing, the run, its
store writes, the gate and the render), and the same for LiteLLM's proxy process.

    .venv/bin/python bench/bench_gateway.py [--calls 20] [--deltas 200] [--pace 0.005]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import shutil
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
import json, sys
from thoughtline.testing import Simulator, SimulatorServer, Transcript
deltas = int(sys.argv[2])
# Each delta differs from the one before: LiteLLM's proxy ends a stream that repeats
# one chunk 100 times as a model stuck in a loop.
sim = Simulator(pace_s=float(sys.argv[1]), default_transcript=Transcript(
    answer="".join(f"{n % 10000:04d} " for n in range(deltas)), chunk_chars=5))
server = SimulatorServer(sim).start()
print(json.dumps(server.environ()), flush=True)
sys.stdin.read()
"""
KEY = "bench-key-0000000000"
MODEL = "deepseek-v4-pro"
PROXY_KEY = "sk-bench-" + secrets.token_hex(16)
"""LiteLLM's proxy refuses to start without a master key; this one lives as long as the
bench and only on loopback."""


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stream(client: openai.OpenAI, model: str) -> tuple[float, list[tuple[int, float]]]:
    """Seconds to the first content chunk, and each content chunk's arrival: the answer's
    length so far, and the seconds since the call started."""
    started = time.perf_counter()
    arrivals: list[tuple[int, float]] = []
    length = 0
    for chunk in client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Go."}], stream=True
    ):
        if chunk.choices and chunk.choices[0].delta.content:
            length += len(chunk.choices[0].delta.content)
            arrivals.append((length, time.perf_counter() - started))
    return arrivals[0][1], arrivals


def delays(plain: list[tuple[int, float]], through: list[tuple[int, float]]) -> list[float]:
    """For each delta of the direct call, how much later the gateway's client had the
    same text (a chunk of the gateway may carry several deltas: a network read's worth)."""
    found: list[float] = []
    at = 0
    for length, arrived in plain:
        while at < len(through) and through[at][0] < length:
            at += 1
        if at < len(through):
            found.append(through[at][1] - arrived)
    return found


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) > 1 else values[0]


def daemon(home: Path, environ: dict[str, str], token: str) -> subprocess.Popen[str]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[gateway]\nenabled = true\n"
        f'[gateway.clients.bench]\ntoken_sha256 = "{token_digest(token)}"\n',
        encoding="utf-8",
    )
    env = {**os.environ, **environ, "THOUGHTLINE_HOME": str(home), "DEEPSEEK_API_KEY": KEY}
    env.pop("THOUGHTLINE_CONFIG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=home,
    )


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--deltas", type=int, default=200)
    parser.add_argument("--pace", type=float, default=0.005)
    args = parser.parse_args()
    token = new_token()
    first: dict[str, list[float]] = {"direct": []}
    added: dict[str, list[float]] = {}
    beyond: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}
    events = 0
    skipped = ""
    with (
        simulator_process(SIMULATOR, str(args.pace), str(args.deltas)) as line,
        tempfile.TemporaryDirectory() as scratch,
    ):
        environ = json.loads(line)
        served = daemon(Path(scratch) / "home", environ, token)
        proxy: subprocess.Popen[str] | None = None
        try:
            assert served.stdout is not None
            url = served.stdout.readline().split()[3]
            for _ in range(200):
                try:
                    httpx2.get(f"{url}/v1/health", timeout=5)
                    break
                except httpx2.TransportError:
                    time.sleep(0.05)
            direct = openai.OpenAI(base_url=environ["DEEPSEEK_BASE_URL"], api_key=KEY)
            paths: dict[str, tuple[openai.OpenAI, str, int]] = {
                "gateway": (
                    openai.OpenAI(base_url=f"{url}/openai/v1", api_key=token),
                    f"deepseek/{MODEL}",
                    served.pid,
                )
            }
            try:
                proxy, proxy_url = litellm_proxy(Path(scratch), environ)
                paths["litellm"] = (
                    openai.OpenAI(base_url=proxy_url, api_key=PROXY_KEY),
                    MODEL,
                    proxy.pid,
                )
            except LookupError as exc:
                skipped = str(exc)
            stream(direct, MODEL)  # each path once, unmeasured (imports, the store)
            for name, (client, model, _) in paths.items():
                stream(client, model)
                first[name], added[name], beyond[name], cpu[name] = [], [], [], 0.0
            for _ in range(args.calls):
                head, plain = stream(direct, MODEL)
                first["direct"].append(head)
                events += len(plain)
                for name, (client, model, pid) in paths.items():
                    before = cpu_seconds(pid)
                    head, through = stream(client, model)
                    cpu[name] += cpu_seconds(pid) - before
                    first[name].append(head)
                    gained = delays(plain, through)
                    added[name] += gained
                    beyond[name] += [delay - gained[0] for delay in gained]
        finally:
            served.terminate()
            served.wait(timeout=30)
            if proxy is not None:
                proxy.terminate()
                proxy.wait(timeout=30)
    print(f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores")
    print(f"{args.calls} calls each way, {args.deltas} deltas a call, one every {args.pace} s")
    if skipped:
        print(f"litellm: not measured: {skipped}")
    for name, values in first.items():
        print(
            f"first content chunk, {name:8}: median {statistics.median(values) * 1000:6.2f} ms, "
            f"p99 {p99(values) * 1000:6.2f} ms"
        )
    for name in added:
        print(
            f"{name:8} delay added per delta: median {statistics.median(added[name]) * 1000:.2f} ms, "
            f"p99 {p99(added[name]) * 1000:.2f} ms"
        )
        print(
            f"{name:8} delay added per delta beyond the first's: median "
            f"{statistics.median(beyond[name]) * 1000:.2f} ms, p99 {p99(beyond[name]) * 1000:.2f} ms"
        )
        print(f"{name:8} CPU per delta: {cpu[name] / events * 1e6:.0f} µs ({events} deltas)")
    if "litellm" in cpu and cpu["litellm"] > 0:
        print(f"thoughtline's CPU per delta / LiteLLM's: {cpu['gateway'] / cpu['litellm']:.2f}")


if __name__ == "__main__":
    main()
