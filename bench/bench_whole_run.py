"""A whole ``thoughtline run`` process against an official-SDK script, on the same bytes.

A server in its own process on 127.0.0.1 answers every request with the same
pre-rendered Anthropic Messages stream (N events: ~90% thinking deltas, then the answer),
written as fast as the socket takes it, so neither contender waits for a pacing
simulator. Contenders, each a fresh process, interleaved, best of ``--repeat``: each
keeps its best wall time and, apart, its best CPU time (user + system, from ``wait4``),
as under load the round with the best wall time is seldom the one with the least CPU:

- ``thoughtline run --json`` with the default settings, in ``surface`` mode (every
  thinking delta displayed: gated, logged to the run event log, kept in the task) and in
  ``hidden`` mode (for reference: thinking dropped at capture);
- the SDK script: ``anthropic`` raw ``messages.create(stream=True)`` iteration collecting
  the thinking and text deltas, then printing them as JSON — what a script without
  thoughtline would do with the same stream;
- the SDK's accumulating helper: ``messages.stream()`` and ``get_final_message()``, the
  thinking and text taken from the message, printed as JSON;
- the parse floor: the standard library alone (``http.client``, ``json.loads`` of each
  ``data:`` line, the deltas collected), what reading the stream costs at least.

Every contender loads its modules from bytecode caches, as for anyone who installed
them (pip compiles a package at install): thoughtline's own package, installed editable
here, is compiled before the first round (``compileall``) and ``PYTHONDONTWRITEBYTECODE``
is dropped from the contenders' environment. Without it each ``thoughtline`` process
compiled its 300 modules from source while the SDK's came from the caches pip wrote.

Each ``thoughtline`` contender keeps one home through its rounds, as a user's runs do:
its first round creates the store and fills the home's caches (the price data's price of
the model, ``config/price_cache.py``), which the rounds after it find; the first round's
time is printed apart.

Also reported: the store's size on disk per displayed thinking delta (what the surface
run's last round added to its home minus what the hidden run's did, after a checkpoint,
divided by the thinking deltas), and the event log's rows for the surface run.

    .venv/bin/python bench/bench_whole_run.py [--events 200000] [--repeat 3]

``BENCH_KEEP=DIR`` keeps each run's home under DIR to look at the stores afterwards.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import stream_server
import thoughtline
from bench_streams import ANTHROPIC_MODEL, anthropic_bytes

MODEL = ANTHROPIC_MODEL
KEY = "bench-key-0000000000"


SDK_SCRIPT = """
import json, sys
import anthropic

client = anthropic.Anthropic(api_key=sys.argv[2], base_url=sys.argv[1], max_retries=0)
thinking, text = [], []
stream = client.messages.create(
    model=sys.argv[3], max_tokens=64000, stream=True,
    thinking={"type": "adaptive", "display": "summarized"},
    messages=[{"role": "user", "content": "Think at length."}],
)
for event in stream:
    if event.type == "content_block_delta":
        if event.delta.type == "thinking_delta":
            thinking.append(event.delta.thinking)
        elif event.delta.type == "text_delta":
            text.append(event.delta.text)
json.dump({"thinking": "".join(thinking), "text": "".join(text)}, sys.stdout)
"""

HELPER_SCRIPT = """
import json, sys
import anthropic

client = anthropic.Anthropic(api_key=sys.argv[2], base_url=sys.argv[1], max_retries=0)
with client.messages.stream(
    model=sys.argv[3], max_tokens=64000,
    thinking={"type": "adaptive", "display": "summarized"},
    messages=[{"role": "user", "content": "Think at length."}],
) as stream:
    message = stream.get_final_message()
thinking = "".join(block.thinking for block in message.content if block.type == "thinking")
text = "".join(block.text for block in message.content if block.type == "text")
json.dump({"thinking": thinking, "text": text}, sys.stdout)
"""

FLOOR_SCRIPT = """
import http.client, json, sys
from urllib.parse import urlsplit

url = urlsplit(sys.argv[1])
connection = http.client.HTTPConnection(url.hostname, url.port)
body = json.dumps({
    "model": sys.argv[3], "max_tokens": 64000, "stream": True,
    "messages": [{"role": "user", "content": "Think at length."}],
})
connection.request("POST", "/v1/messages", body, {
    "content-type": "application/json", "x-api-key": sys.argv[2],
    "anthropic-version": "2023-06-01",
})
response = connection.getresponse()
thinking, text = [], []
for line in response:
    if line.startswith(b"data: "):
        event = json.loads(line[6:])
        if event["type"] == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "thinking_delta":
                thinking.append(delta["thinking"])
            elif delta["type"] == "text_delta":
                text.append(delta["text"])
