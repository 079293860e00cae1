"""Which tools a task may call and how many model calls it may make, resolved when a run
is planned: the explicit argument over the plan task over the role over the config."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import CANARY_KEY
from thoughtline.config import Config
from thoughtline.errors import ConfigError, ThoughtlineError
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.providers.redaction import Redactor
from thoughtline.records import Run
from thoughtline.runtime.planning.plan import RunSpec, load_plan, spec_from_roles, with_tools
from thoughtline.runtime.planning.roles import RoleCatalog
from thoughtline.runtime.planning.specs import plan_run
from thoughtline.tools.settings import McpServerSettings

SERVERS = {
    name: McpServerSettings(name=name, command=sys.executable, args=("-m", f"mcp_server_{name}"))
    for name in ("git", "time")
}
CONFIG = Config(
    path=None,
    max_steps=6,
    roles={"reader": "You read."},
    role_tools={"reader": ("git",)},
    role_max_steps={"reader": 4},
    mcp_servers=SERVERS,
)


def plan(spec: RunSpec, config: Config = CONFIG) -> Run:
    return plan_run(
        spec,
        config=config,
        registry=EndpointRegistry(config.providers, environ={"ANTHROPIC_API_KEY": CANARY_KEY}),
        roles=RoleCatalog([], config.roles),
        redactor=Redactor(),
    )


def test_the_role_then_the_plan_then_the_explicit_argument_decide(tmp_path: Path) -> None:
    by_role = plan(spec_from_roles("r", ["reader", "engineer"]))
    assert [(t.tools, t.max_steps, t.tool_calls) for t in by_role.tasks] == [
        (("git",), 4, []),
        ((), 6, None),  # no tools: no steps or calls in its snapshot
    ]
    assert "tool_calls" not in by_role.tasks[1].to_dict()
    assert by_role.tasks[0].to_dict()["tool_calls"] == []

    path = tmp_path / "plan.toml"
    path.write_text(
        'request = "r"\n[[task]]\nrole = "reader"\ntools = ["time.get_current_time"]\n'
        'max_steps = 2\n[[task]]\nname = "second"\nrole = "reader"\n'
    )
    planned = plan(load_plan(path))
    assert [(t.tools, t.max_steps) for t in planned.tasks] == [
        (("time.get_current_time",), 2),
        (("git",), 4),
    ]
    explicit = plan(with_tools(load_plan(path), tools=["time"], max_steps=9))
    assert [(t.tools, t.max_steps) for t in explicit.tasks] == [(("time",), 9), (("time",), 9)]


def test_a_server_nobody_configured_is_refused_naming_where_it_was_named() -> None:
    config = Config(path=None, roles={"reader": "You read."}, role_tools={"reader": ("gti",)})
    with pytest.raises(ThoughtlineError) as raised:
        plan(spec_from_roles("r", ["reader"]), config)
    assert raised.value.code == "TOOL_SERVER_UNKNOWN"
    assert "'gti' (roles.reader.tools)" in raised.value.message
    with pytest.raises(ThoughtlineError) as explicit:
        plan(with_tools(spec_from_roles("r", []), tools=["nosuch.tool"]))
    assert "'nosuch.tool' (task 'assistant')" in explicit.value.message
    with pytest.raises(ThoughtlineError, match="max_steps must be an integer from 1 to 1000"):
        with_tools(spec_from_roles("r", []), max_steps=0)


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        ('tools = "git"', "task[0].tools: wrong type"),
        ('tools = [".x"]', "task[0].tools: '.x' does not start with a server name"),
        ("max_steps = 0", "max_steps must be an integer from 1 to 1000, got 0"),
    ],
)
def test_a_plan_names_the_bad_key(tmp_path: Path, lines: str, problem: str) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(f'request = "r"\n[[task]]\nrole = "reader"\n{lines}\n')
    with pytest.raises(ConfigError) as raised:
        load_plan(path)
    assert str(path) in raised.value.message and problem in raised.value.message
