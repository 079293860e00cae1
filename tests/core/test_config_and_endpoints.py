"""Strict config validation and endpoint resolution (config > env > default)."""

from __future__ import annotations

from pathlib import Path

import pytest

from thoughtline.config import load_config
from thoughtline.errors import ConfigError, ProviderError, UnknownEndpointError
from thoughtline.providers.endpoints import EndpointRegistry


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "thoughtline.toml"
    path.write_text(text)
    return path


def test_full_design_example_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[orchestration]
chain_of_thought = "surface"
worker_backend = "provider"
store = "sqlite"
max_concurrency = 4
[orchestration.chain_of_thought_by_role]
reviewer = "telemetry_only"
[defaults]
provider = "anthropic"
model = "claude-sonnet-4-6"
effort = "high"
[providers.openai]
wire_api = "openai-chat"
[providers.my-vllm]
wire_api = "openai-chat"
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "MY_VLLM_KEY"
reasoning_field = "reasoning"
[trace]
provider_raw = true
[trace.retention]
provider_raw = "7d"
reasoning = "30d"
""",
    )
    config = load_config(path)
    assert config.chain_of_thought == "surface"
    assert config.chain_of_thought_by_role == {"reviewer": "telemetry_only"}
    assert config.max_concurrency == 4
    assert config.default_effort == "high"
    assert config.trace_provider_raw is True
    assert config.retention["reasoning"] == "30d"
    assert config.sources["orchestration.chain_of_thought"] == str(path)
    registry = EndpointRegistry(config.providers, environ={"MY_VLLM_KEY": "vllm-secret-1"})
    vllm = registry.resolve("my-vllm")
    assert (vllm.wire_api, vllm.base_url, vllm.dialect, vllm.reasoning_field) == (
        "openai-chat",
        "http://127.0.0.1:8000/v1",
        "raw-reasoning",
        "reasoning",
    )
    assert vllm.api_key == "vllm-secret-1"
    assert "vllm-secret-1" not in repr(vllm)
    assert registry.resolve("openai").wire_api == "openai-chat"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[orchestration]\nchain_of_thought = "loud"\n',
            "orchestration.chain_of_thought: 'loud' is not allowed. Allowed values: hidden, surface, telemetry_only, surface_and_telemetry",
        ),
        ("[orchestration]\nmax_concurency = 3\n", "orchestration.max_concurency: unknown key"),
        (
            '[orchestration]\nmax_concurrency = "8"\n',
            "orchestration.max_concurrency: wrong type: must be an integer",
        ),
        ('[providers.x]\nwire_api = "grpc"\n', "providers.x.wire_api: 'grpc' is not allowed"),
        ("[providers.x]\nmax_concurrency = 0\n", "providers.x.max_concurrency: must be"),
        (
            '[providers.x]\nmax_concurrency = "one"\n',
            "providers.x.max_concurrency: wrong type: must be an integer",
        ),
        (
            '[providers.x]\nwire_api = "openai-chat"\nbase_url = "ftp://h"\n',
            "providers.x.base_url: must start with http",
        ),
        (
            '[trace.retention]\nreasoning = "a month"\n',
            "trace.retention.reasoning: 'a month' is not a duration",
        ),
        ("[tracing]\n", "tracing: unknown section"),
        (
            '[roles.r]\nprompt = "p"\ntools = "git"\n',
            "roles.r.tools: wrong type: must be a list",
        ),
        (
            '[roles.r]\nprompt = "p"\ntools = ["git."]\n',
            "roles.r.tools: 'git.' names no tool after the dot",
        ),
        ('[roles.r]\nprompt = "p"\nmax_steps = 0\n', "roles.r.max_steps: must be an integer"),
        ("[orchestration]\nmax_steps = 5000\n", "orchestration.max_steps: must be an integer"),
        ("[timeouts]\ntool = -1\n", "timeouts.tool: must be a positive number"),
        ("[orchestration\n", "not valid TOML"),
    ],
)
def test_bad_config_names_file_key_and_allowed_values(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(path) in caught.value.message
    assert expected in caught.value.message


def test_tools_and_step_limits_load_with_their_defaults(tmp_path: Path) -> None:
    assert (
        load_config(write(tmp_path, "")).max_steps,
        load_config(write(tmp_path, "")).tool_timeout_s,
    ) == (8, 60.0)
    path = write(
        tmp_path,
        """
