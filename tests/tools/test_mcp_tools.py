"""Tool servers over MCP: real servers from the package index (``mcp-server-time``,
``mcp-server-git``) and a server built with the ``mcp`` SDK, over stdio and Streamable
HTTP on 127.0.0.1; what a run may call of them; and every way one can fail."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest

from tests.cli.test_run_cli import cli_env, thoughtline
from tests.conftest import CANARY_KEY
from tests.support import refusal_lines, start_process
from thoughtline import Orchestrator
from thoughtline import run as thoughtline_run
from thoughtline.config import Config
from thoughtline.errors import ConfigError, ThoughtlineError
from thoughtline.testing import SimToolCall, Simulator, Transcript
from thoughtline.tools.mcp_client import McpConnection
from thoughtline.tools.settings import McpServerSettings

pytestmark = pytest.mark.slow  # every test starts server processes

TEST_SERVER = str(Path(__file__).with_name("mcp_test_server.py"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def _config(home: Path, text: str) -> None:
    (home.parent / "thoughtline.toml").write_text(text)


CANNOT_START = "import sys; sys.stderr.write('cannot open the index at /nowhere\\n'); sys.exit(3)"
"""A server that says why on stderr and exits before it answers (for :func:`broken_server`)."""


def broken_server(home: Path, script: str = CANNOT_START) -> None:
    """Configures the MCP server ``broken`` as ``python -c script``: a server that fails
    before it answers, with what ``script`` writes to stderr."""
    _config(
        home,
        f"[mcp_servers.broken]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = ['-c', {json.dumps(script)}]\n",
    )


def _git_repository(path: Path) -> Path:
    path.mkdir()
    for args in (
        ["init", "-q"],
        [
            "-c",
            "user.email=t@example.org",
            "-c",
            "user.name=t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first commit",
        ],
    ):
        subprocess.run(["git", *args], cwd=path, check=True)
    return path


def test_tools_lists_real_servers_and_what_a_run_may_call(
    home: Path, environ: dict[str, str], tmp_path: Path
) -> None:
    repository = _git_repository(tmp_path / "repo")
    _config(
        home,
        f"""
[mcp_servers.time]
command = {json.dumps(sys.executable)}
args = ["-m", "mcp_server_time"]

[mcp_servers.git]
command = {json.dumps(sys.executable)}
args = ["-m", "mcp_server_git", "--repository", {json.dumps(str(repository))}]
allow = ["git_status", "git_log", "git_reset"]
""",
    )
    result = thoughtline(home, environ, "tools", "--json")
    assert result.returncode == 0, result.stderr
    servers = {server["name"]: server for server in json.loads(result.stdout)["servers"]}
    assert servers["time"]["error"] is None
    time_tools = {tool["name"]: tool for tool in servers["time"]["tools"]}
    assert set(time_tools) == {"get_current_time", "convert_time"}
    assert all(tool["allowed"] and tool["read_only"] for tool in time_tools.values())
    git_tools = {tool["name"]: tool for tool in servers["git"]["tools"]}
    assert {name for name, tool in git_tools.items() if tool["allowed"]} == {
        "git_status",
        "git_log",
    }
    # Listed in allow, but annotated destructive: not without allow_destructive.
    assert git_tools["git_reset"]["destructive"] and not git_tools["git_reset"]["allowed"]

    human = thoughtline(home, environ, "tools")
    assert human.returncode == 0, human.stderr
    assert "time.get_current_time" in human.stdout and "git.git_reset" in human.stdout


async def test_a_stdio_server_sees_its_own_variables_and_never_a_provider_key(
    environ: dict[str, str],
) -> None:
    settings = McpServerSettings(
        name="probe",
        command=sys.executable,
        args=(TEST_SERVER,),
        env={"PROBE_MARK": "mark-1", "FROM_ENV": "${PROBE_SOURCE}"},
    )
    everything = {**environ, "PROBE_SOURCE": "from-the-environment", "PATH": "/usr/bin:/bin"}
    async with McpConnection(settings, environ=everything, secrets=[CANARY_KEY]) as server:
        outcome = await server.call("environment", {}, timeout_s=10)
    seen = json.loads(outcome.text)
    assert seen["PROBE_MARK"] == "mark-1"
    assert seen["FROM_ENV"] == "from-the-environment"
    assert CANARY_KEY not in outcome.text
    assert not any(name.endswith("_API_KEY") for name in seen)
    assert not any(name.endswith("_BASE_URL") for name in seen)


DOCUMENTED_BASE = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR")
"""docs/contracts.md, ``mcp_servers.NAME.env``: what a stdio server gets besides its own
variables, with every ``LC_*``."""


def test_a_stdio_server_started_by_run_gets_the_documented_environment_and_nothing_else(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    _config(
        home,
        f"""
