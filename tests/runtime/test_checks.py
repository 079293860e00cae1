"""One check per caller-supplied value (mode, effort, worker backend, model id), one code
per mistake; files report the same mistakes as CONFIG_INVALID naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from thoughtline.config import load_config
from thoughtline.errors import ConfigError, ThoughtlineError
from thoughtline.model.requests import MODEL_ID_RULE, model_id_problem
from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.runtime.planning.plan import load_plan
from thoughtline.runtime.planning.specs import DEFAULT_MODELS
from thoughtline.runtime.policy.checks import (
    check_effort,
    check_mode,
    check_model_id,
    check_worker_backend,
)


def test_each_check_returns_the_value_or_raises_its_code() -> None:
    assert check_mode("surface", "x") == "surface"
    assert check_effort("high", "x") == "high"
    assert check_worker_backend("inline", "x") == "inline"
    for check, value, code, message in (
        (check_mode, "loud", "CHAIN_OF_THOUGHT_UNKNOWN", "Unknown chain_of_thought mode 'loud'"),
        (check_effort, "extreme", "EFFORT_UNKNOWN", "Unknown effort 'extreme'"),
        (check_worker_backend, "remote", "WORKER_BACKEND_UNKNOWN", "Unknown worker backend"),
    ):
        with pytest.raises(ThoughtlineError) as raised:
            check(value, "the request")
        assert raised.value.code == code
        assert raised.value.message.startswith(message)
        assert "(the request). Allowed values: " in raised.value.message


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('chain_of_thought = "loud"', "chain_of_thought"),
        ('worker_backend = "remote"', "worker_backend"),
        ('[[task]]\nrole = "architect"\neffort = "extreme"', "task[0].effort"),
    ],
)
def test_a_plan_file_names_itself_and_the_key(tmp_path: Path, line: str, key: str) -> None:
    plan = tmp_path / "plan.toml"
    tasks = "" if "[[task]]" in line else '\n[[task]]\nrole = "architect"\n'
    plan.write_text(f'request = "x"\n{line}\n{tasks}', encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_plan(plan)
    assert raised.value.code == "CONFIG_INVALID"
    assert f"({plan}: {key}). Allowed values: " in raised.value.message


def test_config_values_are_their_literals(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.toml"
    path.write_text(
        '[orchestration]\nchain_of_thought = "surface"\nworker_backend = "inline"\n'
        '[orchestration.chain_of_thought_by_role]\nreviewer = "telemetry_only"\n'
        '[defaults]\neffort = "low"\n'
        '[providers.local]\nwire_api = "openai-chat"\nbase_url = "http://127.0.0.1:1/v1"\n'
        'dialect = "raw-reasoning"\n',
        encoding="utf-8",
    )
    config = load_config(path)
    assert (config.chain_of_thought, config.worker_backend, config.default_effort) == (
        "surface",
        "inline",
        "low",
    )
    assert dict(config.chain_of_thought_by_role) == {"reviewer": "telemetry_only"}
    local = config.providers["local"]
    assert (local.wire_api, local.dialect, local.reasoning_field) == (
        "openai-chat",
        "raw-reasoning",
        None,
    )
    assert config.sources["orchestration.worker_backend"] == str(path)
    assert "defaults.provider" not in config.sources
    path.write_text('[providers.local]\ndialect = "klingon"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"providers\.local\.dialect: 'klingon' is not allowed"):
        load_config(path)


REAL_MODEL_IDS = (
    "claude-sonnet-4-6",
    "claude-3-5-sonnet@20240620",  # Vertex AI
    "gpt-5.1",
    "models/gemini-2.5-pro",
    "deepseek/deepseek-r1:free",  # OpenRouter
    "meta-llama/Llama-3.3-70B-Instruct",  # vLLM, Hugging Face ids
    "Qwen/Qwen2.5-Coder-32B-Instruct",
    "qwen3:8b",  # Ollama
    "hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M",
    "@cf/meta/llama-3.1-8b-instruct",  # Cloudflare Workers AI
    "accounts/fireworks/models/llama-v3p1-70b-instruct",
    "us.anthropic.claude-3-7-sonnet-20250219-v1:0",  # Bedrock
    "qwen2.5-7b-instruct-q4_k_m.gguf",  # llama.cpp
    "/models/Qwen3-8B",  # vLLM or llama.cpp serving a model under its path
    "ft:gpt-4o-mini-2024-07-18:my-org:custom:abc123",  # an OpenAI fine-tune
    "~anthropic/claude-sonnet-latest",
    "m" * 256,
)


def test_every_model_id_thoughtline_knows_and_real_ones_of_each_provider_are_ids() -> None:
    table = builtin_capabilities()
    known = {
        model
        for endpoint in EndpointRegistry(environ={}).names
        for model in (
            *table.model_ids(endpoint),
            *(prefix for family in table.for_endpoint(endpoint) for prefix in family.match),
        )
    }
    assert {"claude-sonnet-4-6", "anthropic/claude-sonnet-4.6", "gemini-3-pro"} <= known
    for model in sorted(known | set(DEFAULT_MODELS.values()) | set(REAL_MODEL_IDS)):
        assert model_id_problem(model) is None, model
        assert check_model_id(model) == model


@pytest.mark.parametrize(
    ("model", "fault"),
    [
        ("../../../evil", "'..' is a path step, not a part of a name"),
        ("x/../../v1/files?q=", "'?' at position 17 is not allowed"),
        ("m:other#frag", "'#' at position 8 is not allowed"),
        ("%2e%2e/x", "'%' at position 1 is not allowed"),
        ("./gemini-3-pro", "'.' is a path step, not a part of a name"),
        ("//v1/files", "it has an empty part between two slashes"),
        ("/../v1/files", "'..' is a path step, not a part of a name"),
        ("gemini-3-pro/", "it ends with '/'"),
        ("a//b", "it has an empty part between two slashes"),
        ("a\nb", "'\\n' at position 2 is not allowed"),
        ("a\tb", "'\\t' at position 2 is not allowed"),
        ("a b", "' ' at position 2 is not allowed"),
        ("a\\b", "'\\\\' at position 2 is not allowed"),
        ("a\x00b", "'\\x00' at position 2 is not allowed"),
        ("gpt\u202e5", "'\\u202e' at position 4 is not allowed"),
        ("modèle", "'è' at position 4 is not allowed"),
        ("", "it is empty"),
        ("m" * 257, "it is 257 characters long"),
    ],
)
def test_a_model_id_that_is_not_one_is_one_sentence_with_its_code(model: str, fault: str) -> None:
    with pytest.raises(ThoughtlineError) as raised:
        check_model_id(model)
    assert raised.value.code == "MODEL_ID_INVALID"
    shown = repr(model) if len(model) <= 80 else f"{model[:60]!r}…"
    assert raised.value.message == f"Model id {shown} is not valid ({fault}): {MODEL_ID_RULE}."
    assert "\n" not in raised.value.message


def test_a_model_id_in_a_config_or_plan_file_names_the_file_and_the_key(tmp_path: Path) -> None:
    config = tmp_path / "thoughtline.toml"
    config.write_text('[defaults]\nmodel = "../../../evil"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    assert raised.value.code == "CONFIG_INVALID"
    assert raised.value.message.startswith(
        f"{config}: defaults.model: Model id '../../../evil' is not valid ('..' is a path step"
    )
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'request = "x"\n[[task]]\nrole = "architect"\n[[task]]\nrole = "reviewer"\n'
        'model = "m:other#frag"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as raised:
        load_plan(plan)
    assert raised.value.code == "CONFIG_INVALID"
    assert raised.value.message.startswith(
        f"{plan}: task[1].model: Model id 'm:other#frag' is not valid ('#' at position 8"
    )
