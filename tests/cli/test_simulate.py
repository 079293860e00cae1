"""``thoughtline simulate`` and ``thoughtline demo`` as a new user meets them: the
simulator in one process, ``thoughtline run`` in another with the pasted export lines."""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.cli.test_run_cli import start_with_env
from tests.conftest import KEY_VARIABLES
from thoughtline.testing import Simulator
from thoughtline.testing.default_model import PLAIN_REASONING

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

CANARY_REASONING = PLAIN_REASONING  # the simulator's own reasoning
SKY = "(simulated claude-sonnet-4-6) On 'Why is the sky blue?': Here is a short, direct answer from the simulated model."


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a fresh terminal: no keys, no base URLs, a home of its own."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in KEY_VARIABLES and not key.endswith("_BASE_URL") and key != "OLLAMA_HOST"
    }
    env.pop("THOUGHTLINE_CONFIG", None)
    env["THOUGHTLINE_HOME"] = str(home)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def exports(lines: list[str]) -> dict[str, str]:
    """What a shell makes of the ``export NAME=VALUE`` lines (values need no unquoting)."""
    pairs = [line.removeprefix("export ").split("=", 1) for line in lines]
    return {name: value for name, value in pairs}


class Simulate:
    """``thoughtline simulate ARGS`` in the background, its stdout read line by line."""

    def __init__(self, home: Path, *args: str) -> None:
        # SIGINT at its default in the child, even when this runner ignores it.
        self.process = start_with_env(home, clean_env(home), "simulate", *args)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def until(self, last: str) -> list[str]:
        """The lines printed up to and including the one starting with ``last``."""
        seen: list[str] = []
        while True:
            line = self.lines.get(timeout=60)
            assert line is not None, f"simulate ended early: {seen}"
            seen.append(line)
            if line.startswith(last):
                return seen

    def stop(self, sig: signal.Signals) -> tuple[int, str]:
        self.process.send_signal(sig)
        code = self.process.wait(timeout=30)
        assert self.process.stderr is not None
        return code, self.process.stderr.read()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def thoughtline(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**clean_env(home), **env},
        cwd=home.parent,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_simulate_serves_the_runs_of_another_terminal_until_ctrl_c(
    tmp_path: Path, sig: signal.Signals
) -> None:
    home = tmp_path / "home"
    port = free_port()
    simulate = Simulate(home, "--port", str(port))
    try:
        printed = simulate.until("# Ctrl-C")
        export_lines = [line for line in printed if line.startswith("export ")]
        # The export lines come first, then what to try; all of it pastes into a shell.
        assert printed[: len(export_lines)] == export_lines
        assert all(line.startswith("#") for line in printed[len(export_lines) :])
        env = exports(export_lines)
        assert env["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{port}/anthropic"
        assert env["DEEPSEEK_BASE_URL"] == f"http://127.0.0.1:{port}/deepseek"
        assert env["ANTHROPIC_API_KEY"] == "simulated-key-not-a-credential"
        assert 'thoughtline run "Why is the sky blue?" --chain-of-thought surface' in "\n".join(
            printed
        )
        # --env prints the same lines and nothing else, for eval "$(...)".
        only = thoughtline(home, {}, "simulate", "--env", "--port", str(port))
        assert only.returncode == 0, only.stderr
        assert only.stdout.splitlines() == export_lines
        # Another terminal: the pasted variables, then the suggested command.
        run = thoughtline(
            home, env, "run", "Why is the sky blue?", "--chain-of-thought", "surface", "--json"
        )
        assert run.returncode == 0, run.stderr
        task = json.loads(run.stdout)["tasks"][0]
        assert task["output"] == SKY
        assert task["reasoning"] == CANARY_REASONING
        hidden = thoughtline(home, env, "run", "Why is the sky blue?")
        assert hidden.returncode == 0, hidden.stderr
        assert hidden.stdout == SKY + "\n"
        assert CANARY_REASONING not in hidden.stdout + hidden.stderr
        # The second suggested command: each answer names its model, role and request.
        roles = thoughtline(
            home,
            env,
            "run",
            "Plan a cache",
            "-r",
            "architect",
            "-r",
            "reviewer",
            "-p",
            "deepseek",
            "--json",
        )
        assert roles.returncode == 0, roles.stderr
        assert [task["output"] for task in json.loads(roles.stdout)["tasks"]] == [
            f"(simulated deepseek-reasoner, as {role}) On 'Plan a cache': Here is a short, "
            "direct answer from the simulated model."
            for role in ("architect", "reviewer")
        ]
        # The port is taken now: a second simulator says so in one sentence.
        busy = thoughtline(home, {}, "simulate", "--port", str(port))
        assert busy.returncode == 2
        assert busy.stdout == ""
        assert busy.stderr == (
            f"thoughtline: Port {port} on 127.0.0.1 is in use; give another with --port N "
            "(--port 0 takes any free one).\n"
        )
        code, errors = simulate.stop(sig)
        assert code == 0
        assert errors == ""
    finally:
        simulate.kill()


def test_simulate_refuses_a_model_id_its_provider_does_not_serve(tmp_path: Path) -> None:
    home = tmp_path / "home"
    simulate = Simulate(home, "--port", str(free_port()))
    try:
        env = exports([line for line in simulate.until("# Ctrl-C") if line.startswith("export ")])
        typo = thoughtline(home, env, "run", "hi", "-m", "claude-sonet-4-6", "--json")
        assert typo.returncode == 1, typo.stderr
        [task] = json.loads(typo.stdout)["tasks"]
        assert task["error"]["code"] == "PROVIDER_NOT_FOUND"
        assert task["error"]["message"] == (
            "Anthropic returned HTTP 404: model: claude-sonet-4-6. Check the model name and "
            "the base URL. Did you mean claude-sonnet-4-6?"
        )
    finally:
        simulate.kill()


def test_simulate_env_needs_a_port(tmp_path: Path) -> None:
    result = thoughtline(tmp_path / "home", {}, "simulate", "--env", "--port", "0")
    assert result.returncode == 2
    assert "--env needs the port the simulator serves; give --port N." in result.stderr
    assert result.stdout == ""


def test_demo_ends_with_one_run_in_full_and_three_commands_to_try(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = thoughtline(home, {"COLUMNS": "160"}, "demo")
    assert result.returncode == 0, result.stderr
    assert " chars" not in result.stdout
    tail = result.stdout[result.stdout.index("One run in full") :].splitlines()
    # The tool loop's call, with the time the demo server's clock read.
    clock = re.fullmatch(
        r'Tool call: demo\.now \{"timezone":"Asia/Tokyo"\} \(done\): '
        r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+09:00 \(Asia/Tokyo, \w+day\))",
        tail[7],
    )
    assert clock is not None, tail[7]
    assert tail == [
        "One run in full: anthropic claude-sonnet-4-6, chain_of_thought=surface.",
        "Reasoning (shown, the provider's summary):",
        CANARY_REASONING,
        "Answer:",
        "(simulated claude-sonnet-4-6, as engineer) On 'In two sentences: why keep a model's "
        "reasoning separate from its answer?': Here is a short, direct answer from the "
        "simulated model.",
        "",
        "One tool loop: anthropic claude-sonnet-4-6 with the demo MCP server (python -m "
        "thoughtline.testing.demo_tools), request 'What time is it in Tokyo?'.",
        tail[7],
        "Answer:",
        f"(simulated claude-sonnet-4-6) On 'What time is it in Tokyo?': demo__now returned: "
        f"{clock.group(1)}.",
        "",
        "Try next: thoughtline simulate serves these simulated providers until Ctrl-C and "
        "prints the lines to paste into another terminal; there:",
        '  thoughtline run "Why is the sky blue?" --chain-of-thought surface',
        '  thoughtline run "Plan a cache" -r architect -r reviewer -p deepseek',
        "  thoughtline trace latest",
    ]


REPOSITORY = Path(__file__).resolve().parents[2]


def readme_tool_loop_command() -> str:
    """The README offline quick start's tool-loop command, as written there."""
    readme = (REPOSITORY / "README.md").read_text(encoding="utf-8")
    start = readme.index("Then try it offline")
    block = readme[readme.index("```sh\n", start) + 6 : readme.index("```\n", start + 20)]
    (command,) = [line for line in block.splitlines() if "--mcp-config" in line]
    return command


def test_the_readme_quick_start_tool_loop_calls_the_demo_clock_and_quotes_it(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    command = readme_tool_loop_command()
    assert command == (
        '.venv/bin/thoughtline run "What time is it in Tokyo?" '
        "--mcp-config examples/mcp.json --tool demo"
    )
    if not (REPOSITORY / ".venv" / "bin" / "python").exists():
        pytest.skip("the README's commands run from a checkout set up with .venv")
    sim.default_transcript = None  # the default model, as `thoughtline simulate` serves it
    result = subprocess.run(
        shlex.split(command),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**clean_env(tmp_path / "home"), **environ},
        cwd=REPOSITORY,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert '→ demo.now {"timezone":"Asia/Tokyo"}' in result.stderr
    assert "✓ demo.now done" in result.stderr
    assert re.fullmatch(
        r"\(simulated claude-sonnet-4-6\) On 'What time is it in Tokyo\?': demo__now returned: "
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+09:00 \(Asia/Tokyo, \w+day\)\.\n",
        result.stdout,
    ), result.stdout
    tool_step, answer_step = sim.requests  # the model called the tool, then answered
    assert tool_step.body is not None and "demo__now" in json.dumps(tool_step.body)
    assert answer_step.body is not None and "(Asia/Tokyo, " in json.dumps(answer_step.body)
