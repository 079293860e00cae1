"""A model id the provider does not serve, as a user meets it: ``thoughtline run -m`` with
a typo against the simulator, which answers it as each provider does (its own status and
body), so the run fails with the provider's words and a "did you mean", never unpriced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_run_cli import home, thoughtline
from thoughtline.testing import Simulator
from thoughtline.testing.served_models import VLLM_SERVED_MODEL

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

__all__ = ["home"]


@pytest.fixture
def strict(sim: Simulator) -> Simulator:
    """The shared simulator serving only the ids each provider knows (as ``thoughtline
    simulate`` does), its default model answering (it names the model); the ``sim``
    fixture puts both back afterwards."""
    sim.any_model = False
    sim.default_transcript = None
    return sim


# endpoint, the typo, the provider's own words for it, the id it is close to
TYPOS = [
    ("anthropic", "claude-sonet-4-6", "HTTP 404: model: claude-sonet-4-6", "claude-sonnet-4-6"),
    ("openai", "gpt-5-nan", "The model `gpt-5-nan` does not exist", "gpt-5-nano"),
    (
        "openrouter",
        "anthropic/claude-sonet-4.6",
        "HTTP 400: anthropic/claude-sonet-4.6 is not a valid model ID",
        "anthropic/claude-sonnet-4.6",
    ),
    ("gemini", "gemini-3-pr", "models/gemini-3-pr is not found", "gemini-3-pro"),
    ("deepseek", "deepseek-reasoners", "HTTP 400: Model Not Exist", "deepseek-reasoner"),
    ("ollama", "qwen4", "model 'qwen4' not found", "qwen3"),
]


@pytest.mark.parametrize(("endpoint", "typo", "words", "meant"), TYPOS)
def test_a_typo_in_the_model_id_fails_with_the_providers_not_found(
    home: Path,
    strict: Simulator,
    environ: dict[str, str],
    endpoint: str,
    typo: str,
    words: str,
    meant: str,
) -> None:
    failed = thoughtline(home, environ, "run", "hi", "-p", endpoint, "-m", typo, "--json")
    assert failed.returncode == 1, failed.stderr
    [task] = json.loads(failed.stdout)["tasks"]
    assert task["status"] == "failed"
    assert task["error"]["code"] == "PROVIDER_NOT_FOUND"
    assert words in task["error"]["message"]
    assert task["error"]["message"].endswith(f"Did you mean {meant}?")
    assert task["output"] is None
    assert f"Did you mean {meant}?" in failed.stderr
    # The id it meant is served, and priced where the data prices it.
    served = thoughtline(home, environ, "run", "hi", "-p", endpoint, "-m", meant, "--json")
    assert served.returncode == 0, served.stderr
    [done] = json.loads(served.stdout)["tasks"]
    assert done["status"] == "done"
    assert f"(simulated {meant})" in done["output"]


def test_vllm_serves_the_model_it_was_started_with_and_refuses_others_until_added(
    home: Path, strict: Simulator, environ: dict[str, str]
) -> None:
    # The simulated vLLM was started with Qwen/Qwen3-8B, as by `vllm serve Qwen/Qwen3-8B`.
    started = thoughtline(home, environ, "run", "hi", "-p", "vllm", "-m", VLLM_SERVED_MODEL)
    assert started.returncode == 0, started.stderr
    assert f"(simulated {VLLM_SERVED_MODEL})" in started.stdout
    refused = thoughtline(home, environ, "run", "hi", "-p", "vllm", "-m", "my/model-7b", "--json")
    [task] = json.loads(refused.stdout)["tasks"]
    assert task["error"]["code"] == "PROVIDER_NOT_FOUND"
    assert (
        "vllm returned HTTP 404: The model `my/model-7b` does not exist."
        in (task["error"]["message"])
    )
    strict.add_models("my/model-7b", profile="vllm")
    served = thoughtline(home, environ, "run", "hi", "-p", "vllm", "-m", "my/model-7b")
    assert served.returncode == 0, served.stderr
    assert "(simulated my/model-7b)" in served.stdout


def test_llama_cpp_answers_whatever_model_a_request_names(
    home: Path, strict: Simulator, environ: dict[str, str]
) -> None:
    # llama-server loads one model and ignores the id, as the simulated one does.
    served = thoughtline(home, environ, "run", "hi", "-p", "llamacpp", "-m", "any-name")
    assert served.returncode == 0, served.stderr
    assert "(simulated any-name)" in served.stdout
