"""Ctrl-C (SIGINT) to a real ``thoughtline run`` during step 2 of a tool loop, against
the simulator on 127.0.0.1 and a real MCP tool server over stdio: step 1 was priced, so
its cost is kept and only step 2 is unknown ("$0.0031 + step 2 unknown") in the table,
the footer, the snapshot, ``status``, ``export`` and ``usage``."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from tests.cli.test_budget_cli import CONFIG
from tests.cli.test_run_cli import start_thoughtline, thoughtline
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

# CONFIG: $0 input, $10 output per million tokens: step 1's 310 output tokens cost $0.0031.
STEP_1 = Transcript(
    tool_calls=(
        SimToolCall(call_id="call_1", name="probe__repeat", arguments='{"text": "x", "times": 1}'),
    ),
    output_tokens=310,
)
STEP_2 = Transcript(
    reasoning=(SimReasoning(kind="summary", text="slow thought " * 40),),
    answer="slow answer " * 80,
    chunk_chars=4,
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_ctrl_c_during_step_2_keeps_what_step_1_cost(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    config = home.parent / "thoughtline.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(CONFIG)
    sim.script_turns(STEP_1, STEP_2)
    sim.pace_s = 0.05  # step 2 streams for seconds
    args = ("run", "Use the tool.", "--tool", "probe", "-p", "openai", "-m", "o4-mini")
    process = start_thoughtline(home, environ, *args)
    try:
        deadline = time.monotonic() + 30
        while len(sim.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(sim.requests) == 2, "step 2 never started"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    reason = "step 2: cancelled before the provider reported its usage"
    assert "$0.0031 +" in stderr and "step 2 unknown" in stderr  # the table's cell
    footer = f"cost $0.0031 + task assistant step 2 unknown (task assistant: {reason}"
    assert footer in " ".join(stderr.split())  # the footer, wrapped at the console's width
    shown = thoughtline(home, environ, "status", "--json")
    snapshot = json.loads(shown.stdout)
    for cost in (snapshot["cost"], snapshot["tasks"][0]["cost"]):
        assert cost["amount"] is None and cost["known_amount"] == 0.0031
        assert cost["unknown_reason"].startswith(reason) or reason in cost["unknown_reason"]
    assert snapshot["cost"]["unknown_part"] == "task assistant step 2"
    assert snapshot["tasks"][0]["cost"]["unknown_part"] == "step 2"
    assert [cost["amount"] for cost in snapshot["tasks"][0]["step_costs"]] == [0.0031, None]
    table = thoughtline(home, environ, "status")
    assert footer in " ".join((table.stdout + table.stderr).split())
    exported = thoughtline(home, environ, "export", "--format", "md")
    assert "$0.0031 + step 2 unknown" in exported.stdout
    usage = thoughtline(home, environ, "usage", "--json")
    total = json.loads(usage.stdout)["total"]["cost"]
    assert total["amount"] == 0.0031 and total["unpriced_tasks"] == 1