[mcp_servers.probe]
command = {json.dumps(sys.executable)}
args = [{json.dumps(TEST_SERVER)}]
env = {{ PROBE_MARK = "mark-1" }}
""",
    )
    outside = {
        "SHELL": "/bin/zsh",
        "TERM": "xterm-256color",
        "USER": "someone",
        "LOGNAME": "someone",
        "LANG": "C.UTF-8",
        "LC_TIME": "C",
        "TZ": "UTC",
        "TMPDIR": str(home.parent),
        "EDITOR": "vi",
        "SSH_AUTH_SOCK": "/tmp/agent.sock",
    }
    sim.script_turns(
        Transcript(
            tool_calls=(SimToolCall(call_id="c1", name="probe__environment", arguments="{}"),)
        ),
        Transcript(answer="Done."),
    )
    result = thoughtline(home, {**environ, **outside}, "run", "Hi", "--tool", "probe", "--json")
    assert result.returncode == 0, result.stderr
    (call,) = json.loads(result.stdout)["tasks"][0]["tool_calls"]
    seen = json.loads(call["result"])
    given = cli_env(home, {**environ, **outside})
    expected = {
        name: value
        for name, value in given.items()
        if name in DOCUMENTED_BASE or name.startswith("LC_")
    }
    assert seen == {**expected, "PROBE_MARK": "mark-1"}


async def test_a_stdio_server_gets_the_environment_it_was_given_even_in_the_c_locale() -> None:
    """No locale variable given: nothing between thoughtline and the server adds one
    (Python sets LC_CTYPE=C.UTF-8 in its own environment in the C locale; this server
    is told not to, so what it sees is what it was given)."""
    settings = McpServerSettings(
        name="probe",
        command=sys.executable,
        args=(TEST_SERVER,),
        env={"PYTHONCOERCECLOCALE": "0"},
    )
    given = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "TERM": "dumb"}
    async with McpConnection(settings, environ=given, secrets=[CANARY_KEY]) as server:
        outcome = await server.call("environment", {}, timeout_s=10)
    assert json.loads(outcome.text) == {
        "PATH": os.environ["PATH"],
        "HOME": "/nonexistent",
        "PYTHONCOERCECLOCALE": "0",
    }


async def test_a_section_that_would_hand_over_a_provider_key_is_refused(
    environ: dict[str, str],
) -> None:
    settings = McpServerSettings(
        name="leaky",
        command=sys.executable,
        args=(TEST_SERVER,),
        env={"TOKEN": "${OPENAI_API_KEY}"},
        source="thoughtline.toml",
    )
    with pytest.raises(
        ConfigError, match=r"mcp_servers\.leaky\.env\.TOKEN: would hand a provider key"
    ):
        async with McpConnection(settings, environ=environ, secrets=[CANARY_KEY]):
            pass


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[tuple[str, str]]:
    """The test server over Streamable HTTP on 127.0.0.1, and the token it requires."""
    token = "http-token-5d1c0a9e"
    with serving_http(token) as url:
        yield url, token


@contextmanager
def serving_http(token: str) -> Iterator[str]:
    """The test server over Streamable HTTP on 127.0.0.1 (its URL) while the block runs,
    requiring ``token`` (see ``mcp_test_server.py``)."""
    port = _free_port()
    process = start_process(
        [sys.executable, TEST_SERVER, "http", str(port), token],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx2.get(url, timeout=1)
                break
            except httpx2.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the test MCP server did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_streamable_http_server_with_a_header_from_the_environment(
    home: Path, environ: dict[str, str], http_server: tuple[str, str]
) -> None:
    url, token = http_server
    _config(
        home,
        f"""
