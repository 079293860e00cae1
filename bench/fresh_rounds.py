"""Shared by the benchmarks that measure each contender in a fresh process: the simulator
in a process of its own, and rounds that rotate the contenders, each round of each a new
process (a process's history, its allocator's state among it, is not carried from one
contender to the next), keeping each contender's best round by its CPU time."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

Result = tuple[float, float, int]
"""CPU seconds, wall seconds, and what the round counted (chunks, events)."""


@contextmanager
def simulator_process(code: str, *args: str) -> Iterator[str]:
    """Run ``code`` (which prints the simulator's URL, then serves until its stdin
    closes) in a process of its own; the URL."""
    simulator = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert simulator.stdout is not None
    assert simulator.stdin is not None
    try:
        yield simulator.stdout.readline().strip()
    finally:
        simulator.stdin.close()
        simulator.wait(timeout=30)


def best_rounds(
    script: str,
    names: Sequence[str],
    repeat: int,
    child_args: Sequence[str],
    environment: Callable[[int, str], tuple[dict[str, str] | None, str | None]] = lambda *_: (
        None,
        None,
    ),
) -> dict[str, Result]:
    """Run ``script --child NAME *child_args`` for every contender, ``repeat`` rounds in
    rotating order; each child prints its :data:`Result` as JSON. ``environment`` gives
    the environment and working directory of a round (``None``: this process's)."""
    best: dict[str, Result] = {}
    for number in range(repeat):
        order = list(names)
        order = order[number % len(order) :] + order[: number % len(order)]
        for name in order:
            env, cwd = environment(number, name)
            output = subprocess.run(
                [sys.executable, script, "--child", name, *child_args],
                check=True,
                capture_output=True,
                text=True,
                env=env,
                cwd=cwd,
            )
            cpu, wall, count = json.loads(output.stdout)
            if name not in best or cpu < best[name][0]:
                best[name] = (cpu, wall, count)
    return best


def report(result: Result) -> None:
    """What a child prints for :func:`best_rounds`."""
    print(json.dumps(list(result)))


def print_table(
    best: dict[str, Result],
    names: Sequence[str],
    *,
    columns: tuple[str, str, str, str],
    units: Callable[[int], int],
) -> None:
    """The rounds kept, as a Markdown table in ``names`` order. ``columns`` names the
    first column, what a round counted, the unit CPU is divided by and the first
    contender, which the others' CPU is compared with; ``units`` gives how many of that
    unit a round's count stands for."""
    first, counted, unit, baseline_name = columns
    baseline = best[names[0]][0]
    print(f"| {first} | {counted} | CPU s | wall s | CPU µs per {unit} | CPU vs {baseline_name} |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in names:
        cpu, wall, count = best[name]
        print(
            f"| {name} | {count:,} | {cpu:.2f} | {wall:.2f} | {cpu / units(count) * 1e6:.0f} "
            f"| {cpu / baseline:.2f}x |"
        )
