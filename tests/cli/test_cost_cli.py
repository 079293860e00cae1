"""What a run cost on the command line: real ``thoughtline``
subprocesses against the simulator on 127.0.0.1. A model without a price
shows ``unknown`` with its reason on every surface; a ``[prices]`` entry wins over the
price data, and ``thoughtline prices`` says which was used."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.test_run_cli import thoughtline
from thoughtline.testing import Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

USAGE = Transcript(answer="Done.", input_tokens=10_000, output_tokens=2_000, reasoning_tokens=640)
OLLAMA_REASON = (
    "ollama is a local server with no configured price; set "
    '[prices."ollama/qwen3:8b"] input = 0 and output = 0 in config if its calls cost nothing'
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_an_unknown_price_shows_unknown_in_the_json_and_the_table(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(USAGE)
    args = ("run", "Explain.", "--provider", "ollama", "--model", "qwen3:8b")
    as_json = thoughtline(home, environ, *args, "--json")
    assert as_json.returncode == 0, as_json.stderr
    snapshot = json.loads(as_json.stdout)
    cost = snapshot["tasks"][0]["cost"]
    assert cost == {
        "amount": None,
        "currency": "USD",
        "source": None,
        "parts": None,
        "unknown_reason": OLLAMA_REASON,
    }
    assert snapshot["cost"]["unknown_reason"] == f"task assistant: {OLLAMA_REASON}"
    table = thoughtline(home, environ, *args)
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stderr.splitlines() if line.lstrip("│ ").startswith("assistant")]
    assert len(rows) == 1 and "unknown" in rows[0], table.stderr
    flat = " ".join(line.strip() for line in table.stderr.splitlines())
    assert f"cost unknown: task assistant: {OLLAMA_REASON}" in flat


def test_a_config_price_wins_and_thoughtline_prices_says_where_it_came_from(
    home: Path, tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    config = tmp_path / "thoughtline.toml"  # the working directory's config
    config.write_text(
        '[prices."ollama/qwen3:8b"]\ninput = 0.1\noutput = 0.4\n'
        '[prices."openai/o4-mini"]\ninput = 2\noutput = 8\n'
    )
    sim.script(USAGE)
    run = thoughtline(
        home, environ, "run", "Explain.", "--provider", "openai", "--model", "o4-mini", "--json"
    )
    assert run.returncode == 0, run.stderr
    cost = json.loads(run.stdout)["tasks"][0]["cost"]
    # The config's $2 / $8 per million, not the data's $1.10 / $4.40:
    # 10,000 x 2 + 2,000 x 8 = 36,000 µ$; reasoning 640 x 8 = 5,120 µ$.
    assert cost["amount"] == pytest.approx(0.036, abs=1e-12)
    assert cost["parts"]["reasoning"] == pytest.approx(0.00512, abs=1e-12)
    assert cost["source"] == f'config {config} [prices."openai/o4-mini"]'

    shown = thoughtline(home, environ, "prices", "openai/o4-mini", "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["data"] == "genai-prices 0.2.3"
    (entry,) = report["models"]
    assert entry["source"] == f'config {config} [prices."openai/o4-mini"]'
    assert entry["rates"]["input"] == {"usd_per_million": 2.0, "tiers": []}
    assert entry["rates"]["reasoning"] == {"usd_per_million": 8.0, "tiers": []}

    data = thoughtline(home, environ, "prices", "openai/gpt-5")
    assert data.returncode == 0, data.stderr
    assert data.stdout.splitlines()[0] == "openai/gpt-5  (genai-prices 0.2.3)"
    assert re.match(
        r"  input \$1\.25 · output \$10 · cached input \$0\.125", data.stdout.splitlines()[1]
    )

    listed = thoughtline(home, environ, "prices", "--json")
    assert listed.returncode == 0, listed.stderr
    entries = {(e["provider"], e["model"]): e for e in json.loads(listed.stdout)["models"]}
    assert (
        entries[("ollama", "qwen3:8b")]["source"] == f'config {config} [prices."ollama/qwen3:8b"]'
    )

    missing = thoughtline(home, environ, "prices", "vllm/some-model")
    assert missing.returncode == 1
    assert "vllm/some-model  unknown: vllm is a local server with no configured price" in (
        missing.stdout
    )


def test_a_custom_endpoint_is_priced_as_the_provider_its_prices_key_names(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    """A gateway in front of Claude: ``[providers.gateway] prices = "anthropic"`` prices
    its models from Anthropic's data; without it they are unknown, and the reason says
    how to price them."""
    sim.script(USAGE)
    config = home.parent / "thoughtline.toml"
    gateway = (
        "[providers.gateway]\n"
        'wire_api = "anthropic-messages"\n'
        f'base_url = "{environ["ANTHROPIC_BASE_URL"]}"\n'
        'api_key_env = "ANTHROPIC_API_KEY"\n'
    )
    args = ("run", "Explain.", "-p", "gateway", "-m", "claude-sonnet-4-6", "--json")
    config.write_text(gateway)
    unpriced = json.loads(thoughtline(home, environ, *args).stdout)["cost"]
    assert unpriced["amount"] is None
    assert (
        '[providers.gateway] prices = one of "anthropic", "openai", "openrouter", "gemini", '
        '"deepseek" to price its models as that provider\'s'
    ) in unpriced["unknown_reason"]

    config.write_text(gateway + 'prices = "anthropic"\n')
    priced = json.loads(thoughtline(home, environ, *args).stdout)["cost"]
    anthropic = json.loads(
        thoughtline(home, environ, "run", "Explain.", "-m", "claude-sonnet-4-6", "--json").stdout
    )["cost"]
    assert priced["amount"] is not None and priced["amount"] > 0
    assert (priced["amount"], priced["source"]) == (anthropic["amount"], anthropic["source"])

    config.write_text(gateway + 'prices = "anthropc"\n')
    refused = thoughtline(home, environ, *args)
    assert refused.returncode == 2
    assert f"{config}: providers.gateway.prices" in refused.stderr
    assert "anthropic" in refused.stderr
