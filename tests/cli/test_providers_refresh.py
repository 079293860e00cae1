"""``thoughtline providers --refresh``: capabilities from the (simulated) model API win
over the built-in table for those exact models, and a broken cache never fails a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CANARY_KEY
from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.providers.discovery import CACHE_FILE, load_capabilities
from thoughtline.testing import Simulator

ADAPTIVE_LOW_HIGH = {
    "thinking": {"types": {"adaptive": {"supported": True}, "enabled": {"supported": False}}},
    "effort": {
        "low": {"supported": True},
        "medium": {"supported": False},
        "high": {"supported": True},
    },
}
BUDGET_ONLY = {
    "thinking": {"types": {"adaptive": {"supported": False}, "enabled": {"supported": True}}},
    "effort": {},
}


def thoughtline(
    home: Path, environ: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **environ, "THOUGHTLINE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home.parent,
        timeout=60,
        check=False,
    )


def test_refresh_caches_what_the_model_api_reports_and_requests_follow_it(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    sim.anthropic_models = {"claude-future-9": ADAPTIVE_LOW_HIGH, "claude-sonnet-4-6": BUDGET_ONLY}
    result = thoughtline(home, environ, "providers", "--refresh", "--json")
    assert result.returncode == 0, result.stderr
    assert "Refreshed 2 Anthropic model(s)" in result.stderr
    # The key went to the model API and nowhere else: not to the cache, not to the output.
    assert CANARY_KEY not in (home / CACHE_FILE).read_text()
    assert CANARY_KEY not in result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["cached_models"]["anthropic"]["claude-future-9"] == {
        "thinking_control": "adaptive",
        "efforts": ["low", "high"],
    }
    table = load_capabilities(home)
    future = table.lookup("anthropic", "claude-future-9")
    assert (future.source, future.thinking_control, future.efforts) == (
        "cache",
        "adaptive",
        ("low", "high"),
    )
    # Without the cache an unknown model falls back to the family's entry.
    assert builtin_capabilities().lookup("anthropic", "claude-future-9").source == "fallback"
    # A run on the cached model is shaped by the cache: budget thinking for sonnet-4-6 now.
    run = thoughtline(
        home,
        environ,
        "run",
        "x",
        "--model",
        "claude-sonnet-4-6",
        "--chain-of-thought",
        "surface",
        "--json",
    )
    assert run.returncode == 0, run.stderr
    thinking = [r.body["thinking"] for r in sim.requests if r.method == "POST"]  # type: ignore[index]
    assert thinking == [{"type": "enabled", "budget_tokens": 4096}]
    # An effort the API says the model rejects becomes a warning, not a 400.
    run = thoughtline(
        home, environ, "run", "x", "--model", "claude-future-9", "--effort", "medium", "--json"
    )
    assert run.returncode == 0, run.stderr
    assert "output_config" not in (sim.requests[-1].body or {})


def test_refresh_errors_are_one_sentence(tmp_path: Path, environ: dict[str, str]) -> None:
    home = tmp_path / "home"
    without_key = {k: v for k, v in environ.items() if k != "ANTHROPIC_API_KEY"}
    missing = thoughtline(home, without_key, "providers", "--refresh")
    assert missing.returncode == 2
    assert missing.stderr.startswith("thoughtline: No API key for provider 'anthropic'")
    unreachable = thoughtline(
        home, {**environ, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}, "providers", "--refresh"
    )
    assert unreachable.returncode == 2
    assert "Cannot reach http://127.0.0.1:9/v1/models" in unreachable.stderr


@pytest.mark.slow
def test_refresh_refuses_a_wire_api_whose_model_api_it_does_not_read(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    (tmp_path / "thoughtline.toml").write_text('[providers.anthropic]\nwire_api = "openai-chat"\n')
    sim.anthropic_models = {"claude-future-9": ADAPTIVE_LOW_HIGH}
    result = thoughtline(home, environ, "providers", "--refresh")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(
        "thoughtline: Provider 'anthropic' speaks openai-chat, whose model API thoughtline "
        "does not read; only Anthropic's is."
    )
    assert sim.requests == [] and not (home / CACHE_FILE).exists()


def test_a_broken_cache_is_ignored(tmp_path: Path) -> None:
    (tmp_path / CACHE_FILE).write_text(
        '{"anthropic": {"models": {"m": {"thinking_control": "telepathy", "efforts": []}}}}'
    )
    table = load_capabilities(tmp_path)
    assert table.lookup("anthropic", "m").source == "fallback"
    (tmp_path / CACHE_FILE).write_text("not json")
    assert load_capabilities(tmp_path).lookup("anthropic", "claude-sonnet-4-6").source == "builtin"
