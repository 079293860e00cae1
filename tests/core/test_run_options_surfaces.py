"""Every run option on every surface, driven by the one definition
(:data:`thoughtline.runtime.planning.options.OPTIONS`).

- Each surface takes exactly the options the definition offers it: ``thoughtline run``
  and ``chat`` (their flags), ``POST /v1/runs`` (its fields), the page's form (its
  inputs), the MCP tool (its arguments), the ACP agent (``_meta.thoughtline`` keys it
  accepts) and the library API (the keywords of ``run``, ``stream``,
  ``Orchestrator.start`` and ``Conversation.send``). An option added to the definition
  and not to a surface, or a surface's new input the definition does not know, fails.
- A bad value of each option is refused on every surface that offers it, through the
  real surface (the CLI process, the daemon over HTTP, the MCP and ACP servers over
  stdio, the Python API), with the same code and a message in that surface's own word:
  ``--max-steps`` on the command line, ``max_steps`` over HTTP, MCP and in Python,
  ``_meta.thoughtline.max_steps`` in ACP; never another surface's.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from acp.exceptions import RequestError
from acp.meta import PROTOCOL_VERSION

import thoughtline
from tests.acp.test_acp_agent import bounded, spawn
from tests.cli.test_run_cli import thoughtline as thoughtline_cli
from tests.mcp.test_mcp_server import mcp_server, text_of
from tests.server.conftest import StartDaemon, home, start_daemon  # noqa: F401  (fixtures)
from thoughtline.config import Config
from thoughtline.errors import ThoughtlineError
from thoughtline.runtime.planning import options as definition
from thoughtline.runtime.planning.options import BY_NAME, OPTIONS, SURFACES, Surface

STATIC = Path(thoughtline.__file__).resolve().parent / "server" / "static"

CLI_OTHER = {
    "run": {"--continue", "--mcp-config", "--json", "--quiet", "--help"},
    "chat": {"--continue", "--help"},
}
"""Flags of the commands that are not run options: how the command shows a run, the
``latest`` shorthand of ``--continues``, and servers added to the config."""
MCP_OTHER = {"self", "ctx", "wait", "timeout_s"}
"""Arguments of the MCP tool that say how the call waits, not what the run is."""

GOOD: dict[str, Any] = {
    "request": "x",
    "roles": ["reviewer"],
    "system": "Be brief.",
    "provider": "openai",
    "model": "gpt-5",
    "chain_of_thought": "surface",
    "effort": "high",
    "max_output_tokens": 100,
    "temperature": 0.5,
    "worker_backend": "inline",
    "tools": ["demo"],
    "max_steps": 3,
    "max_cost": 1.0,
    "continues": "run_x",
    "plan": {},
    "conversation_id": "s",
    "client": "app",
    "client_turns": {},
}
"""A good value of every option (ACP's accepted keys are found by sending them)."""

BAD: dict[str, tuple[object, str | None, str]] = {
    # option: (a bad value, as a flag's text (None: a flag cannot spell it), its code)
    "roles": ("reviewer", None, "REQUEST_INVALID"),
    "system": (" ", " ", "REQUEST_INVALID"),
    "provider": ("", "", "REQUEST_INVALID"),
    "model": ("../m", "../m", "MODEL_ID_INVALID"),
    "chain_of_thought": ("loud", "loud", "CHAIN_OF_THOUGHT_UNKNOWN"),
    "effort": ("turbo", "turbo", "EFFORT_UNKNOWN"),
    "max_output_tokens": (0, "0", "REQUEST_INVALID"),
    "temperature": (3, "3", "REQUEST_INVALID"),
    "worker_backend": ("cloud", "cloud", "WORKER_BACKEND_UNKNOWN"),
    "tools": (["a."], "a.", "REQUEST_INVALID"),
    "max_steps": (0, "0", "REQUEST_INVALID"),
    "max_cost": (-1, "-1", "REQUEST_INVALID"),
}
NOT_REFUSED_HERE = {
    "request": "an empty request is one sentence on every surface (tests/server, tests/mcp)",
    "continues": "how a continues text is resolved is the id resolver's (tests/core)",
    "plan": "a plan file's values are checked as the file's keys (tests/runtime)",
    "conversation_id": "the ACP session id, never given as a value",
    "client": "the gateway client is the one the token names, never a value a caller gives",
    "client_turns": "each client API's dialect reads the body and refuses it in that API's "
    "words (tests/gateway)",
}
WORDLESS = {"model"}
"""Options refused in one sentence that is the same on every surface (docs/contracts.md,
"Model ids"): it names the id, not the field."""
ACP_CODES = {"REQUEST_INVALID": "SESSION_SETTINGS_INVALID"}
"""A bad ``_meta.thoughtline`` value is a bad session setting (docs/contracts.md)."""


def expected(surface: Surface) -> set[str]:
    return {option.name for option in OPTIONS if surface in option.surfaces}


def cli_offered(command: click.Command, surface: Surface) -> set[str]:
    by_flag = {option.word(surface): option.name for option in OPTIONS}
    found: set[str] = set()
    unknown: list[str] = []
    for param in command.params:
        if isinstance(param, click.Argument):
            found.add(by_flag[(param.name or "").upper()])
            continue
        flags = [flag for flag in param.opts if flag.startswith("--")]
        if set(flags) & CLI_OTHER[surface]:
            continue
        names = [by_flag[flag] for flag in flags if flag in by_flag]
        if not names:
            unknown.extend(flags)
        found.update(names)
    assert not unknown, f"flags of {surface} the definition does not know: {unknown}"
    return found


def keywords(function: Callable[..., object]) -> set[str]:
    names: set[str] = set()
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            typed = re.fullmatch(r"Unpack\[(\w+)\]", str(parameter.annotation))
            assert typed is not None, parameter.annotation
            names.update(typing.get_type_hints(getattr(definition, typed[1])))
        elif name not in ("self", "config", "environ"):
            names.add(name)
    return names


def offered(surface: Surface) -> set[str]:
    """The options ``surface`` takes, found in the surface itself."""
    if surface == "run":
        from thoughtline.cli.run_command import run_command

        return cli_offered(run_command, surface)
    if surface == "chat":
        from thoughtline.cli.chat_command import chat_command

        return cli_offered(chat_command, surface) | {"request"}  # each line typed
    if surface == "http":
        from thoughtline.server.schemas import RunCreate

        return set(RunCreate.model_fields)
    if surface == "page":
        html = (STATIC / "index.html").read_text(encoding="utf-8")
        form = html[html.index('<form id="run-form"') : html.index("</form>")]
        names = set(re.findall(r'\bname="(\w+)"', form))
        follow_up = (STATIC / "conversation.js").read_text(encoding="utf-8")
        if re.search(r"api\.startRun\(\{[^}]*\bcontinues\b", follow_up):
            names.add("continues")
        return names
    if surface == "mcp":
        from thoughtline.integrations.mcp.tools import ThoughtlineMCP

        parameters = inspect.signature(ThoughtlineMCP.orchestration_run).parameters
        return set(parameters) - MCP_OTHER
    if surface == "acp":
        from thoughtline.integrations.acp.settings import SessionSettings

        taken = {"request", "conversation_id"}  # the prompt, the session id
        for name, value in GOOD.items():
            try:
                SessionSettings().with_meta({name: value})
            except RequestError:
                continue
            taken.add(name)
        return taken
    if surface == "python":
        from thoughtline.api.chat import AsyncConversation, Conversation
        from thoughtline.api.orchestrator import Orchestrator
        from thoughtline.api.run_stream import stream

        names = keywords(thoughtline.run)
        assert keywords(stream) == names
        assert keywords(Orchestrator.start) == names
        for send in (Conversation.send, AsyncConversation.send):
            assert keywords(send) == names - {"continues"}
        return names | {"plan"}  # a RunSpec given as the request
    if surface == "gateway":
        from thoughtline.config.gateway import GatewayClient
        from thoughtline.gateway.call import GatewayCall, ReasoningAsk
        from thoughtline.model.client_turns import ClientTurns
        from thoughtline.model.requests import Message
        from thoughtline.server.gateway.bridge import gateway_options
        from thoughtline.server.gateway.routing import Route

        asked = Message(role="user", content="x")
        call = GatewayCall(
            dialect="chat_completions",
            model="a/m",
            messages=(asked,),
            max_output_tokens=10,
            temperature=0.5,
            reasoning=ReasoningAsk(effort="high"),
        )
        given = gateway_options(
            GatewayClient(name="app", token_sha256="0" * 64),
            call,
            Route(asked="a/m", endpoint="a", model="m"),
            ClientTurns(system=None, messages=(asked,)),
            left_today=1.0,
        )
        return {name for name in BY_NAME if getattr(given, name) not in (None, ())}
    raise AssertionError(surface)


@pytest.mark.parametrize("surface", SURFACES)
def test_each_surface_takes_exactly_the_options_the_definition_offers_it(
    surface: Surface,
) -> None:
    assert offered(surface) == expected(surface)


BOUNDS = ("minimum", "maximum", "enum", "maxItems")


def assert_same_bounds(surface: Surface, properties: dict[str, Any]) -> None:
    """Each option's value schema on ``surface`` has the definition's bounds."""
    for name in expected(surface) & set(properties):
        branches = properties[name].get("anyOf", [properties[name]])
        (value,) = [branch for branch in branches if branch.get("type") != "null"]
        wanted = {key: BY_NAME[name].schema[key] for key in BOUNDS if key in BY_NAME[name].schema}
        assert {key: value[key] for key in wanted if key in value} == wanted, (surface, name)


def test_the_daemons_openapi_fields_have_the_definitions_bounds() -> None:
    from thoughtline.server.schemas import RunCreate

    assert_same_bounds("http", RunCreate.model_json_schema()["properties"])


def test_every_option_has_a_bad_value_in_the_table_or_says_why_not() -> None:
    assert set(BAD) | set(NOT_REFUSED_HERE) == set(BY_NAME)
    assert all(set(GOOD) >= {option.name} for option in OPTIONS)


def cases(*surfaces: Surface) -> list[tuple[str, Surface]]:
    return [
        (name, surface) for name in BAD for surface in surfaces if surface in BY_NAME[name].surfaces
    ]


def assert_words(name: str, surface: Surface, message: str) -> None:
    """The message names the option in ``surface``'s word, never a flag elsewhere."""
    word = BY_NAME[name].word(surface)
    if name not in WORDLESS:
        assert word in message, (surface, message)
    if surface not in ("run", "chat"):
        assert "--" not in message, (surface, message)


@pytest.mark.parametrize(("name", "surface"), cases("python"))
def test_a_bad_value_is_refused_by_the_python_api(
    name: str, surface: Surface, tmp_path: Path, environ: dict[str, str]
) -> None:
    value, _text, code = BAD[name]
    given: dict[str, Any] = {"worker_backend": "inline", name: value}
    env = {**environ, "THOUGHTLINE_HOME": str(tmp_path / "home")}
    with pytest.raises(ThoughtlineError) as refused:
        thoughtline.run("x", config=Config(path=None), environ=env, **given)
    assert refused.value.code == code
    assert_words(name, surface, refused.value.message)


def assert_model_missing(surface: Surface, code: str, message: str) -> None:
    """Planning's MODEL_MISSING tells the caller to give a model, in its own word."""
    assert code == "MODEL_MISSING", message
    assert f"No default model for provider 'vllm': pass {BY_NAME['model'].word(surface)} (" in (
        message
    )
    assert_words("model", surface, message)


def test_a_provider_without_a_default_model_is_told_in_the_python_word(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    env = {**environ, "THOUGHTLINE_HOME": str(tmp_path / "home")}
    with pytest.raises(ThoughtlineError) as refused:
        thoughtline.run("x", provider="vllm", config=Config(path=None), environ=env)
    assert_model_missing("python", refused.value.code, refused.value.message)


@pytest.mark.slow
def test_a_provider_without_a_default_model_or_an_unknown_server_is_told_in_flags(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    done = thoughtline_cli(tmp_path / "home", environ, "run", "x", "-p", "vllm", "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert_model_missing("run", error["code"], error["message"])
    unknown = thoughtline_cli(tmp_path / "home", environ, "run", "x", "--tool", "nosuch")
    assert "add [mcp_servers.nosuch] or pass --mcp-config." in unknown.stderr


@pytest.mark.slow
def test_a_bad_value_and_a_planning_hint_are_in_the_daemons_words(
    start_daemon: StartDaemon,  # noqa: F811  (the fixture imported above)
) -> None:
    client = start_daemon().client()
    missing = client.post("/v1/runs", json={"request": "x", "provider": "vllm"}).json()["error"]
    assert_model_missing("http", missing["code"], missing["message"])
    unknown = client.post("/v1/runs", json={"request": "x", "tools": ["nosuch"]}).json()["error"]
    assert unknown["code"] == "TOOL_SERVER_UNKNOWN"
    assert "add [mcp_servers.nosuch] to the config." in unknown["message"]
    assert "--" not in unknown["message"]
    for name, surface in cases("http"):
        value, _text, code = BAD[name]
        answer = client.post("/v1/runs", json={"request": "x", name: value})
        assert answer.status_code in (400, 422), (name, answer.text)
        error = answer.json()["error"]
        assert error["code"] == code, (name, error)
        assert_words(name, surface, error["message"])
    # The page's form sends these fields as they are, and shows the daemon's sentence.
    assert all(BY_NAME[name].word("page") == BY_NAME[name].word("http") for name in BAD)


@pytest.mark.slow
async def test_a_bad_value_is_refused_by_the_mcp_tool(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    async with mcp_server(tmp_path, environ) as server:
        listing = await server.session.list_tools()
        (tool,) = [tool for tool in listing.tools if tool.name == "orchestration_run"]
        assert set(tool.input_schema["properties"]) - MCP_OTHER == expected("mcp")
        assert_same_bounds("mcp", tool.input_schema["properties"])
        missing = await server.call("orchestration_run", {"request": "x", "provider": "vllm"})
        code, _, message = text_of(missing).partition(": ")
        assert_model_missing("mcp", code, message)
        for name, surface in cases("mcp"):
            value, _text, code = BAD[name]
            result = await server.call("orchestration_run", {"request": "x", name: value})
            assert result.is_error, (name, text_of(result))
            assert text_of(result).startswith(f"{code}: "), (name, text_of(result))
            assert_words(name, surface, text_of(result))


@pytest.mark.slow
async def test_a_bad_value_is_refused_by_the_acp_agent(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    agent_home = tmp_path / "home"
    agent_home.mkdir()
    async with spawn(agent_home, environ) as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        for name, surface in cases("acp"):
            value, _text, code = BAD[name]
            with pytest.raises(RequestError) as refused:
                await bounded(
                    agent.conn.new_session(cwd="/", mcp_servers=[], thoughtline={name: value})
                )
            assert refused.value.code == -32602
            assert refused.value.data == {"code": ACP_CODES.get(code, code)}, name
            assert_words(name, surface, str(refused.value))
        assert agent.process.returncode is None  # still serving


@pytest.mark.slow
@pytest.mark.parametrize(("name", "surface"), cases("run", "chat"))
def test_a_bad_flag_is_refused_by_the_command_line(
    name: str, surface: Surface, tmp_path: Path, environ: dict[str, str]
) -> None:
    _value, text, code = BAD[name]
    if text is None:
        pytest.skip(f"{BY_NAME[name].word(surface)} takes one value per flag")
    flag = f"{BY_NAME[name].word(surface)}={text}"
    cli_home = tmp_path / "home"
    if surface == "run":
        done = thoughtline_cli(cli_home, environ, "run", "x", flag, "--json")
        assert json.loads(done.stdout)["error"]["code"] == code, done.stdout
    else:  # chat prints no JSON: the same sentence, before it asks for a terminal
        done = thoughtline_cli(cli_home, environ, "chat", flag)
        assert "CHAT_NEEDS_TERMINAL" not in done.stderr and "needs a terminal" not in done.stderr
    assert done.returncode == 2, done.stderr
    assert_words(name, surface, done.stderr)
