"""``thoughtline simulate --script FILE`` as a user runs it: the simulator replaying a
scripted conversation in one process, ``thoughtline run`` in another with the pasted
export lines, the real demo MCP server called for the scripted tool calls."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_simulate import Simulate, exports, free_port, thoughtline

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLE = REPOSITORY / "examples" / "sim-script.toml"
MCP_CONFIG = json.dumps(
    {
        "mcpServers": {
            "demo": {"command": sys.executable, "args": ["-m", "thoughtline.testing.demo_tools"]}
        }
    }
)


class Starter:
    """Starts ``simulate --script`` for a fresh home; stops what it started."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.started: list[Simulate] = []

    def __call__(self, script: Path) -> tuple[dict[str, str], list[str]]:
        """Start ``simulate --script SCRIPT``; its export lines as variables, and its
        comment lines."""
        simulate = Simulate(self.home, "--port", str(free_port()), "--script", str(script))
        self.started.append(simulate)
        printed = simulate.until("# Ctrl-C")
        env = exports([line for line in printed if line.startswith("export ")])
        return env, [line for line in printed if line.startswith("#")]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Starter]:
    starter = Starter(tmp_path / "home")
    yield starter
    for simulate in starter.started:
        simulate.kill()


def test_the_example_script_replays_a_tool_loop_with_its_reasoning_and_answer(
    start: Starter, tmp_path: Path
) -> None:
    home = start.home
    env, comments = start(EXAMPLE)
    assert comments[0] == (
        f"# Replaying {EXAMPLE} (2 turns): each conversation gets its turns in order."
    )
    mcp = tmp_path / "mcp.json"
    mcp.write_text(MCP_CONFIG, encoding="utf-8")
    run = thoughtline(
        home,
        env,
        "run",
        "How long until 18:00 in Tokyo?",
        "--mcp-config",
        str(mcp),
        "--tool",
        "demo",
        "--chain-of-thought",
        "surface",
        "--json",
    )
    assert run.returncode == 0, run.stderr
    [task] = json.loads(run.stdout)["tasks"]
    assert task["output"] == (
        "18:00 is minute 1080 of the day in Tokyo; subtract the current time the clock gave."
    )
    # The scripted calls reached the real tool server ("demo.now" is its "demo__now").
    calls = [
        (call["server"], call["name"], json.loads(call["arguments"])) for call in task["tool_calls"]
    ]
    assert calls == [
        ("demo", "now", {"timezone": "Asia/Tokyo"}),
        ("demo", "calculate", {"expression": "18 * 60"}),
    ]
    assert [call["status"] for call in task["tool_calls"]] == ["done", "done"]
    assert task["reasoning"] == (
        "The user asks about Tokyo. I need the current time there, then some arithmetic.\n\n"
        "Both tools answered; I subtract the current minutes from 1080."
    )


@pytest.mark.parametrize(
    ("endpoint", "label"),
    [
        ("anthropic", "Anthropic"),
        ("openai", "OpenAI Responses API"),
        ("gemini", "Gemini"),
        ("deepseek", "DeepSeek"),
    ],
)
def test_a_follow_up_goes_on_in_the_script_and_past_its_end_fails_in_the_providers_shape(
    start: Starter, tmp_path: Path, endpoint: str, label: str
) -> None:
    home = start.home
    script = tmp_path / "two.toml"
    script.write_text(
        '[[turn]]\nanswer = "First answer."\n\n[[turn]]\nanswer = "Second answer."\n',
        encoding="utf-8",
    )
    env, _ = start(script)
    # Two roles are two conversations: each gets turn 1.
    first = thoughtline(
        home, env, "run", "Go", "-r", "architect", "-r", "reviewer", "-p", endpoint, "--json"
    )
    assert first.returncode == 0, first.stderr
    assert [task["output"] for task in json.loads(first.stdout)["tasks"]] == [
        "First answer.",
        "First answer.",
    ]
    single = thoughtline(home, env, "run", "Go on", "-p", endpoint, "--json")
    assert json.loads(single.stdout)["tasks"][0]["output"] == "First answer."
    follow_up = thoughtline(home, env, "run", "And then?", "-c", "--json")
    assert follow_up.returncode == 0, follow_up.stderr
    assert json.loads(follow_up.stdout)["tasks"][0]["output"] == "Second answer."
    past = thoughtline(home, env, "run", "And after that?", "-c", "--json")
    assert past.returncode == 1
    [task] = json.loads(past.stdout)["tasks"]
    assert task["error"]["code"] == "PROVIDER_BAD_REQUEST"
    assert task["error"]["message"].startswith(
        f"{label} returned HTTP 400: The simulator's script {script} has no turn 3: its "
        "2 turns were used up by this conversation; add a [[turn]] to the script, or start "
        "a new conversation."
    )
    assert "Traceback" not in past.stderr


