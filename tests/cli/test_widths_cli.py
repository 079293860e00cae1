"""Every table the command line prints fits the output's width, one rule for every
command (a terminal's width, else ``$COLUMNS``, else 80 when piped), and never cuts an
identifier: run ids, roles, model ids, config keys, endpoint and variable names, tools."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_run_cli import cli_env
from thoughtline.testing import Simulator

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

LONG_MODEL = "accounts/fireworks/models/llama-v3p1-405b-instruct"
MCP_CONFIG = {
    "mcpServers": {
        "demo": {"command": sys.executable, "args": ["-m", "thoughtline.testing.demo_tools"]}
    }
}


def piped(
    home: Path, environ: dict[str, str], *args: str, columns: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``thoughtline ARGS`` with stdout and stderr piped, ``$COLUMNS`` unset (or set)."""
    env = cli_env(home, environ)
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = columns
    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=home.parent,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result


def table_of(text: str, first: str, last: str) -> list[str]:
    """The lines from the one starting with ``first`` to the next starting with ``last``
    (a run's table: from its title, ``run ID · status``, to its cost line)."""
    lines = text.splitlines()
    start = next(
        index
        for index, line in enumerate(lines)
        if line.startswith(first) and (first != "run " or " · " in line)
    )
    end = next(index for index, line in enumerate(lines[start:], start) if line.startswith(last))
    return lines[start : end + 1]


def assert_fits(lines: list[str], width: int, *identifiers: str) -> None:
    too_wide = [line for line in lines if len(line) > width]
    assert too_wide == [], "\n".join(too_wide)
    cut = [word for word in identifiers if not any(word in line for line in lines)]
    assert cut == [], "\n".join(lines)
    assert not any("…" in line for line in lines), "\n".join(lines)


def test_every_table_fits_80_piped_columns_without_cutting_an_identifier(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    roles = ("architect", "reviewer")
    two = piped(home, environ, "run", "Plan a cache", "-r", roles[0], "-r", roles[1])
    routed = piped(
        home, environ, "run", "hi", "-p", "openrouter", "-m", "anthropic/claude-sonnet-4.6"
    )
    listed = piped(home, environ, "runs").stdout.splitlines()
    assert_fits(listed, 80, "claude-sonnet-4-6", "anthropic/claude-sonnet-4.6")
    local = piped(home, environ, "run", "hi", "-p", "llamacpp", "-m", LONG_MODEL)
    runs = json.loads(piped(home, environ, "runs", "--json").stdout)
    short_ids = [run["short_id"] for run in runs]
    (home / "mcp.json").write_text(json.dumps(MCP_CONFIG), encoding="utf-8")

    # The run's closing table (stderr) and status's.
    for result in (two, routed, local):
        assert_fits(table_of(result.stderr, "run ", "cost "), 80, "task")
    assert_fits(table_of(two.stderr, "run ", "cost "), 80, short_ids[-1], *roles)
    status = piped(home, environ, "status").stdout
    assert_fits(table_of(status, f"run {short_ids[0]} · ", "cost "), 80, "assistant")

    # A model id too long to leave the request room: its column is left out, not cut.
    listed = piped(home, environ, "runs").stdout.splitlines()
    assert_fits(listed, 80, *short_ids)

    by_model = piped(home, environ, "usage", "--by", "model").stdout.splitlines()
    assert_fits(
        by_model,
        80,
        "anthropic/claude-sonnet-4-6",
        "openrouter/anthropic/claude-sonnet-4.6",
        f"llamacpp/{LONG_MODEL}",
    )
    by_role = piped(home, environ, "usage", "--by", "role").stdout.splitlines()
    assert_fits(by_role, 80, *roles)

    config = piped(home, environ, "config").stdout.splitlines()
    report = json.loads(piped(home, environ, "config", "--json").stdout)
    keys = [setting["key"] for setting in report["settings"]]
    assert "orchestration.chain_of_thought" in keys
    variables = [endpoint["api_key_env"] for endpoint in report["endpoints"]]
    assert "ANTHROPIC_API_KEY" in variables
    names = [endpoint["name"] for endpoint in report["endpoints"]]
    assert_fits(config, 80, *keys, *names, *(name for name in variables if name))

    providers = piped(home, environ, "providers").stdout.splitlines()
    families = json.loads(piped(home, environ, "providers", "--json").stdout)["families"]
    assert_fits(providers, 80, *names, *(family["family"] for family in families))

    assert_fits(piped(home, environ, "models").stdout.splitlines(), 80, "claude-sonnet-4-6")
    assert_fits(piped(home, environ, "prices").stdout.splitlines(), 80, "openai/gpt-5.5")
    tools = piped(home, environ, "tools", "--mcp-config", str(home / "mcp.json"))
    assert_fits(tools.stdout.splitlines(), 80, "demo.now", "demo.calculate")

    demo = piped(home, {}, "demo").stdout
    assert_fits(
        table_of(demo, "What each run shows", "deepseek"),
        80,
        "anthropic/claude-sonnet-4.6",
        "gemini-3-pro",
        "surface_and_telemetry",
    )


def test_piped_output_follows_columns_for_every_command(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    piped(home, environ, "run", "hi", "-p", "llamacpp", "-m", LONG_MODEL)
    # Wide: the tables are whole, with their headers; narrow: they are stacked.
    wide = piped(home, environ, "providers", columns="200").stdout.splitlines()
    assert any(line.split()[:3] == ["name", "wire", "API"] for line in wide)
    assert max(len(line) for line in wide) > 80
    narrow = piped(home, environ, "providers", columns="60").stdout.splitlines()
    assert "anthropic" in narrow and max(len(line) for line in narrow) <= 60
    for args in (("runs",), ("usage", "--by", "model"), ("config",), ("prices",)):
        lines = piped(home, environ, *args, columns="60").stdout.splitlines()
        assert max(len(line) for line in lines) <= 60, (args, lines)
    ran = piped(home, environ, "run", "hi", columns="200")
    assert_fits(table_of(ran.stderr, "run ", "cost "), 200, "first", "reasoning")
    assert any(len(line) > 80 for line in table_of(ran.stderr, "run ", "cost "))


def test_a_long_role_name_stays_whole_in_the_run_and_status_tables(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    role = "security-reviewer-for-payment-flows"
    (tmp_path / "thoughtline.toml").write_text(
        f'[roles.{role}]\nprompt = "You are a careful reviewer."\n', encoding="utf-8"
    )
    ran = piped(home, environ, "run", "hi", "-r", role, "-r", "architect")
    table = table_of(ran.stderr, "run ", "cost ")
    # The input and output token columns make room; the role is never folded.
    assert_fits(table, 80, f"{role} done", "architect", "cost")
    [header] = [line.split() for line in table if line.startswith("task ")]
    assert "input" not in header and "output" not in header, table
    status = piped(home, environ, "status").stdout
    assert_fits(table_of(status, "run ", "cost "), 80, f"{role} done")
