"""``thoughtline init``, commands whose extra is missing, and shell completion."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_run_cli import cli_env
from tests.support import refusal_lines
from thoughtline.cli.init_command import STARTER
from thoughtline.testing import Simulator

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command


def thoughtline(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "THOUGHTLINE_HOME": str(tmp_path / "home"), **env}
    environment.pop("THOUGHTLINE_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )


def test_init_writes_a_starter_config_that_loads_and_refuses_to_overwrite(
    tmp_path: Path,
) -> None:
    written = thoughtline(tmp_path, "init")
    assert written.returncode == 0, written.stderr
    config_file = tmp_path / "thoughtline.toml"
    assert config_file.read_text() == STARTER
    report = json.loads(thoughtline(tmp_path, "config", "--json").stdout)
    settings = {entry["key"]: entry for entry in report["settings"]}
    assert settings["orchestration.chain_of_thought"] == {
        "key": "orchestration.chain_of_thought",
        "value": "hidden",
        "source": str(config_file),
    }
    # The request cap is in the starter at its default, and reported where it came from.
    assert settings["orchestration.max_request_bytes"] == {
        "key": "orchestration.max_request_bytes",
        "value": 256 * 1024,
        "source": str(config_file),
    }
    config_file.write_text("# mine\n")
    again = thoughtline(tmp_path, "init")
    assert again.returncode == 2
    assert again.stderr == (
        "thoughtline: thoughtline.toml already exists; pass --force to overwrite it.\n"
    )
    assert config_file.read_text() == "# mine\n"
    forced = thoughtline(tmp_path, "init", "--force")
    assert forced.returncode == 0, forced.stderr
    assert config_file.read_text() == STARTER


# A fresh interpreter where the extra's packages cannot be imported.
BLOCKED = """
import sys
blocked = set(sys.argv[1].split(","))
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ImportError(name)
        return None
sys.meta_path.insert(0, Block())
sys.argv = ["thoughtline", *sys.argv[2:]]
from thoughtline.cli import main
main()
"""


@pytest.mark.parametrize(
    ("command", "blocked", "extra", "module"),
    [
        ("serve", "fastapi,uvicorn", "server", "fastapi"),
        ("mcp", "mcp", "mcp", "mcp"),
        ("acp", "acp", "acp", "acp"),
    ],
)
@pytest.mark.parametrize("help_flag", [False, True])
def test_a_missing_extra_is_named_the_same_way_for_every_command(
    tmp_path: Path, command: str, blocked: str, extra: str, module: str, help_flag: bool
) -> None:
    args = [command, "--help"] if help_flag else [command]
    result = subprocess.run(
        [sys.executable, "-c", BLOCKED, blocked, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "THOUGHTLINE_HOME": str(tmp_path / "home")},
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    needs = (
        f"'thoughtline {command}' needs the [{extra}] extra: "
        f"pip install 'thoughtline[{extra}]' (missing module {module})."
    )
    if help_flag:  # --help works without the extra, and names it
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
        assert result.stdout.startswith(f"Usage: thoughtline {command} ")
        assert needs in " ".join(result.stdout.split())
        return
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"thoughtline: {needs}\n"


TOOL_ARGS = ("--mcp-config", "mcp.json", "--tool", "time")


def test_a_tool_run_without_the_mcp_extra_is_one_sentence_naming_it(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    (tmp_path / "mcp.json").write_text(
        json.dumps({"mcpServers": {"time": {"command": sys.executable, "args": ["-m", "x"]}}})
    )
    result = subprocess.run(
        [sys.executable, "-c", BLOCKED, "mcp,mcp_types", "run", "Time?", *TOOL_ARGS],
        capture_output=True,
        text=True,
        env=cli_env(home, environ),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert refusal_lines(result.stderr, "time") == [
        "thoughtline: Tool servers (time) need the [mcp] extra: "
        "pip install 'thoughtline[mcp]' (missing module mcp)."
    ]
    assert sim.requests == []


def test_shell_completion_completes_commands(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("thoughtline")
    result = subprocess.run(
        [str(script)],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "THOUGHTLINE_HOME": str(tmp_path / "home"),
            "_THOUGHTLINE_COMPLETE": "bash_complete",
            "COMP_WORDS": "thoughtline tr",
            "COMP_CWORD": "1",
        },
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["plain,trace"]


def test_without_mcp_the_demo_says_what_its_tool_loop_needs(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", BLOCKED, "mcp", "demo"],
        capture_output=True,
        text=True,
        env={**os.environ, "THOUGHTLINE_HOME": str(tmp_path / "home"), "COLUMNS": "160"},
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "One tool loop" not in result.stdout
    assert "The tool loop needs the mcp package: pip install 'thoughtline[testing]'." in (
        result.stdout
    )


def test_without_mcp_the_demo_tool_server_is_one_sentence(tmp_path: Path) -> None:
    blocked_server = BLOCKED.replace(
        "from thoughtline.cli import main\nmain()",
        "from thoughtline.testing.demo_tools import main\nsys.exit(main([]))",
    )
    result = subprocess.run(
        [sys.executable, "-c", blocked_server, "mcp"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "The demo tools need the mcp package: pip install 'thoughtline[testing]'.\n"
    )
