"""A model whose answer text starts with a ``<think>`` block, and no reasoning field, on
every built-in endpoint whose server may leave the block there, through the command line
as a user runs it against the simulator.

In ``hidden`` mode the block is reasoning and dropped: the canary inside it reaches no
output (``run``, ``status``, ``runs``, ``export``, ``trace``) and no byte under
THOUGHTLINE_HOME, the raw exchange layer included. In ``surface`` mode it is shown as
the task's reasoning, never as its answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_run_cli import thoughtline
from tests.support import all_bytes_under
from thoughtline.testing import Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

CANARY = "CANARY-THINK-TAG-7c2d"
ANSWER = "The final answer, with no reasoning in it."
THINKING = Transcript(
    answer=f"\n<think>\nWeighing it; {CANARY} marks this thought.\n</think>\n\n{ANSWER}",
    chunk_chars=5,  # the tags cut across deltas
)
ENDPOINTS = {
    "llamacpp": "qwen3-8b-q4_k_m.gguf",
    "vllm": "Qwen/Qwen3-8B",
    "deepseek": "deepseek-chat",
    "ollama": "qwen3:8b",
    "openrouter": "deepseek/deepseek-r1",
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (tmp_path / "thoughtline.toml").write_text("[trace]\nprovider_raw = true\n")
    return home


@pytest.mark.parametrize("provider", ENDPOINTS)
def test_hidden_mode_drops_a_leading_think_block_everywhere(
    home: Path, sim: Simulator, environ: dict[str, str], provider: str
) -> None:
    sim.script(THINKING)
    run = ("run", "Explain.", "-p", provider, "-m", ENDPOINTS[provider], "--chain-of-thought")
    run = (*run, "hidden")
    piped = thoughtline(home, environ, *run)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.strip() == ANSWER
    as_json = thoughtline(home, environ, *run, "--json")
    assert as_json.returncode == 0, as_json.stderr
    snapshot = json.loads(as_json.stdout)
    task = snapshot["tasks"][0]
    assert task["output"] == ANSWER
    assert task["reasoning"] in (None, "", [])
    run_id = snapshot["id"]
    outputs = [
        piped,
        as_json,
        thoughtline(home, environ, "status"),
        thoughtline(home, environ, "status", run_id, "--json"),
        thoughtline(home, environ, "runs"),
        thoughtline(home, environ, "runs", "--json"),
        thoughtline(home, environ, "export", run_id),
        thoughtline(home, environ, "export", run_id, "--format", "json"),
        thoughtline(home, environ, "trace", run_id),
        thoughtline(home, environ, "trace", run_id, "--json"),
    ]
    for result in outputs:
        assert result.returncode == 0, (result.args, result.stderr)
        assert CANARY not in result.stdout + result.stderr, result.args
        assert "<think>" not in result.stdout + result.stderr, result.args
    assert CANARY.encode() not in all_bytes_under(home)


@pytest.mark.parametrize("provider", ENDPOINTS)
def test_surface_mode_shows_a_leading_think_block_as_reasoning(
    home: Path, sim: Simulator, environ: dict[str, str], provider: str
) -> None:
    sim.script(THINKING)
    run = ("run", "Explain.", "-p", provider, "-m", ENDPOINTS[provider], "--chain-of-thought")
    run = (*run, "surface")
    result = thoughtline(home, environ, *run, "--json")
    assert result.returncode == 0, result.stderr
    task = json.loads(result.stdout)["tasks"][0]
    assert task["output"] == ANSWER
    assert f"Weighing it; {CANARY} marks this thought." in json.dumps(task["reasoning"])
    assert task["reasoning_status"] == "shown"
