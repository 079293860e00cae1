"""A budget fits the call: real ``thoughtline`` subprocesses against the simulator on
127.0.0.1. A call whose worst case does not fit what is left is sent with its output
capped at what the rest pays for, in the wire's own field, and the run says so once (the
progress line, the snapshot, the trace), and an explicit ``--max-output-tokens`` below
the cap wins; a thinking budget stays valid under the cap or the call is refused saying why;
in a tool loop every step is capped to what is left then."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.cli.test_run_cli import thoughtline
from tests.tools.test_mcp_tools import TEST_SERVER
from thoughtline.testing import SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

SKY = ("run", "Why is the sky blue?")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def body(sim: Simulator, index: int = 0) -> dict[str, object]:
    found = sim.requests[index].body
    assert found is not None
    return dict(found)


def test_a_small_budget_caps_the_output_instead_of_refusing(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    # claude-sonnet-4-6 at $3 / $15 per million tokens: its 8,192-token default output
    # could cost $0.12, but $0.01 pays for about 650 tokens after the question.
    result = thoughtline(home, environ, *SKY, "--max-cost", "0.01")
    assert result.returncode == 0, result.stderr
    assert "BUDGET_EXCEEDED" not in result.stderr
    assert len(sim.requests) == 1
    cap = body(sim)["max_tokens"]
    assert isinstance(cap, int) and 600 <= cap <= 666
    said = f"Output capped at {cap:,} tokens to fit the run's $0.010 budget."
    assert result.stderr.count(said) == 1  # said once, plainly
    shown = thoughtline(home, environ, "status", "--json")
    (task,) = json.loads(shown.stdout)["tasks"]
    assert task["budget_notice"] == said
    assert task["generation"]["max_output_tokens"] is None  # what was asked, as asked
    trace = thoughtline(home, environ, "trace", "latest", "--json")
    events = json.loads(trace.stdout)
    (capped,) = [event for event in events if event["type"] == "budget.output_capped"]
    assert capped["metadata"]["output_cap"] == cap and capped["metadata"]["notice"] == said
    (requested,) = [event for event in events if event["type"] == "worker.requested"]
    assert requested["metadata"]["output_cap"] == cap
    # An explicit --max-output-tokens below the cap wins: sent as is, nothing capped.
    sim.reset()
    lower = thoughtline(home, environ, *SKY, "--max-cost", "0.01", "--max-output-tokens", "300")
    assert lower.returncode == 0, lower.stderr
    assert body(sim)["max_tokens"] == 300
    assert "capped" not in lower.stderr


def test_a_budget_too_small_for_256_output_tokens_is_refused_naming_both_knobs(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    result = thoughtline(home, environ, *SKY, "--max-cost", "0.002")
    assert result.returncode == 1
    assert sim.requests == []
    assert result.stderr.count("BUDGET_EXCEEDED: Budget exceeded:") == 1
    assert re.search(
        r"the next call needs at least \$0\.00\d+ \(its input and 256 output tokens\); no "
        r"call was made; raise max_cost, or set max_output_tokens below 256",
        result.stderr,
    ), result.stderr


def test_a_thinking_budget_is_kept_within_the_cap(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    # claude-sonnet-4-5 thinks with budget_tokens, which must stay below max_tokens and
    # at 1,024 or more: $0.03 pays for about 2,000 tokens in all.
    args = (*SKY, "-m", "claude-sonnet-4-5", "--chain-of-thought", "surface")
    result = thoughtline(home, environ, *args, "--max-cost", "0.03")
    assert result.returncode == 0, result.stderr
    sent = body(sim)
    cap = sent["max_tokens"]
    assert isinstance(cap, int) and 1_900 <= cap <= 2_000
    thinking = sent["thinking"]
    assert isinstance(thinking, dict)
    assert 1_024 <= thinking["budget_tokens"] < cap
    assert f"Output capped at {cap:,} tokens" in result.stderr
    # $0.015 pays for fewer than the 1,025 tokens such a request needs: refused, saying why.
    sim.reset()
    refused = thoughtline(home, environ, *args, "--max-cost", "0.015")
    assert refused.returncode == 1
    assert sim.requests == []
    assert (
        "raise max_cost (claude-sonnet-4-5 thinks with a budget of at least 1,024 tokens, so "
        "a call needs room for 1,025)" in refused.stderr
    )


def test_each_step_of_a_tool_loop_is_capped_to_what_is_left(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    # $10 per million output tokens: each step generates 400 tokens ($0.004) and may
    # generate 1,000 ($0.01). Of $0.02, steps 1-3 fit whole; 4 and 5 are capped to what
    # is left ($0.008, $0.004); then nothing is left for 256 tokens.
    config = home.parent / "thoughtline.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'[prices."openai/o4-mini"]\ninput = 0\noutput = 10\n\n[mcp_servers.probe]\n'
        f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(TEST_SERVER)}]\n"
    )
    call = SimToolCall(
        call_id="call_1", name="probe__repeat", arguments='{"text": "x", "times": 1}'
    )
    sim.script(Transcript(tool_calls=(call,), output_tokens=400))
    args = ("run", "Use the tool.", "--tool", "probe", "-p", "openai", "-m", "o4-mini")
    result = thoughtline(
        home, environ, *args, "--max-output-tokens", "1000", "--max-cost", "0.02", "--json"
    )
    assert result.returncode == 1, result.stderr
    sent = [body(sim, index)["max_output_tokens"] for index in range(len(sim.requests))]
    assert sent == [1_000, 1_000, 1_000, 800, 400]
    (task,) = json.loads(result.stdout)["tasks"]
    assert task["error"]["code"] == "BUDGET_EXCEEDED"
    assert task["budget_notice"] == (
        "Output capped to fit the run's $0.020 budget on 2 steps: 800 tokens at step 4, "
        "400 at step 5."
    )
    assert [cost["amount"] for cost in task["step_costs"]] == [0.004] * 5


def test_a_budget_prices_a_call_at_the_models_max_output_not_its_context_window(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    # gemini-2.5-pro reads 1,048,576 tokens but writes 65,536 at most ($10 per million):
    # its worst case is $0.66, which $1 pays for, so the call goes as asked. Priced at
    # its context window ($10.49) it was capped at some 100,000 tokens instead, a
    # maxOutputTokens Gemini refuses with a 400.
    args = (*SKY, "-p", "gemini", "-m", "gemini-2.5-pro", "--max-cost", "1")
    result = thoughtline(home, environ, *args)
    assert result.returncode == 0, result.stderr
    assert len(sim.requests) == 1
    config = body(sim).get("generationConfig")
    assert not isinstance(config, dict) or "maxOutputTokens" not in config
    assert "capped" not in result.stderr


def test_a_max_output_tokens_above_what_the_model_writes_is_refused_before_the_call(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    args = (*SKY, "-p", "gemini", "-m", "gemini-2.5-pro", "--max-output-tokens")
    result = thoughtline(home, environ, *args, "70000")
    assert result.returncode == 1
    assert sim.requests == []
    assert (
        result.stderr.count(
            "REQUEST_INVALID: max_output_tokens is 70,000, more than gemini-2.5-pro writes in one "
            "call (65,536 output tokens at most); set max_output_tokens to 65,536 or less. No call "
            "was made."
        )
        == 1
    ), result.stderr
    # The model's max itself is sent as asked.
    most = thoughtline(home, environ, *args, "65536")
    assert most.returncode == 0, most.stderr
    (request,) = sim.requests
    assert request.body is not None
    assert request.body["generationConfig"]["maxOutputTokens"] == 65_536
