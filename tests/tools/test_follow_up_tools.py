"""A follow-up of a run whose tools came from ``--mcp-config``, through the real CLI
against the strict simulator, on every wire."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli.test_run_cli import thoughtline
from thoughtline.testing import SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # every test starts thoughtline and a server process

DEMO = {"command": sys.executable, "args": ["-m", "thoughtline.testing.demo_tools"]}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def mcp_json(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"demo": DEMO}}))
    return path


@pytest.mark.parametrize("provider", ["anthropic", "openai", "openrouter", "gemini", "deepseek", "ollama"])
def test_repro(home: Path, environ: dict[str, str], sim: Simulator, mcp_json: Path, provider: str) -> None:
    sim.default_transcript = None
    first = thoughtline(home, environ, "run", "-p", provider, "What time is it now in Tokyo?", "--mcp-config", str(mcp_json), "--tool", "demo", "--json")
    print(first.returncode, first.stderr)
    second = thoughtline(home, environ, "run", "-c", "and now?")
    print(second.returncode, second.stdout, second.stderr)
    for r in sim.requests:
        print(r.path, json.dumps(r.body)[-700:])
    assert False


def test_a_tool_call_on_a_turn_that_offers_no_tools_is_no_answer(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    # Models call tools they saw in earlier turns; such a call, alone, answers nothing.
    sim.script(Transcript(tool_calls=(SimToolCall(call_id="c1", name="demo__now", arguments="{}"),)))
    result = thoughtline(home, environ, "run", "Hello.")
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert (
        "task assistant failed: PROVIDER_EMPTY_CONTENT: The model called demo__now, which "
        "this turn does not offer, and gave no answer" in result.stderr
    )
    shown = json.loads(thoughtline(home, environ, "status", "--json").stdout)
    assert shown["status"] == "failed"
    assert shown["tasks"][0]["output"] is None


def test_a_blank_answer_is_no_answer(home: Path, environ: dict[str, str], sim: Simulator) -> None:
    sim.script(Transcript(answer=" \n "))
    result = thoughtline(home, environ, "run", "Hello.")
    assert result.returncode == 1, result.stderr
    assert "PROVIDER_EMPTY_CONTENT: The provider returned an empty answer." in result.stderr
