"""The command line as a user runs it: a real subprocess, real output, real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CANARY_KEY = "sk-ant-canary-cli-0123456789abcdef"


def thoughtline(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=60,
        check=False,
    )


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    return {"THOUGHTLINE_HOME": str(tmp_path / "home"), "ANTHROPIC_API_KEY": CANARY_KEY}


def test_providers_json_lists_endpoints_and_families_without_secrets(
    home: dict[str, str], tmp_path: Path
) -> None:
    result = thoughtline("providers", "--json", env=home, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    names = [endpoint["name"] for endpoint in report["endpoints"]]
    assert names == [
        "anthropic",
        "openai",
        "openrouter",
        "gemini",
        "deepseek",
        "ollama",
        "vllm",
        "llamacpp",
    ]
    anthropic = report["endpoints"][0]
    assert anthropic["api_key"] == "set"
    assert CANARY_KEY not in result.stdout
    families = {family["family"]: family for family in report["families"]}
    assert families["claude-4-6"]["thinking_control"] == "adaptive"
    assert families["claude-legacy-budget"]["thinking_control"] == "budget"
    assert families["openai-gpt-5-x"]["returns"] == ["summary", "encrypted"]


def test_providers_shows_user_endpoint_from_config(home: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "thoughtline.toml").write_text(
        '[providers.my-vllm]\nwire_api = "openai-chat"\nbase_url = "http://127.0.0.1:8000/v1"\n'
    )
    result = thoughtline("providers", "--json", env=home, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    mine = [e for e in json.loads(result.stdout)["endpoints"] if e["name"] == "my-vllm"]
    assert mine == [
        {
            "name": "my-vllm",
            "wire_api": "openai-chat",
            "dialect": "raw-reasoning",
            "base_url": "http://127.0.0.1:8000/v1",
            "base_url_source": "config",
            "api_key_env": None,
            "api_key": "not needed",
            "families": ["openai-compatible-raw"],
        }
    ]


def test_bad_config_is_one_clear_line_and_non_zero_exit(
    home: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "thoughtline.toml").write_text('[orchestration]\nchain_of_thought = "loud"\n')
    result = thoughtline("providers", env=home, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("thoughtline: ")
    assert (
        "thoughtline.toml: orchestration.chain_of_thought: 'loud' is not allowed" in result.stderr
    )
    assert "Traceback" not in result.stderr


def test_demo_runs_every_mode_on_every_endpoint_offline(
    home: dict[str, str], tmp_path: Path
) -> None:
    result = thoughtline("demo", "--json", env=home, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == 7 * 4
    assert all(row["status"] == "done" and row["error"] is None for row in rows)
    cell = {(row["task"], row["mode"]): row for row in rows}
    assert cell[("anthropic-adaptive", "hidden")]["reasoning_status"] == "not_requested"
    assert cell[("anthropic-adaptive", "hidden")]["shown_chars"] == 0
    assert cell[("anthropic-adaptive", "hidden")]["recorded_chars"] is None
    assert cell[("anthropic-budget", "surface")]["reasoning_status"] == "shown"
    assert cell[("anthropic-budget", "surface")]["recorded_chars"] is None
    assert cell[("openai-responses", "telemetry_only")]["reasoning_status"] == "recorded"
    assert cell[("openai-responses", "telemetry_only")]["shown_chars"] == 0
    assert cell[("openai-responses", "telemetry_only")]["recorded_chars"] > 0
    assert cell[("openai-chat", "surface")]["reasoning_status"] == "unsupported"
    assert (
        cell[("deepseek", "surface_and_telemetry")]["shown_chars"]
        == cell[("deepseek", "surface_and_telemetry")]["recorded_chars"]
        > 0
    )
    # The demo uses a throwaway store: the user's THOUGHTLINE_HOME stays untouched.
    assert not Path(home["THOUGHTLINE_HOME"]).exists()
