"""``thoughtline usage`` as a user runs it: real runs through the simulator, then the
report by each key, as a table, JSON and CSV; unreported usage is counted apart."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from tests.cli.test_run_cli import thoughtline
from thoughtline.testing import Fault, SimReasoning, Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_usage_sums_the_tokens_of_real_runs_by_each_key(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.default_transcript = Transcript(
        answer="An answer of some length.",
        reasoning=(SimReasoning(kind="summary", text="Some thought.", signature="s"),),
        reasoning_tokens=40,
    )
    snapshots = []
    for role, provider in (
        ("architect", "anthropic"),
        ("reviewer", "openai"),
        ("architect", "anthropic"),
    ):
        done = thoughtline(
            home, environ, "run", "Design a cache", "-r", role, "-p", provider, "--json"
        )
        assert done.returncode == 0, done.stderr
        snapshots.append(json.loads(done.stdout))
    tasks = [snapshot["tasks"][0] for snapshot in snapshots]
    expected_input = sum(task["usage"]["input_tokens"] for task in tasks)
    # Anthropic does not count reasoning apart (null); OpenAI does.
    expected_reasoning = sum(task["usage"]["reasoning_tokens"] or 0 for task in tasks)
    assert expected_reasoning > 0

    by_role = thoughtline(home, environ, "usage", "--by", "role", "--json")
    assert by_role.returncode == 0, by_role.stderr
    report = json.loads(by_role.stdout)
    assert report["schema"] == "thoughtline.usage/v1" and report["by"] == "role"
    assert [group["key"] for group in report["groups"]] == ["architect", "reviewer"]
    assert [group["tasks"] for group in report["groups"]] == [2, 1]
    assert report["total"]["tokens"]["input_tokens"] == expected_input
    assert report["total"]["tokens"]["reasoning_tokens"] == expected_reasoning
    # The stored costs of the three runs (priced as each call ended), summed.
    expected_cost = sum(task["cost"]["amount"] for task in tasks)
    assert expected_cost > 0
    assert report["total"]["cost"] == {
        "amount": round(expected_cost, 6), "currency": "USD", "unpriced_tasks": 0,
    }  # fmt: skip
    architect_models = report["groups"][0]["models"]
    assert [(model["provider"], model["tasks"]) for model in architect_models] == [("anthropic", 2)]

    by_model = thoughtline(home, environ, "usage", "--by", "model", "--since", "1h", "--csv")
    assert by_model.returncode == 0, by_model.stderr
    rows = list(csv.DictReader(io.StringIO(by_model.stdout)))
    assert {row["key"] for row in rows} == {f"{task['provider']}/{task['model']}" for task in tasks}
    assert sum(int(row["input_tokens"]) for row in rows) == expected_input
    assert abs(sum(float(row["cost_usd"]) for row in rows) - expected_cost) < 1e-6

    table = thoughtline(home, environ, "usage", "--since", "7d")
    assert table.returncode == 0, table.stderr
    assert "usage by day" in table.stdout and "total" in table.stdout
    assert f"{expected_input:,}" in table.stdout
    assert f"${expected_cost:,.4f}" in table.stdout

    nothing = thoughtline(home, environ, "usage", "--since", "2999-01-01")
    assert nothing.returncode == 0
    assert "No tasks started since 2999-01-01" in nothing.stdout


def test_a_task_whose_usage_was_not_reported_is_counted_apart(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    # The provider refused the call: nothing was billed, so it costs $0, not "unknown".
    sim.inject(Fault.http_error(401, "invalid x-api-key"), profile="anthropic")
    refused = json.loads(thoughtline(home, environ, "run", "x", "--json").stdout)
    assert refused["status"] == "failed"
    assert refused["cost"]["amount"] == 0 and refused["cost"]["unknown_reason"] is None
    report = json.loads(thoughtline(home, environ, "usage", "--json").stdout)
    assert report["total"]["unreported"] == 1
    assert report["total"]["cost"]["unpriced_tasks"] == 0
    # A stream cut mid-answer was billed for what it generated but never said its output
    # tokens: its cost is unknown.
    sim.inject(Fault.cut_mid_answer(), profile="anthropic")
    cut = thoughtline(home, environ, "run", "x", "--json")
    assert json.loads(cut.stdout)["cost"]["amount"] is None
    report = json.loads(thoughtline(home, environ, "usage", "--json").stdout)
    assert report["total"]["tasks"] == 2
    assert report["total"]["unreported"] == 1
    assert report["total"]["cost"]["unpriced_tasks"] == 1
    shown = thoughtline(home, environ, "usage").stdout
    assert re.search(r"(?m)^total +2\* .* 1 unpriced$", shown), shown
    assert "* 1 task(s) reported no usage" in shown and "unpriced: 1 task(s) cost unknown" in shown
    assert max(len(line) for line in shown.splitlines()) <= 80
    # A priced task beside them: the amount, and how many tasks it leaves out.
    assert thoughtline(home, environ, "run", "y", "--json").returncode == 0
    report = json.loads(thoughtline(home, environ, "usage", "--json").stdout)
    amount = report["total"]["cost"]["amount"]
    assert amount > 0
    shown = thoughtline(home, environ, "usage").stdout
    assert re.search(rf"(?m)^total +.* \${amount:,.4f} \+ 1 unpriced$", shown), shown
    assert max(len(line) for line in shown.splitlines()) <= 80


def test_bad_usage_arguments_say_what_to_do(home: Path, environ: dict[str, str]) -> None:
    both = thoughtline(home, environ, "usage", "--json", "--csv")
    assert both.returncode == 2 and "choose one" in both.stderr
    bad_since = thoughtline(home, environ, "usage", "--since", "last tuesday")
    assert bad_since.returncode == 2 and "is neither an age" in bad_since.stderr
    bad_key = thoughtline(home, environ, "usage", "--by", "week")
    assert bad_key.returncode == 2 and "'week' is not one of" in bad_key.stderr
