"""``thoughtline run`` with tools, as a user runs it: real MCP servers from the package
index (``mcp-server-time``, ``mcp-server-git``) over stdio, the model simulated."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli.test_run_cli import thoughtline
from tests.tools.test_mcp_tools import TEST_SERVER, _config, _git_repository
from thoughtline.testing import SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # every test starts thoughtline and server processes

TIME_SERVER = f"""
[mcp_servers.time]
command = {json.dumps(sys.executable)}
args = ["-m", "mcp_server_time"]
"""
FINAL = Transcript(answer="It is late in UTC.")


def calling(name: str, arguments: dict[str, object]) -> Transcript:
    return Transcript(
        tool_calls=(SimToolCall(call_id="call_1", name=name, arguments=json.dumps(arguments)),)
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_run_with_a_tool_prints_each_call_and_the_snapshot_holds_it(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    _config(home, TIME_SERVER)
    sim.script(FINAL)
    sim.script(calling("time__get_current_time", {"timezone": "UTC"}), times=1)
    result = thoughtline(home, environ, "run", "What time is it?", "--tool", "time")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "It is late in UTC."
    # Piped: the servers it starts are named first, then a line per call, on stderr.
    assert result.stderr.splitlines()[0] == "starting tool servers: time…"
    assert 'task assistant: → time.get_current_time {"timezone":"UTC"}' in result.stderr
    assert "task assistant: ✓ time.get_current_time done" in result.stderr

    shown = thoughtline(home, environ, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    (task,) = json.loads(shown.stdout)["tasks"]
    assert task["steps"] == 2
    (call,) = task["tool_calls"]
    assert (call["server"], call["name"], call["status"]) == ("time", "get_current_time", "done")
    assert json.loads(call["result"])["timezone"] == "UTC"
    # The model was sent the real server's answer.
    assert json.loads(call["result"])["datetime"] in json.dumps(sim.requests[1].body)


def test_a_role_reads_a_git_repository(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    repository = _git_repository(tmp_path / "repo")
    _config(
        home,
        f"""
[mcp_servers.git]
command = {json.dumps(sys.executable)}
args = ["-m", "mcp_server_git", "--repository", {json.dumps(str(repository))}]

[roles.reader]
prompt = "You read the repository before you answer."
tools = ["git.git_log"]
max_steps = 4
""",
    )
    sim.script(Transcript(answer="One commit."))
    sim.script(calling("git__git_log", {"repo_path": str(repository)}), times=1)
    result = thoughtline(home, environ, "run", "How many commits?", "--role", "reader", "--json")
    assert result.returncode == 0, result.stderr
    (task,) = json.loads(result.stdout)["tasks"]
    (call,) = task["tool_calls"]
    assert call["status"] == "done", call
    assert "first commit" in call["result"]
    # Only the tool the role names was offered.
    offered = json.dumps(sim.requests[0].body["tools"])  # type: ignore[index]
    assert "git__git_log" in offered and "git__git_status" not in offered


def test_an_mcp_json_adds_a_server_and_max_steps_limits_the_loop(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    mcp_json = tmp_path / "mcp.json"
    mcp_json.write_text(
        json.dumps({"mcpServers": {"probe": {"command": sys.executable, "args": [TEST_SERVER]}}})
    )
    sim.script(calling("probe__repeat", {"text": "a", "times": 2}))  # calls on every step
    result = thoughtline(
        home,
        environ,
        "run",
        "Loop.",
        "--mcp-config",
        str(mcp_json),
        "--tool",
        "probe.repeat",
        "--max-steps",
        "2",
    )
    assert result.returncode == 1
    assert "MAX_STEPS_REACHED" in result.stderr
    assert len(sim.requests) == 2


@pytest.mark.parametrize(
    ("args", "config", "said"),
    [
        (("--tool", "nosuch"), TIME_SERVER, "names no configured MCP server"),
        (("--tool", "time."), TIME_SERVER, "names no tool after the dot"),
        (
            ("--role", "engineer"),
            TIME_SERVER + '\n[roles.engineer]\nprompt = "p"\ntools = ["nosuch.tool"]\n',
            "roles.engineer.tools",
        ),
        (
            ("--max-steps", "0"),
            TIME_SERVER,
            "max_steps must be an integer from 1 to 1000, got 0 (--max-steps).",
        ),
    ],
)
def test_a_bad_tool_name_is_one_sentence_and_exit_2_before_anything_is_stored(
    home: Path,
    environ: dict[str, str],
    sim: Simulator,
    args: tuple[str, ...],
    config: str,
    said: str,
) -> None:
    _config(home, config)
    result = thoughtline(home, environ, "run", "Hi.", *args)
    assert result.returncode == 2, result.stderr
    assert said in result.stderr
    assert "Traceback" not in result.stderr
    assert sim.requests == []
    assert json.loads(thoughtline(home, environ, "runs", "--json").stdout) in ([], {"runs": []})
