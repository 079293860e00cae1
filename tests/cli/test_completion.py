"""Shell completion as a shell asks for it: the real ``thoughtline`` process with
click's completion variables set, completing run ids from the store, providers, roles
and model ids; with no store it completes nothing and creates none."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_run_cli import cli_env, thoughtline
from thoughtline.testing import Simulator

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def complete(home: Path, environ: dict[str, str], words: str) -> list[str]:
    """What bash would be offered for the last word of ``words``."""
    env = cli_env(home, environ)
    env.update(
        _THOUGHTLINE_COMPLETE="bash_complete",
        COMP_WORDS=words,
        COMP_CWORD=str(len(words.split(" ")) - 1),
    )
    done = subprocess.run(
        [sys.executable, "-c", "from thoughtline.cli import main; main()"],
        capture_output=True,
        text=True,
        env=env,
        cwd=home.parent,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return [line.split(",", 1)[1] for line in done.stdout.splitlines() if line]


def test_run_ids_providers_roles_and_models_complete(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    assert complete(home, environ, "thoughtline status ") == []  # no store yet
    assert not (home / "thoughtline.db").exists()

    started = [thoughtline(home, environ, "run", f"request {n}", "--json") for n in range(2)]
    ids = [json.loads(done.stdout)["id"] for done in started]
    shorts = [json.loads(done.stdout)["short_id"] for done in started]
    offered = complete(home, environ, "thoughtline status ")
    assert offered[0] == "latest"
    assert offered[1:] == shorts[::-1]  # the short ids people see, newest first
    assert complete(home, environ, f"thoughtline status {shorts[0][:3]}") == [shorts[0]]
    assert complete(home, environ, f"thoughtline export {ids[0][:-3]}") == [ids[0]]
    assert complete(home, environ, f"thoughtline trace {ids[1][4:-3]}") == [ids[1]]
    assert complete(home, environ, f"thoughtline run -c x --continues {ids[0]}") == [ids[0]]

    assert complete(home, environ, "thoughtline run --provider open") == [
        "openai",
        "openrouter",
    ]
    assert "architect" in complete(home, environ, "thoughtline run --role ")
    specialists = home.parent / "specialists"
    specialists.mkdir()
    (specialists / "translator.md").write_text("You translate.", encoding="utf-8")
    assert complete(home, environ, "thoughtline run -r trans") == ["translator"]
    models = complete(home, environ, "thoughtline run -p anthropic -m claude-")
    assert models and all(model.startswith("claude-") for model in models)
    assert complete(home, environ, "thoughtline run -p deepseek -m claude-") == []


def test_completion_prints_a_script_each_shell_loads() -> None:
    for shell, marker in (("bash", "complete -o"), ("zsh", "compdef"), ("fish", "complete")):
        done = subprocess.run(
            [sys.executable, "-m", "thoughtline.cli", "completion", shell],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "_THOUGHTLINE_COMPLETE" in done.stdout and marker in done.stdout