[mcp_servers.remote]
url = "{url}"
headers = {{ Authorization = "Bearer ${{REMOTE_TOKEN}}" }}
""",
    )
    listed = thoughtline(home, {**environ, "REMOTE_TOKEN": token}, "tools", "--json")
    assert listed.returncode == 0, listed.stderr
    (server,) = json.loads(listed.stdout)["servers"]
    assert server["transport"] == "http"
    assert {tool["name"] for tool in server["tools"]} == {
        "ancestors",
        "environment",
        "repeat",
        "sleep",
        "hang",
        "big",
        "busy",
        "pid",
        "echo",
        "refuse",
        "die",
        "meet",
        "shout",
    }
    assert server["header_names"] == ["Authorization"]
    assert token not in listed.stdout + listed.stderr

    unset = thoughtline(home, environ, "tools")
    assert unset.returncode == 2
    assert "mcp_servers.remote.headers.Authorization: uses ${REMOTE_TOKEN}" in unset.stderr

    refused = thoughtline(home, {**environ, "REMOTE_TOKEN": "wrong"}, "tools", "--json")
    assert refused.returncode == 1
    (server,) = json.loads(refused.stdout)["servers"]
    assert server["error"]["code"] == "TOOL_SERVER_UNAVAILABLE"
    assert "Bearer wrong" not in refused.stdout + refused.stderr  # header values never shown


@pytest.mark.parametrize(
    ("where", "key"),
    [("toml", "Authorization"), ("mcp.json", "X-Goog-Api-Key")],
    ids=["bearer-from-variable-in-toml", "literal-key-in-mcp-json"],
)
def test_a_header_that_would_hand_over_a_provider_key_is_refused(
    home: Path, environ: dict[str, str], http_server: tuple[str, str], where: str, key: str
) -> None:
    url, _token = http_server
    arguments: tuple[str, ...] = ()
    if where == "toml":
        _config(
            home,
            f'[mcp_servers.remote]\nurl = "{url}"\n'
            'headers = { Authorization = "Bearer ${ANTHROPIC_API_KEY}" }\n',
        )
        source = str(home.parent / "thoughtline.toml")
    else:
        path = home.parent / "mcp.json"
        servers = {"remote": {"type": "http", "url": url, "headers": {key: CANARY_KEY}}}
        path.write_text(json.dumps({"mcpServers": servers}))
        arguments, source = ("--mcp-config", str(path)), str(path)
    expected = (
        f"thoughtline: {source}: mcp_servers.remote.headers.{key}: would hand a provider key "
        "to the tool server; tool servers never get provider keys. Give the server a "
        "credential of its own."
    )
    for command in (("tools", *arguments), ("run", "Hi", "--tool", "remote", *arguments)):
        result = thoughtline(home, environ, *command)
        assert result.returncode == 2, result.stderr
        servers = ("remote",) if command[0] == "run" else ()
        assert refusal_lines(result.stderr, *servers) == [expected], command
        assert CANARY_KEY not in result.stdout + result.stderr
    runs = thoughtline(home, environ, "runs", "--json")
    assert json.loads(runs.stdout) == [], runs.stdout


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "not valid JSON (line 1"),
        ('{"servers_list": {}}', 'no "mcpServers" object'),
        ('{"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}}', "legacy SSE"),
        ('{"mcpServers": {"both": {"command": "x", "url": "http://127.0.0.1:1/mcp"}}}', "not both"),
        ('{"mcpServers": {"bad name": {"command": "x"}}}', "not a valid server name"),
    ],
    ids=["malformed", "no-servers", "sse", "command-and-url", "bad-name"],
)
def test_a_bad_mcp_json_is_one_sentence_and_exit_2(
    home: Path, environ: dict[str, str], content: str, needle: str
) -> None:
    path = home.parent / "mcp.json"
    path.write_text(content)
    result = thoughtline(home, environ, "tools", "--mcp-config", str(path))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"thoughtline: {path}"), result.stderr
    assert needle in lines[0]


def test_an_mcp_json_adds_servers_and_a_duplicate_name_is_refused(
    home: Path, environ: dict[str, str]
) -> None:
    path = home.parent / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "probe": {"command": sys.executable, "args": [TEST_SERVER]},
                    "off": {"command": "/no/such", "disabled": True},
                }
            }
        )
    )
    listed = thoughtline(home, environ, "tools", "--json", "--mcp-config", str(path))
    assert listed.returncode == 0, listed.stderr
    assert [server["name"] for server in json.loads(listed.stdout)["servers"]] == ["probe"]
    _config(home, f"[mcp_servers.probe]\ncommand = {json.dumps(sys.executable)}\n")
    twice = thoughtline(home, environ, "tools", "--mcp-config", str(path))
    assert twice.returncode == 2
    assert "'probe' is defined twice" in twice.stderr


def test_a_server_that_does_not_start_shows_what_it_said(
    home: Path, environ: dict[str, str]
) -> None:
    broken_server(home)
    result = thoughtline(home, environ, "tools")
    assert result.returncode == 1
    assert "TOOL_SERVER_UNAVAILABLE" in result.stdout
    assert "The MCP server broken" in result.stderr
    assert "cannot open the index at /nowhere" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ('command = "x"\nurl = "http://127.0.0.1:1/mcp"', "mcp_servers.s: give either command"),
        ('command = "x"\nheaders = { A = "b" }', "mcp_servers.s.headers: does not apply"),
        ('url = "ftp://x"', "mcp_servers.s.url: must be an http:// or https:// URL"),
        ('command = "x"\nport = 3', "mcp_servers.s.port: unknown key"),
        ('command = "x"\nargs = "one"', "mcp_servers.s.args: wrong type"),
    ],
    ids=["command-and-url", "headers-on-stdio", "bad-url", "unknown-key", "args-not-a-list"],
)
def test_config_mistakes_name_the_file_and_the_key(
    home: Path, environ: dict[str, str], table: str, needle: str
) -> None:
    _config(home, f"[mcp_servers.s]\n{table}\n")
    result = thoughtline(home, environ, "tools")
    assert result.returncode == 2
    assert str(home.parent / "thoughtline.toml") in result.stderr
    assert needle in result.stderr


async def test_a_server_that_hangs_a_slow_tool_and_a_death_mid_call() -> None:
    hangs = McpServerSettings(
        name="hangs", command=sys.executable, args=("-c", "import time; time.sleep(60)")
    )
    with pytest.raises(ThoughtlineError, match="did not answer within 1 s") as raised:
        async with McpConnection(hangs, environ={}, start_timeout_s=1):
            pass
    assert raised.value.code == "TOOL_SERVER_UNAVAILABLE"

    settings = McpServerSettings(name="probe", command=sys.executable, args=(TEST_SERVER,))
    async with McpConnection(settings, environ={}, max_result_chars=1000) as server:
        slow = await server.call("sleep", {"seconds": 30}, timeout_s=0.5)
        assert (slow.is_error, slow.error_code) == (True, "TOOL_TIMEOUT")
        big = await server.call("repeat", {"text": "ab", "times": 50_000}, timeout_s=10)
        assert big.truncated and big.text.startswith("ab" * 500)
        assert "[result cut at 1,000 of 100,000 characters]" in big.text
        missing = await server.call("nope", {}, timeout_s=1)
        assert missing.error_code == "TOOL_NOT_FOUND"
        died = await server.call("die", {}, timeout_s=10)
        assert (died.is_error, died.error_code) == (True, "TOOL_SERVER_UNAVAILABLE")


def test_the_library_checks_tool_names_before_it_stores_a_run(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    probe = McpServerSettings(name="probe", command=sys.executable, args=(TEST_SERVER,))
    config = Config(path=None, mcp_servers={"probe": probe})
    env = {**environ, "THOUGHTLINE_HOME": str(home), "PATH": os.environ["PATH"]}
    with pytest.raises(ThoughtlineError, match="probe has no tool 'nosuch'") as raised:
        thoughtline_run("Hi.", tools=["probe.nosuch"], config=config, environ=env)
    assert raised.value.code == "TOOL_NOT_FOUND"
    sim.script(Transcript(answer="Fine."))
    done = thoughtline_run("Hi.", tools=["probe.repeat"], config=config, environ=env)
    assert done.status == "completed"
    orchestrator = Orchestrator.open(config, environ=env)
    try:
        assert [run.id for run in orchestrator.runs()] == [done.id]
    finally:
        orchestrator.close()
    assert len(sim.requests) == 1


def test_the_library_checks_tool_names_beside_its_callables_before_it_stores_a_run(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    probe = McpServerSettings(name="probe", command=sys.executable, args=(TEST_SERVER,))
    config = Config(path=None, mcp_servers={"probe": probe})
    env = {**environ, "THOUGHTLINE_HOME": str(home), "PATH": os.environ["PATH"]}
    with pytest.raises(ThoughtlineError, match="probe has no tool 'nosuch'") as raised:
        thoughtline_run("Hi.", tools=[shout, "probe.nosuch"], config=config, environ=env)
    assert raised.value.code == "TOOL_NOT_FOUND"
    sim.script(Transcript(answer="Fine."))
    done = thoughtline_run("Hi.", tools=[shout, "probe.repeat"], config=config, environ=env)
    assert done.status == "completed"
    assert done.tasks[0].tools == ("probe.repeat", "python.shout")
    offered = {tool["name"] for tool in sim.requests[0].body["tools"]}  # type: ignore[index]
    assert offered == {"probe__repeat", "python__shout"}
    orchestrator = Orchestrator.open(config, environ=env)
    try:
        assert [run.id for run in orchestrator.runs()] == [done.id]
    finally:
        orchestrator.close()
