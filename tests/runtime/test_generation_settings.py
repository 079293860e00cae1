"""max_output_tokens and temperature from the config's [defaults], plan tasks and the
Python API: precedence (explicit > plan task > config), range checks naming the file
and key, and the values in the provider's request body."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import thoughtline
from thoughtline import ThoughtlineError
from thoughtline.config import load_config
from thoughtline.errors import ConfigError
from thoughtline.runtime.planning.plan import load_plan, with_generation
from thoughtline.testing import Simulator, Transcript


@pytest.fixture
def user_env(tmp_path: Path, environ: dict[str, str]) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("THOUGHTLINE")}
    env.update(environ)
    env["THOUGHTLINE_HOME"] = str(tmp_path / "home")
    return env


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("max_output_tokens = 0", "must be from 1 to 10,000,000, got 0"),
        ("max_output_tokens = 99999999999999999999", "must be from 1 to 10,000,000"),
        ("max_output_tokens = 2.5", "must be a whole number of tokens"),
        ("max_output_tokens = true", "must be a whole number of tokens"),
        ("temperature = 2.1", "must be from 0 to 2, got 2.1"),
        ("temperature = -0.5", "must be from 0 to 2"),
        ('temperature = "hot"', "must be a number from 0 to 2"),
        ("temperature = nan", "must be from 0 to 2"),
    ],
)
def test_config_mistakes_name_the_file_and_the_key(tmp_path: Path, line: str, problem: str) -> None:
    path = write(tmp_path / "thoughtline.toml", f"[defaults]\n{line}\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    key = line.split(" =")[0]
    assert raised.value.message.startswith(f"{path}: defaults.{key}: ")
    assert problem in raised.value.message


def test_config_defaults_are_read_with_their_source(tmp_path: Path) -> None:
    path = write(
        tmp_path / "thoughtline.toml", "[defaults]\nmax_output_tokens = 900\ntemperature = 1\n"
    )
    config = load_config(path)
    assert config.default_generation.max_output_tokens == 900
    assert config.default_generation.temperature == 1.0
    assert config.sources["defaults.temperature"] == str(path)


def test_plan_tasks_take_settings_and_bad_ones_name_the_key(tmp_path: Path) -> None:
    plan = write(
        tmp_path / "plan.toml",
        'request = "r"\n[[task]]\nrole = "engineer"\nmax_output_tokens = 50\ntemperature = 0\n'
        '[[task]]\nrole = "reviewer"\n',
    )
    spec = load_plan(plan)
    assert [
        (task.generation.max_output_tokens, task.generation.temperature) for task in spec.tasks
    ] == [
        (50, 0.0),
        (None, None),
    ]
    explicit = with_generation(spec, temperature=0.9)
    assert [
        (task.generation.max_output_tokens, task.generation.temperature) for task in explicit.tasks
    ] == [
        (50, 0.9),
        (None, 0.9),
    ]
    bad = write(
        tmp_path / "bad.toml", 'request = "r"\n[[task]]\nrole = "engineer"\ntemperature = 7\n'
    )
    with pytest.raises(ConfigError) as raised:
        load_plan(bad)
    assert raised.value.message.startswith(f"{bad}: task[0].temperature: must be from 0 to 2")


def test_explicit_beats_plan_beats_config_in_the_request_body(
    tmp_path: Path, sim: Simulator, user_env: dict[str, str]
) -> None:
    sim.script(Transcript(answer="Fine."))
    config = load_config(
        write(
            tmp_path / "thoughtline.toml",
            "[defaults]\nmax_output_tokens = 300\ntemperature = 0.5\n",
        )
    )
    plan = write(
        tmp_path / "plan.toml",
        'request = "r"\n[[task]]\nrole = "engineer"\nprovider = "deepseek"\ntemperature = 0.1\n',
    )
    thoughtline.run(load_plan(plan), config=config, environ=user_env)
    thoughtline.run(load_plan(plan), max_output_tokens=42, config=config, environ=user_env)
    thoughtline.run("r", provider="deepseek", config=config, environ=user_env)
    bodies = [request.body or {} for request in sim.requests]
    assert [(body["max_tokens"], body["temperature"]) for body in bodies] == [
        (300, 0.1),
        (42, 0.1),
        (300, 0.5),
    ]


def test_the_python_api_refuses_out_of_range_values_before_anything_runs(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    for settings in ({"max_output_tokens": 0}, {"temperature": 2.5}, {"temperature": float("nan")}):
        with pytest.raises(ThoughtlineError) as raised:
            thoughtline.run(
                "r",
                provider="deepseek",
                config=thoughtline.Config(path=None),
                environ=user_env,
                **settings,
            )  # type: ignore[arg-type]
        assert raised.value.code == "REQUEST_INVALID"
        assert next(iter(settings)) in raised.value.message
    assert sim.requests == []


@pytest.mark.slow
def test_run_flags_reach_the_wire_and_out_of_range_is_a_usage_error(
    tmp_path: Path, sim: Simulator, user_env: dict[str, str]
) -> None:
    sim.script(Transcript(answer="Fine."))
    common = [sys.executable, "-m", "thoughtline.cli", "run", "--provider", "deepseek", "--json"]

    def run(*flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*common, *flags, "Hi"],
            capture_output=True,
            text=True,
            env=user_env,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )

    done = run("--max-output-tokens", "55", "--temperature", "0.6")
    assert done.returncode == 0, done.stderr
    refused = run("--temperature", "3")
    assert refused.returncode == 2
    assert "--temperature must be from 0 to 2, got 3.0." in refused.stderr
    bodies = [request.body or {} for request in sim.requests]
    assert [(body["max_tokens"], body["temperature"]) for body in bodies] == [(55, 0.6)]