json.dump({"thinking": "".join(thinking), "text": "".join(text)}, sys.stdout)
"""


class Timing(NamedTuple):
    wall: float
    cpu: float
    output: bytes


def timed(args: list[str], env: dict[str, str], cwd: Path) -> Timing:
    started = time.perf_counter()
    process = subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env, cwd=cwd
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    assert code == 0, (args, output[-2000:])
    return Timing(wall, usage.ru_utime + usage.ru_stime, output)


def store_bytes(home: Path) -> int:
    database = home / "thoughtline.db"
    with sqlite3.connect(database) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(path.stat().st_size for path in home.glob("thoughtline.db*"))


def start_server(events: int) -> tuple[subprocess.Popen[str], int, int, int]:
    """The stream server in its own process (``stream_server.py``): it, its port, the
    thinking deltas and the body's bytes of the stream it serves."""
    body = anthropic_bytes(events)  # the stream the decoding benchmark reads
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder, "body")
        file.write_bytes(body)
        server, url = stream_server.start({"/v1/messages": file})  # read before it answers
    return server, int(url.rsplit(":", 1)[1]), body.count(b"thinking_delta"), len(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    server, port, thinking_deltas, body_bytes = start_server(options.events)
    base_url = f"http://127.0.0.1:{port}"
    best: dict[str, Timing] = {}
    least_cpu: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            env = {key: value for key, value in os.environ.items() if "API_KEY" not in key}
            env.pop("THOUGHTLINE_CONFIG", None)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            compileall.compile_dir(Path(thoughtline.__file__).parent, quiet=1)
            env.update(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=base_url, OTEL_SDK_DISABLED="true")
            run = [sys.executable, "-m", "thoughtline.cli", "run", "Think at length."]
            run += ["--provider", "anthropic", "--model", MODEL, "--json"]
            contenders = {
                "sdk": [sys.executable, "-c", SDK_SCRIPT, base_url, KEY, MODEL],
                "helper": [sys.executable, "-c", HELPER_SCRIPT, base_url, KEY, MODEL],
                "floor": [sys.executable, "-c", FLOOR_SCRIPT, base_url, KEY, MODEL],
                "surface": [*run, "--chain-of-thought", "surface"],
                "hidden": [*run, "--chain-of-thought", "hidden"],
            }
            sizes: dict[str, int] = {}
            stored: dict[str, int] = {}
            first: dict[str, Timing] = {}
            log_rows = 0
            keep = os.environ.get("BENCH_KEEP")
            for round_index in range(options.repeat):
                for name, args in contenders.items():
                    home = Path(keep or root) / name
                    timing = timed(args, {**env, "THOUGHTLINE_HOME": str(home)}, root)
                    if round_index == 0:
                        first[name] = timing
                    result = json.loads(timing.output)
                    if name in ("sdk", "helper", "floor"):
                        assert len(result["thinking"]) == options.events * 9 // 10 * 4
                    else:
                        (task,) = result["tasks"]
                        assert result["status"] == "completed", task
                        shown = task["reasoning"] is not None
                        assert shown == (name == "surface"), task["reasoning_status"]
                        size = store_bytes(home)
                        sizes[name], stored[name] = size - stored.get(name, 0), size
                        if name == "surface":
                            with sqlite3.connect(home / "thoughtline.db") as conn:
                                (log_rows,) = conn.execute(
                                    "SELECT COUNT(*) FROM run_events WHERE run_id = ("
                                    "SELECT id FROM runs ORDER BY created_at DESC LIMIT 1)"
                                ).fetchone()
                    if name not in best or timing.wall < best[name].wall:
                        best[name] = timing
                    least_cpu[name] = min(least_cpu.get(name, timing.cpu), timing.cpu)
                    print(
                        f"round {round_index + 1}: {name} {timing.wall:.2f} s "
                        f"({timing.cpu:.2f} s CPU)",
                        file=sys.stderr,
                    )
    finally:
        server.kill()
        server.wait(timeout=30)
    print(
        f"python {sys.version.split()[0]}; one Anthropic stream of {options.events:,} events "
        f"({thinking_deltas:,} thinking deltas, {body_bytes / 1e6:.1f} MB) from a loopback "
        f"server; best of {options.repeat}\n"
    )
    print(
        "| contender | wall s | CPU s | SDK raw script vs this (wall) | (CPU) "
        "| SDK helper vs this (wall) | (CPU) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    labels = {
        "sdk": "anthropic SDK raw-iteration script",
        "helper": "anthropic SDK accumulating helper (`messages.stream()`)",
        "floor": "parse floor: `http.client` + `json.loads` per data line",
        "surface": "`thoughtline run --json`, surface",
        "hidden": "`thoughtline run --json`, hidden",
    }
    for name, label in labels.items():
        timing = best[name]
        cpu = least_cpu[name]
        print(
            f"| {label} | {timing.wall:.2f} | {cpu:.2f} "
            f"| {best['sdk'].wall / timing.wall:.2f}x | {least_cpu['sdk'] / cpu:.2f}x "
            f"| {best['helper'].wall / timing.wall:.2f}x "
            f"| {least_cpu['helper'] / cpu:.2f}x |"
        )
    for name in ("surface", "hidden"):
        print(
            f"\nFirst round of `thoughtline run --json`, {name}, in a new home: "
            f"{first[name].wall:.2f} s wall, {first[name].cpu:.2f} s CPU",
            end="",
        )
    print()
    per_delta = (sizes["surface"] - sizes["hidden"]) / thinking_deltas
    print(
        f"\nStore on disk per displayed thinking delta (surface home minus hidden home): "
        f"{per_delta:.1f} B; the surface run's event log holds {log_rows:,} rows."
    )


if __name__ == "__main__":
    main()
