"""Budgets on the command line: real ``thoughtline`` subprocesses against the simulator
on 127.0.0.1, with a real MCP tool server over stdio. ``--max-cost`` fits each call to
what is left (its output capped, in the wire's own field, and said once), stops a tool
loop before the call that has no room for 256 output tokens (exit 1,
``BUDGET_EXCEEDED``, the steps before it kept), a role's budget comes from the config,
and a bad budget is one sentence naming the file and key, or the flag."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli.test_run_cli import thoughtline
from tests.tools.test_mcp_tools import TEST_SERVER
from thoughtline.testing import SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

# $0 input, $10 output per million tokens: a call's worst case is its max_output_tokens
# x $0.00001 and a step that generates 1,000 tokens costs $0.01.
CONFIG = f"""
[prices."openai/o4-mini"]
input = 0
output = 10

[mcp_servers.probe]
command = {json.dumps(sys.executable)}
args = [{json.dumps(TEST_SERVER)}]
"""
STEP = Transcript(
    tool_calls=(
        SimToolCall(call_id="call_1", name="probe__repeat", arguments='{"text": "x", "times": 1}'),
    ),
    output_tokens=1_000,
)
LOOP = ("--provider", "openai", "--model", "o4-mini", "--max-output-tokens", "1000")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def configure(home: Path, text: str) -> Path:
    path = home.parent / "thoughtline.toml"  # the working directory's config
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.slow
def test_max_cost_stops_a_tool_loop_at_the_call_that_could_overspend(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    configure(home, CONFIG)
    sim.script(STEP)  # every step calls the tool: only the budget ends the loop
    args = ("run", "Use the tool.", "--tool", "probe", *LOOP, "--max-cost", "0.032")
    result = thoughtline(home, environ, *args, "--json")
    assert result.returncode == 1, result.stderr
    assert len(sim.requests) == 3
    snapshot = json.loads(result.stdout)
    assert snapshot["max_cost"] == 0.032
    (task,) = snapshot["tasks"]
    assert task["status"] == "failed" and task["error"]["code"] == "BUDGET_EXCEEDED"
    assert "spent $0.030 of the run's $0.032 budget after 3 model calls" in task["error"]["message"]
    # The steps before it are kept, with what each cost.
    assert task["steps"] == 3
    assert [call["status"] for call in task["tool_calls"]] == ["done", "done", "done"]
    assert [cost["amount"] for cost in task["step_costs"]] == [0.01, 0.01, 0.01]
    assert snapshot["cost"]["amount"] == pytest.approx(0.03, abs=1e-12)

    # The table run says it too, on stderr, and exits 1.
    sim.reset()
    sim.script(STEP)
    table = thoughtline(home, environ, *args)
    assert table.returncode == 1
    assert "BUDGET_EXCEEDED" in table.stderr
    assert len(sim.requests) == 3


@pytest.mark.slow
def test_a_role_budget_from_the_config_stops_each_task_of_the_role(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    configure(
        home,
        CONFIG
        + """
[roles.looper]
prompt = "You call the tool until told to stop."
tools = ["probe"]
max_cost = 0.022
""",
    )
    sim.script(STEP)
    result = thoughtline(home, environ, "run", "Loop.", "--role", "looper", *LOOP, "--json")
    assert result.returncode == 1, result.stderr
    (task,) = json.loads(result.stdout)["tasks"]
    assert task["max_cost"] == 0.022
    assert task["error"]["code"] == "BUDGET_EXCEEDED"
    assert "of the task's $0.022 budget after 2 model calls" in task["error"]["message"]
    assert len(sim.requests) == 2
    shown = thoughtline(home, environ, "config", "--json")
    assert shown.returncode == 0, shown.stderr
    assert '"roles.looper.max_cost"' in shown.stdout


@pytest.mark.parametrize(
    ("table", "key", "value"),
    [
        ("orchestration", "orchestration.max_cost", "-1"),
        ("orchestration", "orchestration.max_cost", "nan"),
        ("orchestration", "orchestration.max_cost", '"cheap"'),
        ("roles.looper", "roles.looper.max_cost", "inf"),
    ],
)
def test_a_bad_max_cost_in_the_config_names_the_file_and_the_key(
    home: Path, sim: Simulator, environ: dict[str, str], table: str, key: str, value: str
) -> None:
    prompt = 'prompt = "You loop."\n' if table.startswith("roles") else ""
    path = configure(home, f"[{table}]\n{prompt}max_cost = {value}\n")
    result = thoughtline(home, environ, "run", "Explain.")
    assert result.returncode == 2, result.stderr
    assert f"{path}: {key}: must be a number of US dollars from 0 to 1,000,000" in result.stderr
    assert sim.requests == []


@pytest.mark.parametrize("value", ["-0.5", "nan", "lots"])
def test_a_bad_max_cost_flag_is_named(
    home: Path, sim: Simulator, environ: dict[str, str], value: str
) -> None:
    result = thoughtline(home, environ, "run", "Explain.", "--max-cost", value)
    assert result.returncode == 2
    assert ("--max-cost" in result.stderr and "US dollars" in result.stderr) or (
        "--max-cost takes a number, got 'lots'." in result.stderr
    )
    assert sim.requests == []


def test_a_bad_max_cost_in_a_plan_names_the_file_and_the_key(
    home: Path, tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text('request = "Explain."\n[[task]]\nrole = "engineer"\nmax_cost = -2\n')
    result = thoughtline(home, environ, "run", "--plan", str(plan))
    assert result.returncode == 2, result.stderr
    assert f"{plan}: task[0].max_cost" in result.stderr
    assert "max_cost must be a number of US dollars" in result.stderr
    assert sim.requests == []


def test_a_plan_budget_applies_to_its_run(
    home: Path, tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    configure(home, CONFIG)
    sim.script(Transcript(answer="Done.", output_tokens=1_000))
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'request = "Explain."\nmax_cost = 0.002\n'
        '[[task]]\nrole = "engineer"\nprovider = "openai"\nmodel = "o4-mini"\n'
        "max_output_tokens = 1000\n"
    )
    result = thoughtline(home, environ, "run", "--plan", str(plan), "--json")
    assert result.returncode == 1, result.stderr
    snapshot = json.loads(result.stdout)
    assert snapshot["max_cost"] == 0.002
    assert snapshot["tasks"][0]["error"]["code"] == "BUDGET_EXCEEDED"
    assert sim.requests == []  # $0.002 pays for 200 output tokens, not 256: nothing sent
