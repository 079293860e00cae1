"""A follow-up carries its tools: a run records the tool servers it used (without
secrets), and a follow-up starts them again or refuses before anything is stored.
Through the real CLI against the strict simulator, on every wire it offers, and through
the Python API."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import thoughtline
from tests.cli.test_run_cli import cli_env
from tests.cli.test_run_cli import thoughtline as cli
from tests.conftest import CANARY_KEY
from tests.support import all_bytes_under
from thoughtline import Orchestrator, ThoughtlineError
from thoughtline.providers.redaction import REDACTED
from thoughtline.testing import SimToolCall, Simulator, Transcript

DEMO = {"command": sys.executable, "args": ["-m", "thoughtline.testing.demo_tools"]}
ASKED = "What time is it now in Tokyo?"
WIRES = ("anthropic", "openai", "openrouter", "gemini", "deepseek", "ollama")
SECRET = "tl-canary-mcp-env-5d1c0a77e9"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def mcp_json(path: Path, **servers: object) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def offered(body: object) -> str:
    """The tools a request offers, as text (each wire spells them its own way)."""
    assert isinstance(body, dict)
    return json.dumps(body.get("tools", []))


def stored_runs(home: Path) -> int:
    with sqlite3.connect(home / "thoughtline.db") as conn:
        return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


@pytest.mark.slow
@pytest.mark.parametrize("provider", WIRES)
def test_a_follow_up_of_an_mcp_config_run_starts_its_server_again(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path, provider: str
) -> None:
    sim.default_transcript = None  # the default model: it calls the fitting demo tool
    config = mcp_json(tmp_path / "mcp.json", demo=DEMO)
    first = cli(
        home, environ, "run", "-p", provider, ASKED, "--mcp-config", str(config), "--tool", "demo"
    )
    assert first.returncode == 0, first.stderr
    assert "demo__now returned" in first.stdout
    before = len(sim.requests)

    # No --mcp-config: the server comes back from the run's record.
    second = cli(home, environ, "run", "-c", "And what time is it now in Paris?")
    assert second.returncode == 0, second.stderr
    assert second.stderr.splitlines()[0] == "starting tool servers: demo…"
    assert "demo__now returned" in second.stdout and "Europe/Paris" in second.stdout
    follow_up = sim.requests[before]
    assert "demo__now" in offered(follow_up.body)
    # The earlier tool turn went along (the strict simulator took it).
    assert "Asia/Tokyo" in json.dumps(follow_up.body)


AS_TEXT = {"anthropic": "Anthropic's Messages API", "openrouter": "OpenRouter"}
"""The wires that refuse tool turns in a request offering no tools: they go as text."""


@pytest.mark.slow
@pytest.mark.parametrize("provider", WIRES)
def test_a_follow_up_that_offers_no_tools_sends_a_valid_history_on_every_wire(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path, provider: str
) -> None:
    sim.default_transcript = None
    config = mcp_json(tmp_path / "mcp.json", demo=DEMO)
    first = cli(
        home, environ, "run", "-p", provider, ASKED, "--mcp-config", str(config), "--tool", "demo"
    )
    assert first.returncode == 0, first.stderr
    # A run stored before servers were recorded: its follow-up goes on without tools.
    with sqlite3.connect(home / "thoughtline.db") as conn:
        conn.execute("UPDATE runs SET tool_servers_json = NULL")
    before = len(sim.requests)

    second = cli(home, environ, "run", "-c", "Thanks. Which city was that?", "--json")
    assert second.returncode == 0, second.stderr
    (task,) = json.loads(second.stdout)["tasks"]
    assert task["output"] and task["status"] == "done"
    (request,) = sim.requests[before:]
    sent = json.dumps(request.body)
    assert offered(request.body) == "[]"
    assert "Asia/Tokyo" in sent  # the earlier tool turn went along
    if provider in AS_TEXT:
        assert "[called demo__now" in sent and "[demo__now returned: " in sent
        assert (
            f"The earlier tool calls and results went as text: {AS_TEXT[provider]} refuses "
            "them in a request that offers no tools." in task["reasoning_notice"]
        )
    else:
        assert "[called demo__now" not in sent
        assert "went as text" not in task["reasoning_notice"]


@pytest.mark.slow
def test_a_follow_up_whose_mcp_json_is_gone_is_refused_before_anything_is_stored(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    sim.default_transcript = None
    config = mcp_json(tmp_path / "mcp.json", demo=DEMO)
    first = cli(home, environ, "run", ASKED, "--mcp-config", str(config), "--tool", "demo")
    assert first.returncode == 0, first.stderr
    config.unlink()
    requests = len(sim.requests)

    second = cli(home, environ, "run", "-c", "And now?")
    assert second.returncode == 2, second.stderr
    assert second.stderr.startswith("thoughtline: Run ")
    assert f"used the MCP server 'demo' from {config}, which no longer reads" in second.stderr
    assert "restore it, or define 'demo' in the config, to continue it." in second.stderr
    assert len(sim.requests) == requests
    assert stored_runs(home) == 1

    # The file defines it no more: refused too.
    mcp_json(config, other=DEMO)
    third = cli(home, environ, "run", "-c", "And now?")
    assert third.returncode == 2
    assert f"from {config}, which no longer defines it" in third.stderr
    assert stored_runs(home) == 1


@pytest.mark.slow
def test_a_follow_up_whose_server_variable_is_unset_is_refused_and_no_value_is_stored(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    sim.default_transcript = None
    # A loaded provider key in its args (a directory's name) is not recorded either.
    root = tmp_path / f"root-{CANARY_KEY}"
    root.mkdir()
    config = mcp_json(
        tmp_path / "mcp.json",
        demo={
            **DEMO,
            "args": [*DEMO["args"], "--root", str(root)],  # type: ignore[misc]
            "env": {"DEMO_TOKEN": "${DEMO_SECRET}", "PLAIN": SECRET},
        },
    )
    first = cli(
        home,
        {**environ, "DEMO_SECRET": SECRET},
        "run",
        ASKED,
        "--mcp-config",
        str(config),
        "--tool",
        "demo",
    )
    assert first.returncode == 0, first.stderr
    # The record names the variables, never their values.
    with sqlite3.connect(home / "thoughtline.db") as conn:
        (recorded,) = conn.execute("SELECT tool_servers_json FROM runs").fetchone()
    (server,) = json.loads(recorded)
    assert server["origin"] == "mcp.json" and server["env"] == ["DEMO_TOKEN", "PLAIN"]
    assert server["file"] == str(config)
    assert server["args"][-1] == str(tmp_path / f"root-{REDACTED}")
    stored = all_bytes_under(home)
    assert SECRET.encode() not in stored and CANARY_KEY.encode() not in stored

    second = cli(home, environ, "run", "-c", "And now?")
    assert second.returncode == 2, second.stderr
    assert "whose DEMO_TOKEN takes ${DEMO_SECRET}, which is no longer set; set DEMO_SECRET" in (
        second.stderr
    )
    assert stored_runs(home) == 1
    third = cli(home, {**environ, "DEMO_SECRET": SECRET}, "run", "-c", "And now?")
    assert third.returncode == 0, third.stderr


@pytest.mark.slow
def test_a_follow_up_of_a_configured_server_that_was_removed_is_refused(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    sim.default_transcript = None
    toml = home.parent / "thoughtline.toml"
    toml.write_text(
        f"[mcp_servers.demo]\ncommand = {json.dumps(sys.executable)}\n"
        'args = ["-m", "thoughtline.testing.demo_tools"]\n'
    )
    first = cli(home, environ, "run", ASKED, "--tool", "demo")
    assert first.returncode == 0, first.stderr
    toml.write_text("")
    second = cli(home, environ, "run", "-c", "And now?")
    assert second.returncode == 2, second.stderr
    assert (
        f"used the MCP server 'demo' from [mcp_servers.demo] ({toml}), which the config no "
        "longer defines; add [mcp_servers.demo] again" in second.stderr
    )
    assert stored_runs(home) == 1


def test_a_tool_call_on_a_turn_that_offers_no_tools_is_no_answer(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    # Models call tools they saw in earlier turns; such a call, alone, answers nothing.
    sim.script(
        Transcript(tool_calls=(SimToolCall(call_id="c1", name="demo__now", arguments="{}"),))
    )
    result = cli(home, environ, "run", "Hello.")
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert (
        "task assistant failed: PROVIDER_EMPTY_CONTENT: The model called demo__now, which "
        "this turn does not offer, and gave no answer" in result.stderr
    )
    shown = json.loads(cli(home, environ, "status", "--json").stdout)
    assert shown["status"] == "failed"
    assert shown["tasks"][0]["output"] is None


def test_a_blank_answer_is_no_answer(home: Path, environ: dict[str, str], sim: Simulator) -> None:
    sim.script(Transcript(answer=" \n "))
    result = cli(home, environ, "run", "Hello.")
    assert result.returncode == 1, result.stderr
    assert "PROVIDER_EMPTY_CONTENT: The provider returned an empty answer." in result.stderr


# -- the Python API ----------------------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture
async def orchestrator(environ: dict[str, str], tmp_path: Path) -> AsyncIterator[Orchestrator]:
    env = {**environ, "THOUGHTLINE_HOME": str(tmp_path / "home")}
    async with Orchestrator.open(thoughtline.Config(path=None), environ=env) as opened:
        yield opened


async def test_a_conversation_whose_callable_is_not_given_again_is_refused(
    orchestrator: Orchestrator, sim: Simulator
) -> None:
    sim.default_transcript = None
    conversation = orchestrator.conversation()
    first = await conversation.send("Add 2 and 3.", tools=[add])
    assert first.status == "completed", first.snapshot()
    assert [call.name for call in first.tasks[0].tool_calls or ()] == ["add"]
    requests = len(sim.requests)

    with pytest.raises(ThoughtlineError) as refused:
        await conversation.send("And 4 more?")
    assert refused.value.code == "TOOL_SERVER_GONE"
    assert (
        "called the Python callables add; pass them again (tools=[add], through the library API)"
        in str(refused.value)
    )
    assert len(sim.requests) == requests
    assert len(orchestrator.store.list_runs()) == 1

    again = await conversation.send("And 4 more?", tools=[add])
    assert again.status == "completed", again.snapshot()
    assert "python__add" in offered(sim.requests[requests].body)


@pytest.mark.slow
def test_a_follow_up_in_another_directory_finds_a_relative_mcp_json(
    home: Path, environ: dict[str, str], sim: Simulator, tmp_path: Path
) -> None:
    sim.default_transcript = None
    mcp_json(home.parent / "mcp.json", demo=DEMO)  # the CLI runs in home's parent
    first = cli(home, environ, "run", ASKED, "--mcp-config", "mcp.json", "--tool", "demo")
    assert first.returncode == 0, first.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    second = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "run", "-c", "And what time is it now?"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=cli_env(home, environ),
        cwd=elsewhere,
        timeout=60,
        check=False,
    )
    assert second.returncode == 0, second.stderr
    assert "demo__now returned" in second.stdout
