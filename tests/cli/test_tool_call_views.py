"""A tool run's calls and reasoning after it ended, as a user sees them: the final view of
``thoughtline run`` on a terminal, ``thoughtline status`` and ``thoughtline export``
list each call by step (tool, arguments, status, time, result) and label each step's
reasoning, while what a tool or model wrote stays inert. Real processes, the test MCP
server over stdio, the model simulated."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.cli.test_run_cli import thoughtline
from tests.cli.test_terminal import MODEL_SEQUENCES, run_with_terminal
from tests.tools.test_mcp_tools import TEST_SERVER, _config
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

CANARY = "CANARY-STEPS-41d9"
PROBE = f"""
[mcp_servers.probe]
command = {json.dumps(sys.executable)}
args = [{json.dumps(TEST_SERVER)}]
"""
# What a tool may answer: rich markup, terminal sequences, HTML, and a fence of its own.
HOSTILE = (
    "[bold]loud[/bold] <script>x</script>\n"
    "title \x1b]0;pwned\x07 clear \x1b[2J colour \x1b[31mred\x1b[0m\n"
    "````\n# not a heading\n````"
)
# As the model writes them (the wire's JSON, compact).
HOSTILE_ARGUMENTS = json.dumps({"text": HOSTILE}, separators=(",", ":"))
CALM_ARGUMENTS = json.dumps({"text": "ab", "times": 3}, separators=(",", ":"))
ANSWER = "The tool said ababab."
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def step(text: str, *calls: SimToolCall, answer: str = "") -> Transcript:
    return Transcript(
        reasoning=(SimReasoning(kind="summary", text=text),), tool_calls=calls, answer=answer
    )


def two_steps(sim: Simulator) -> None:
    """Step 1 reasons and calls two tools; step 2 reasons and answers."""
    sim.script_turns(
        step(
            f"First look. {CANARY}-1",
            SimToolCall(call_id="call_1", name="probe__repeat", arguments=CALM_ARGUMENTS),
            SimToolCall(call_id="call_2", name="probe__echo", arguments=HOSTILE_ARGUMENTS),
        ),
        step(f"Now answer. {CANARY}-2", answer=ANSWER),
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    _config(tmp_path / "home", PROBE)
    return tmp_path / "home"


def run_two_steps(
    home: Path, environ: dict[str, str], sim: Simulator, mode: str = "surface"
) -> dict[str, object]:
    two_steps(sim)
    result = thoughtline(
        home, environ, "run", "Repeat.", "--tool", "probe", "--chain-of-thought", mode, "--json"
    )
    assert result.returncode == 0, result.stderr
    snapshot: dict[str, object] = json.loads(result.stdout)
    return snapshot


def test_status_lists_each_call_by_step_with_its_arguments_status_time_and_result(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    run_two_steps(home, environ, sim)
    shown = thoughtline(home, environ, "status")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    # Piped, the view is 80 columns wide: every line fits.
    assert max(len(line) for line in lines) <= 80, shown.stdout
    labels = [line for line in lines if line.startswith("step ")]
    assert labels == [
        "step 1 · reasoning (31 characters)",
        "step 1 · tool calls",
        "step 2 · reasoning (31 characters)",
    ]
    calls = lines[lines.index("step 1 · tool calls") + 1 : lines.index(labels[2]) - 1]
    assert re.fullmatch(r"✓ probe\.repeat done, \d+ ms", calls[0]), calls
    assert calls[1] == f"  arguments {CALM_ARGUMENTS}"
    assert calls[2] == "  result    ababab"
    assert re.fullmatch(r"✓ probe\.echo done, \d+ ms", calls[3]), calls
    # Arguments and result on one line each, cut to the width with an ellipsis.
    assert calls[4].startswith('  arguments {"text":"[bold]loud[/bold] <script>x</script>\\n')
    assert calls[4].endswith("…") and len(calls[4]) == 80
    assert calls[5].startswith("  result    [bold]loud[/bold] <script>x</script> title ␛]0;pwned␇")
    assert calls[5].endswith("…") and len(calls[5]) == 80
    assert len(calls) == 6
    # The reasoning of each step under its label, then the answer.
    assert lines[lines.index(labels[0]) + 1] == f"First look. {CANARY}-1"
    assert lines[lines.index(labels[2]) + 1] == f"Now answer. {CANARY}-2"
    assert lines[lines.index("answer") + 1] == ANSWER
    assert not any(sequence in shown.stdout for sequence in MODEL_SEQUENCES)
    # --json holds them whole, and the step of each reasoning part.
    shown = thoughtline(home, environ, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    (task,) = json.loads(shown.stdout)["tasks"]
    assert [(c["step"], c["name"], c["arguments"], c["result"]) for c in task["tool_calls"]] == [
        (1, "repeat", CALM_ARGUMENTS, "ababab"),
        (1, "echo", HOSTILE_ARGUMENTS, HOSTILE),
    ]
    assert [part["step"] for part in task["reasoning_parts"]] == [1, 2]


def test_the_final_view_on_a_terminal_lists_the_calls_and_obeys_no_tool_text(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    two_steps(sim)
    code, shown, _ = run_with_terminal(
        home, environ, "run", "Repeat.", "--tool", "probe", "--chain-of-thought", "surface"
    )
    assert code == 0, shown[-3000:]
    final = ANSI.sub("", shown[shown.rindex("step 1 · reasoning") :]).replace("\r\n", "\n")
    lines = final.splitlines()
    assert [line for line in lines if line.startswith("step ")] == [
        "step 1 · reasoning (31 characters)",
        "step 1 · tool calls",
        "step 2 · reasoning (31 characters)",
    ]
    assert re.search(r"^✓ probe\.repeat done, \d+ ms$", final, re.M), final
    assert f"  arguments {CALM_ARGUMENTS}\n  result    ababab\n" in final
    assert "  result    [bold]loud[/bold] <script>x</script> title ␛]0;pwned␇ clear ␛[2J" in final
    assert not any(sequence in shown for sequence in MODEL_SEQUENCES)
    assert "Traceback" not in shown


def test_export_shows_each_call_whole_in_fences_its_content_cannot_close(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    run_two_steps(home, environ, sim)
    record = thoughtline(home, environ, "export", "latest")
    assert record.returncode == 0, record.stderr
    text = record.stdout
    assert re.search(r"^#### step 1: probe\.repeat → done, \d+ ms$", text, re.M), text
    assert re.search(r"^#### step 1: probe\.echo → done, \d+ ms$", text, re.M), text
    # As a Markdown reader sees it: each step's reasoning, then each call's arguments and
    # result, each one code block holding exactly what was stored; the tool's text opens
    # no heading, HTML or emphasis of its own.
    tokens = MarkdownIt("commonmark").parse(text)
    blocks = [token.content.removesuffix("\n") for token in tokens if token.type == "fence"]
    assert blocks == [
        "Repeat.",
        f"First look. {CANARY}-1",
        f"Now answer. {CANARY}-2",
        CALM_ARGUMENTS,
        "ababab",
        HOSTILE_ARGUMENTS,
        HOSTILE,
    ]
    headings = [
        tokens[index + 1].content
        for index, token in enumerate(tokens)
        if token.type == "heading_open" and token.tag == "h4"
    ]
    assert headings[:2] == ["Step 1", "Step 2"]
    assert len(headings) == 4
    assert not [token for token in tokens if token.type.startswith("html")]


def test_a_tool_named_with_markdown_stays_text_in_the_export(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    # A tool the task does not have keeps the name the model wrote; it is refused.
    name = "evil_<b>x</b>_[link](http://e.example)_`code`_#"
    sim.script_turns(
        step("Try it.", SimToolCall(call_id="call_1", name=name, arguments="{}")),
        step("Give up.", answer="No."),
    )
    result = thoughtline(home, environ, "run", "Go.", "--tool", "probe.echo", "--json")
    assert result.returncode == 0, result.stderr
    record = thoughtline(home, environ, "export", "latest")
    assert record.returncode == 0, record.stderr
    tokens = MarkdownIt("commonmark").parse(record.stdout)
    (heading,) = [
        tokens[index + 1]
        for index, token in enumerate(tokens)
        if token.type == "heading_open" and tokens[index + 1].content.startswith("step 1:")
    ]
    assert heading.children is not None
    assert [child.type for child in heading.children] == ["text"]
    assert heading.children[0].content.startswith(f"step 1: {name} → denied (TOOL_NOT_FOUND)")


def test_hidden_lists_the_calls_by_step_and_no_reasoning(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    run_two_steps(home, environ, sim, mode="hidden")
    shown = thoughtline(home, environ, "status")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert [line for line in lines if line.startswith("step ")] == ["step 1 · tool calls"]
    assert CANARY not in shown.stdout
    record = thoughtline(home, environ, "export", "latest")
    assert record.returncode == 0, record.stderr
    assert CANARY not in record.stdout and "### Reasoning" not in record.stdout
    assert "#### step 1: probe.echo → done" in record.stdout
