"""One check per caller-supplied value (mode, effort, worker backend), one code per
mistake; files report the same mistakes as CONFIG_INVALID naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from thoughtline.config import load_config
from thoughtline.errors import ConfigError, ThoughtlineError
from thoughtline.runtime.checks import check_effort, check_mode, check_worker_backend
from thoughtline.runtime.plan import load_plan


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
