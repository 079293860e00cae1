"""Garbage-collector pauses in a whole ``thoughtline run``, with and without the startup
heap frozen (``thoughtline._process.freeze_startup_heap``, what ``run``, ``serve``,
``mcp`` and ``acp`` do before their event loop starts).

The server of ``bench_whole_run.py`` (its own process, 127.0.0.1) streams one Anthropic
response of N events (90% thinking deltas); each contender is a fresh
``thoughtline run --json --chain-of-thought surface`` process that records every
collection with ``gc.callbacks`` (count and time per generation, the longest pause). The
baseline is the same command with ``freeze_startup_heap`` replaced by a no-op, so the
freeze is the only difference. Rounds alternate.

    .venv/bin/python bench/bench_gc.py [--events 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_whole_run import KEY, MODEL, start_server

CHILD = """
import gc, json, sys, time
if sys.argv[1] == "off":
    import thoughtline._process
    thoughtline._process.freeze_startup_heap = lambda: None
    import thoughtline.cli._driver
    thoughtline.cli._driver.freeze_startup_heap = lambda: None
stats = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}
started = [0.0]
longest = [0.0]
def record(phase, info):
    if phase == "start":
        started[0] = time.perf_counter()
        return
    took = time.perf_counter() - started[0]
    stats[info["generation"]][0] += 1
    stats[info["generation"]][1] += took
    longest[0] = max(longest[0], took)
gc.callbacks.append(record)
from thoughtline.cli import main
sys.argv = ["thoughtline", *sys.argv[2:]]
try:
    main()
finally:
    print(json.dumps({"stats": stats, "longest": longest[0]}), file=sys.stderr)
"""


def one(freeze: str, port: int, home: Path) -> dict[str, object]:
    env = dict(
        os.environ,
        THOUGHTLINE_HOME=str(home),
        ANTHROPIC_API_KEY=KEY,
        ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
        OTEL_SDK_DISABLED="true",
    )
    args = ["run", "Think at length.", "--provider", "anthropic", "--model", MODEL]
    args += ["--chain-of-thought", "surface", "--json"]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, freeze, *args],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, object] = json.loads(done.stderr.strip().splitlines()[-1])
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    server, port, _deltas, _bytes = start_server(options.events)
    rows: list[tuple[str, int, dict[str, object]]] = []
    try:
        for round_ in range(1, options.repeat + 1):
            for freeze in ("off", "on"):
                with tempfile.TemporaryDirectory() as home:
                    rows.append((freeze, round_, one(freeze, port, Path(home))))
    finally:
        server.kill()
    load = os.getloadavg()[0]
    print(
        f"python {platform.python_version()}; one Anthropic stream of {options.events:,} "
        f"events from a loopback server; load average {load:.1f} at the end\n"
    )
    print("| startup heap | round | gen0 | gen1 | gen2 (full) | all collections | longest pause |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for freeze, round_, report in rows:
        stats = report["stats"]
        assert isinstance(stats, dict)
        cells = [f"{n} in {t * 1000:.0f} ms" for n, t in (stats[str(g)] for g in range(3))]
        total = sum(t for _n, t in stats.values()) * 1000
        longest = float(report["longest"]) * 1000  # type: ignore[arg-type]
        label = "frozen" if freeze == "on" else "not frozen (baseline)"
        print(f"| {label} | {round_} | {' | '.join(cells)} | {total:.0f} ms | {longest:.1f} ms |")


if __name__ == "__main__":
    main()