def test_turns_for_one_model_answer_that_model_which_is_then_served(
    start: Starter, tmp_path: Path
) -> None:
    home = start.home
    script = tmp_path / "models.toml"
    script.write_text(
        '[[turn]]\nmodel = "my-finetune"\nreasoning = "Mine."\nanswer = "From my model."\n\n'
        '[[turn]]\nanswer = "From any model."\n',
        encoding="utf-8",
    )
    env, _ = start(script)
    mine = thoughtline(home, env, "run", "Hi", "-p", "openai", "-m", "my-finetune", "--json")
    assert mine.returncode == 0, mine.stderr
    assert json.loads(mine.stdout)["tasks"][0]["output"] == "From my model."
    other = thoughtline(home, env, "run", "Hi", "--json")
    assert json.loads(other.stdout)["tasks"][0]["output"] == "From any model."
    # The script serves its own ids, not every id.
    typo = thoughtline(home, env, "run", "Hi", "-p", "openai", "-m", "my-finetun", "--json")
    assert json.loads(typo.stdout)["tasks"][0]["error"]["code"] == "PROVIDER_NOT_FOUND"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[[turn]\n", "is not valid TOML: Expected ']]' at the end of an array declaration"),
        ("answer = 'x'\n", "has an unknown key 'answer'; it holds only [[turn]] tables."),
        ("", "has no turns: add one [[turn]] table per model turn"),
        ("[[turn]]\nanswer = 3\n", "turn 1: answer must be a string."),
        (
            '[[turn]]\nanswer = "x"\n[[turn]]\ntool_call = []\n',
            "turn 2: unknown key 'tool_call'; a turn takes answer, reasoning, tool_calls",
        ),
        ('[[turn]]\nreasoning = "only this"\n', "turn 1: a turn needs an answer or tool_calls."),
        (
            '[[turn]]\nanswer = "x"\nreasoning = [{ kind = "secret", text = "y" }]\n',
            "turn 1: reasoning[0]: kind must be one of summary, raw, redacted, encrypted, "
            "got 'secret'.",
        ),
        (
            "[[turn]]\ntool_calls = [{ name = 'demo.now', arguments = 'UTC' }]\n",
            "turn 1: tool_calls[0]: arguments must be a table",
        ),
        ("[[turn]]\nanswer = 'x'\ninput_tokens = -1\n", "turn 1: input_tokens must be a whole"),
    ],
)
def test_a_bad_script_is_one_sentence_naming_the_file_and_key_before_serving(
    tmp_path: Path, text: str, said: str
) -> None:
    script = tmp_path / "bad.toml"
    script.write_text(text, encoding="utf-8")
    refused = thoughtline(tmp_path / "home", {}, "simulate", "--port", "0", "--script", str(script))
    assert refused.returncode == 2
    assert refused.stdout == ""  # no export lines: nothing was served
    assert refused.stderr.startswith(f"thoughtline: The script {script}")
    assert said in refused.stderr
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr


def test_a_script_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    refused = thoughtline(tmp_path / "home", {}, "simulate", "--script", str(missing))
    assert refused.returncode == 2
    assert refused.stderr == (
        f"thoughtline: Cannot read the script {missing}: No such file or directory.\n"
    )


def test_a_turns_reasoning_kinds_and_token_counts_are_replayed(
    start: Starter, tmp_path: Path
) -> None:
    home = start.home
    script = tmp_path / "kinds.toml"
    script.write_text(
        "[[turn]]\n"
        "reasoning = [\n"
        '  { kind = "summary", text = "First I look." },\n'
        '  { kind = "redacted", signature = "EmwKAhgBEgy3redacted==" },\n'
        "]\n"
        'answer = "Done."\n'
        "input_tokens = 12\n"
        "reasoning_tokens = 30\n",
        encoding="utf-8",
    )
    env, _ = start(script)
    run = thoughtline(home, env, "run", "x", "--chain-of-thought", "surface", "--json")
    assert run.returncode == 0, run.stderr
    [task] = json.loads(run.stdout)["tasks"]
    assert task["output"] == "Done."
    assert task["reasoning"] == "First I look."  # the redacted block carries no text
    assert task["reasoning_status"] == "shown"
    assert task["usage"]["input_tokens"] == 12
    assert task["usage"]["reasoning_tokens"] == 30
    assert "EmwKAhgBEgy3redacted==" not in run.stdout + run.stderr
