"""Commands that never call a provider start without the HTTP stack or asyncio: each is
run in a fresh interpreter, which then reports what it imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PREPARE_ONLY = ("run", "--worker-backend", "inline", "--json")
HEAVY = ("httpx2", "asyncio", "anthropic", "openai")

CHILD = """
import json, sys
from thoughtline.cli import main
sys.argv = ["thoughtline", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(name for name in sys.modules if "." not in name)), file=sys.stderr)
"""


def imported_by(arguments: list[str], home: Path) -> set[str]:
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("THOUGHTLINE_", "OTEL_"))
    }
    environ["THOUGHTLINE_HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(arguments)],
        cwd=home,  # no thoughtline.toml of the project is picked up
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    modules: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return set(modules)


@pytest.mark.parametrize("arguments", [["--help"], ["status"], ["runs"]])
def test_commands_that_read_only_do_not_import_the_http_stack(
    arguments: list[str], tmp_path: Path
) -> None:
    if arguments != ["--help"]:
        # A stored (prepare-only) run, so status and runs render a real snapshot.
        environ = {**os.environ, "THOUGHTLINE_HOME": str(tmp_path)}
        prepared = subprocess.run(
            [sys.executable, "-m", "thoughtline.cli", *PREPARE_ONLY, "Design a cache"],
            cwd=tmp_path,
            env=environ,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert prepared.returncode == 0, prepared.stderr
    modules = imported_by(arguments, tmp_path)
    assert "thoughtline" in modules and "click" in modules  # the command did run
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def test_the_check_sees_the_http_stack_where_a_command_loads_it(tmp_path: Path) -> None:
    # The control: `run` does build a runtime, so the same check reports httpx2 there.
    modules = imported_by(["run", "--worker-backend", "inline", "--json", "x"], tmp_path)
    assert {"httpx2", "asyncio"} <= modules


FIRST_PRICE = """
import gc
from datetime import UTC, datetime
from thoughtline._process import freeze_startup_heap, load_what_runs_use
from thoughtline.config.pricing import Pricer
from thoughtline.records import TaskUsage
load_what_runs_use()
freeze_startup_heap()
before = len(gc.get_objects())
cost = Pricer().price("anthropic", "claude-sonnet-4-5", TaskUsage(input_tokens=10, output_tokens=5))
assert cost.amount is not None, cost
print(len(gc.get_objects()) - before)
"""


def test_a_long_running_process_holds_the_price_data_in_its_frozen_heap() -> None:
    # Loaded on the first task's end instead, the data (about 25,000 objects) stalled the
    # daemon's event loop for a tenth of a second, and every full collection walked it.
    done = subprocess.run(
        [sys.executable, "-c", FIRST_PRICE], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) < 2000