[orchestration]
max_steps = 12
[timeouts]
tool = 5
read = 30
[roles.reviewer]
prompt = "You review."
tools = ["git", "time.get_current_time"]
max_steps = 3
""",
    )
    config = load_config(path)
    assert (config.max_steps, config.tool_timeout_s, config.timeouts.read) == (12, 5.0, 30.0)
    assert config.role_tools == {"reviewer": ("git", "time.get_current_time")}
    assert config.role_max_steps == {"reviewer": 3}
    assert config.sources["roles.reviewer.tools"] == str(path)
    from thoughtline.cli.config_command import config_report

    reported = {entry["key"]: entry["value"] for entry in config_report(config)["settings"]}
    assert reported["orchestration.max_steps"] == 12
    assert reported["timeouts.tool"] == 5.0
    assert reported["roles.reviewer.tools"] == ["git", "time.get_current_time"]
    assert reported["roles.reviewer.max_steps"] == 3


def test_user_endpoint_without_base_url_is_an_error(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[providers.mine]\nwire_api = "openai-chat"\n'))
    with pytest.raises(
        ConfigError, match=r"\[providers.mine\] defines a new endpoint and needs base_url"
    ):
        EndpointRegistry(config.providers, config_source=str(config.path))


def test_base_url_precedence_config_over_env_over_default(tmp_path: Path) -> None:
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/env", "OLLAMA_HOST": "127.0.0.1:5"}
    assert EndpointRegistry(environ={}).resolve("anthropic").base_url == "https://api.anthropic.com"
    from_env = EndpointRegistry(environ=env).resolve("anthropic")
    assert (from_env.base_url, from_env.base_url_source) == ("http://127.0.0.1:9/env", "env")
    config = load_config(
        write(tmp_path, '[providers.anthropic]\nbase_url = "http://127.0.0.1:9/cfg"\n')
    )
    from_config = EndpointRegistry(config.providers, environ=env).resolve("anthropic")
    assert (from_config.base_url, from_config.base_url_source) == (
        "http://127.0.0.1:9/cfg",
        "config",
    )
    assert EndpointRegistry(environ=env).resolve("ollama").base_url == "http://127.0.0.1:5"


def test_missing_key_and_unknown_endpoint_are_clear() -> None:
    registry = EndpointRegistry(environ={})
    with pytest.raises(ProviderError) as caught:
        registry.resolve("gemini").require_key()
    assert caught.value.code == "PROVIDER_KEY_MISSING"
    assert "GEMINI_API_KEY" in caught.value.message
    with pytest.raises(UnknownEndpointError, match="Known providers: anthropic"):
        registry.resolve("antropic")
    assert registry.resolve("ollama").require_key() is None


def test_no_config_file_means_defaults(tmp_path: Path) -> None:
    config = load_config(environ={"THOUGHTLINE_HOME": str(tmp_path)}, cwd=tmp_path)
    assert config.path is None and config.chain_of_thought == "hidden"


def test_thoughtline_config_pointing_nowhere_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="THOUGHTLINE_CONFIG points to"):
        load_config(environ={"THOUGHTLINE_CONFIG": str(tmp_path / "nope.toml")})


# -- timeouts ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ("[timeouts]\nreed = 30\n", "timeouts.reed", ("unknown key", "connect, read, total")),
        ("[timeouts]\ntotal = 0\n", "timeouts.total", ("positive number of seconds", "0")),
        ("[timeouts]\nread = -5\n", "timeouts.read", ("positive number of seconds", "-5")),
        ('[timeouts]\nconnect = "10s"\n', "timeouts.connect", ("positive number", "10s")),
        ("[timeouts]\ntotal = true\n", "timeouts.total", ("positive number", "True")),
        ("[timeouts]\ntotal = inf\n", "timeouts.total", ("positive number", "inf")),
        ("timeouts = 5\n", "timeouts", ("table",)),
        (
            "[providers.anthropic.timeouts]\ntotl = 5\n",
            "providers.anthropic.timeouts.totl",
            ("unknown key", "connect, read, total"),
        ),
        (
            "[providers.anthropic.timeouts]\nread = 0\n",
            "providers.anthropic.timeouts.read",
            ("positive number of seconds",),
        ),
    ],
)
def test_bad_timeouts_name_file_and_key(
    tmp_path: Path, text: str, key: str, words: tuple[str, ...]
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = caught.value.message
    assert str(path) in message and f"{key}:" in message
    assert all(word in message for word in words), message


def test_timeouts_load_with_sources_and_reach_endpoints(tmp_path: Path) -> None:
    from thoughtline.cli.config_command import config_report
    from thoughtline.providers.client import ProviderClient, Timeouts

    path = write(
        tmp_path,
        "[timeouts]\nread = 30\ntotal = 600.5\n"
        "[providers.ollama.timeouts]\ntotal = 3600\n"
        '[providers.slow]\nbase_url = "http://127.0.0.1:9/v1"\n[providers.slow.timeouts]\nread = 300\n',
    )
    config = load_config(path)
    assert (config.timeouts.connect, config.timeouts.read, config.timeouts.total) == (
        None,
        30.0,
        600.5,
    )
    settings = {
        entry["key"]: (entry["value"], entry["source"])
        for entry in config_report(config)["settings"]
        if "timeouts" in entry["key"]
    }
    assert settings == {
        "timeouts.connect": (10.0, "default"),
        "timeouts.read": (30.0, str(path)),
        "timeouts.total": (600.5, str(path)),
        "providers.ollama.timeouts.total": (3600.0, str(path)),
        "providers.slow.timeouts.read": (300.0, str(path)),
        "timeouts.tool": (60.0, "default"),
    }
    registry = EndpointRegistry(config.providers, environ={})
    configured = Timeouts().overridden_by(config.timeouts)
    assert ProviderClient(registry.resolve("ollama"), timeouts=configured).timeouts == Timeouts(
        read=30.0, total=3600.0
    )
    assert ProviderClient(registry.resolve("slow"), timeouts=configured).timeouts == Timeouts(
        read=300.0, total=600.5
    )
    assert ProviderClient(registry.resolve("anthropic"), timeouts=configured).timeouts == configured


def test_no_timeouts_configured_means_the_defaults(tmp_path: Path) -> None:
    from thoughtline.cli.config_command import config_report

    config = load_config(write(tmp_path, '[defaults]\nprovider = "anthropic"\n'))
    timeouts = [e for e in config_report(config)["settings"] if "timeouts" in e["key"]]
    assert timeouts == [
        {"key": "timeouts.connect", "value": 10.0, "source": "default"},
        {"key": "timeouts.read", "value": 120.0, "source": "default"},
        {"key": "timeouts.total", "value": 900.0, "source": "default"},
        {"key": "timeouts.tool", "value": 60.0, "source": "default"},
    ]
