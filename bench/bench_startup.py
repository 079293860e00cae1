"""Startup: import time and process wall time of commands that never call a provider.

Each command runs in a fresh interpreter with ``-X importtime`` (THOUGHTLINE_HOME a
temporary folder holding one prepare-only run, so ``status`` and ``runs`` render a real
snapshot); *import time* is the sum of the top-level imports' cumulative times, *wall* the
whole process. Each keeps its best of ``--repeat``, interleaved. For scale, the same
``status`` with the runtime and the HTTP stack imported first (what it loaded before
they were deferred), and the runtime alone.

Modules load from their bytecode caches, as for anyone who installed the package (pip
compiles it at install): the caches go to a temporary ``PYTHONPYCACHEPREFIX``, written by
an unmeasured first round, and ``PYTHONDONTWRITEBYTECODE`` is dropped from the
environment. The last row is ``status`` with ``PYTHONDONTWRITEBYTECODE=1`` and an
editable install: this package's modules compiled from source on every start, the
installed dependencies from the caches pip wrote.

    .venv/bin/python bench/bench_startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

TOP_LEVEL = re.compile(r"import time:\s+\d+ \|\s+(\d+) \| (\S+)")

PREPARE_ONLY = ("run", "--worker-backend", "inline", "--json", "Design a cache")
STATUS_AS_BEFORE = (
    "import sys; sys.argv = ['thoughtline', 'status']; import httpx2, "
    "thoughtline.runtime.engine.runner; from thoughtline.cli import main; main()"
)
NO_BYTECODE = "thoughtline status, no bytecode cache (PYTHONDONTWRITEBYTECODE=1)"
COMMANDS = [
    ("python -c pass", ["-c", "pass"]),
    ("thoughtline --help", ["-m", "thoughtline.cli", "--help"]),
    ("thoughtline status", ["-m", "thoughtline.cli", "status"]),
    ("thoughtline runs", ["-m", "thoughtline.cli", "runs"]),
    ("status, runtime + httpx2 imported first (as before)", ["-c", STATUS_AS_BEFORE]),
    (
        "import thoughtline.runtime.engine.runner (for scale)",
        ["-c", "import thoughtline.runtime.engine.runner"],
    ),
    (NO_BYTECODE, ["-m", "thoughtline.cli", "status"]),
]


def _timed(arguments: list[str], cwd: str, environ: dict[str, str]) -> tuple[float, float]:
    """(import time, process wall) of one fresh interpreter."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *arguments],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    imported = sum(
        int(match.group(1)) / 1e6
        for match in map(TOP_LEVEL.match, done.stderr.splitlines())
        if match
    )
    return imported, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as caches:
        environ = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("THOUGHTLINE_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        environ["THOUGHTLINE_HOME"] = home
        environ["PYTHONPYCACHEPREFIX"] = caches
        # Installed packages keep the caches pip wrote; this package's modules have none.
        uncached = {k: v for k, v in environ.items() if k != "PYTHONPYCACHEPREFIX"}
        uncached["PYTHONDONTWRITEBYTECODE"] = "1"
        subprocess.run(
            [sys.executable, "-m", "thoughtline.cli", *PREPARE_ONLY],
            cwd=home,
            env=environ,
            capture_output=True,
            check=True,
        )
        for _label, arguments in COMMANDS:  # writes the bytecode caches
            _timed(arguments, home, environ)
        best = {label: (float("inf"), float("inf")) for label, _ in COMMANDS}
        for _ in range(args.repeat):
            for label, arguments in COMMANDS:
                imported, wall = _timed(
                    arguments, home, uncached if label == NO_BYTECODE else environ
                )
                best[label] = (min(best[label][0], imported), min(best[label][1], wall))
    print(f"best of {args.repeat}; load average {os.getloadavg()[0]:.1f} at the end\n")
    print("| command | import time | process wall |")
    print("|---|---:|---:|")
    for label, (imported, wall) in best.items():
        print(f"| {label} | {imported:.3f} s | {wall:.3f} s |")


if __name__ == "__main__":
    main()
