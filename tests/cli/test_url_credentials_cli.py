"""Credentials written into a URL (``http://user:secretpass@host/...``) are used to
connect and never printed or stored: an MCP server's URL (``thoughtline.toml`` and an
``mcp.json``), a provider's base URL (config and ``*_BASE_URL``), a proxy's URL and the
OTLP endpoint, each as ``thoughtline`` shows it when a call fails, in ``tools``,
``providers`` and ``config``, in the snapshot, the trace and every file under the home."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.cli.test_run_cli import PROXY_VARIABLES, thoughtline
from tests.support import all_bytes_under, refusal_lines
from tests.tools.test_mcp_tools import _config, _free_port, serving_http
from tests.tools.test_tool_unhappy_cli import calling
from thoughtline.testing import Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

CANARY = "secretpass"
# A query parameter that carries a token, beside the userinfo.
TOKEN = "querytoken-9b2e"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def _nowhere_written(home: Path, *outputs: str) -> None:
    for output in outputs:
        assert CANARY not in output and TOKEN not in output, output
    written = all_bytes_under(home)
    assert CANARY.encode() not in written and TOKEN.encode() not in written


def test_an_mcp_url_that_does_not_answer_is_shown_without_its_credentials(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    port = _free_port()  # nothing listens there
    url = f"http://user:{CANARY}@127.0.0.1:{port}/mcp?api_key={TOKEN}&v=2"
    shown = f"http://user:***@127.0.0.1:{port}/mcp?api_key=***&v=2"
    _config(home, f'[mcp_servers.remote]\nurl = "{url}"\n')
    mcp_json = home.parent / "mcp.json"
    mcp_json.write_text(json.dumps({"mcpServers": {"listed": {"url": url.replace("user:", "")}}}))

    listed = thoughtline(home, environ, "tools", "--mcp-config", str(mcp_json))
    assert listed.returncode == 1
    # The table cuts long cells: their start.
    assert "http://user:***@127" in listed.stdout
    # A user name alone may be the token itself: masked whole.
    assert "http://***@127" in listed.stdout
    assert f"The MCP server remote ({shown}) did not start" in listed.stderr
    assert f"The MCP server listed ({shown.replace('user:', '')}) did not start" in listed.stderr

    as_json = thoughtline(home, environ, "tools", "--json", "--mcp-config", str(mcp_json))
    servers = {server["name"]: server for server in json.loads(as_json.stdout)["servers"]}
    assert servers["remote"]["target"] == shown
    assert servers["listed"]["target"] == shown.replace("user:", "")
    assert servers["remote"]["error"]["code"] == "TOOL_SERVER_UNAVAILABLE"

    ran = thoughtline(home, environ, "run", "Hi.", "--tool", "remote")
    assert ran.returncode == 2
    (line,) = refusal_lines(ran.stderr, "remote")
    assert line.startswith(f"thoughtline: The MCP server remote ({shown}) did not start")
    assert sim.requests == []
    _nowhere_written(
        home, listed.stdout, listed.stderr, as_json.stdout, as_json.stderr, ran.stdout, ran.stderr
    )


def test_an_mcp_url_with_credentials_reaches_its_server_and_a_death_stores_it_masked(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    basic = base64.b64encode(f"user:{CANARY}".encode()).decode()
    with serving_http(f"Basic {basic}") as served:
        url = served.replace("http://", f"http://user:{CANARY}@")
        shown = served.replace("http://", "http://user:***@")
        _config(home, f'[mcp_servers.remote]\nurl = "{url}"\n\n[timeouts]\ntool = 30\n')
        sim.script(Transcript(answer="Done."))
        sim.script(calling("remote__die", {}, call_id="call_die"), times=1)
        sim.script(calling("remote__echo", {"text": "in"}), times=1)
        ran = thoughtline(home, environ, "run", "Go.", "--tool", "remote", "--json")
    assert ran.returncode == 0, ran.stderr
    (task,) = json.loads(ran.stdout)["tasks"]
    echoed, died = task["tool_calls"]
    # The credentials were sent: the server answered only with them.
    assert (echoed["status"], echoed["result"]) == ("done", "in")
    assert died["error"] == "TOOL_SERVER_UNAVAILABLE"
    assert died["result"].startswith(f"The MCP server remote ({shown}) failed during the call")
    status = thoughtline(home, environ, "status", "--json")
    trace = thoughtline(home, environ, "trace", "latest", "--json")
    assert shown in trace.stdout
    _nowhere_written(home, ran.stdout, ran.stderr, status.stdout, trace.stdout, trace.stderr)


@pytest.mark.parametrize("where", ["config", "variable"])
def test_a_provider_base_url_that_cannot_be_reached_is_shown_without_its_credentials(
    home: Path, environ: dict[str, str], where: str
) -> None:
    port = _free_port()
    url = f"http://user:{CANARY}@127.0.0.1:{port}/anthropic?key={TOKEN}"
    shown = f"http://user:***@127.0.0.1:{port}/anthropic?key=***"
    env = dict(environ)
    if where == "config":
        _config(home, f'[providers.anthropic]\nbase_url = "{url}"\n')
    else:
        env["ANTHROPIC_BASE_URL"] = url
    ran = thoughtline(home, env, "run", "x", "--json")
    assert ran.returncode == 1
    (task,) = json.loads(ran.stdout)["tasks"]
    assert task["error"]["code"] == "PROVIDER_UNREACHABLE"
    assert task["error"]["message"].startswith(f"Cannot reach anthropic at {shown} (")
    providers = thoughtline(home, env, "providers", "--json")
    assert shown in providers.stdout
    config = thoughtline(home, env, "config", "--json")
    endpoints = {endpoint["name"]: endpoint for endpoint in json.loads(config.stdout)["endpoints"]}
    assert endpoints["anthropic"]["base_url"] == shown
    human = thoughtline(home, env, "config")
    trace = thoughtline(home, env, "trace", "latest", "--json")
    _nowhere_written(
        home, ran.stdout, ran.stderr, providers.stdout, config.stdout, human.stdout, trace.stdout
    )


def test_a_provider_base_url_with_credentials_sends_them_and_records_them_masked(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    base = environ["ANTHROPIC_BASE_URL"]
    env = {**environ, "ANTHROPIC_BASE_URL": base.replace("http://", f"http://user:{CANARY}@")}
    _config(home, "[trace]\nprovider_raw = true\n")
    sim.script(Transcript(answer="Fine."))
    ran = thoughtline(home, env, "run", "x", "--json")
    assert ran.returncode == 0, ran.stderr
    (request,) = sim.requests
    sent = base64.b64encode(f"user:{CANARY}".encode()).decode()
    assert request.headers["authorization"] == f"Basic {sent}"
    trace = thoughtline(home, env, "trace", "latest", "--json", "--layer", "provider_raw")
    (exchange,) = [
        event for event in json.loads(trace.stdout) if event["type"] == "provider.exchange"
    ]
    assert exchange["metadata"]["url"].startswith(base.replace("http://", "http://user:***@"))
    answer = thoughtline(home, env, "trace", "latest", "--json")
    _nowhere_written(home, ran.stdout, ran.stderr, trace.stdout, answer.stdout)


def test_a_proxy_that_cannot_be_reached_is_shown_without_its_credentials(
    home: Path, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in PROXY_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    port = _free_port()
    env = {**environ, "HTTP_PROXY": f"http://user:{CANARY}@127.0.0.1:{port}"}
    ran = thoughtline(home, env, "run", "x", "--json")
    assert ran.returncode == 1
    (task,) = json.loads(ran.stdout)["tasks"]
    assert task["error"]["code"] == "PROVIDER_UNREACHABLE"
    assert f"through the proxy HTTP_PROXY=http://127.0.0.1:{port} (" in task["error"]["message"]
    trace = thoughtline(home, env, "trace", "latest", "--json")
    _nowhere_written(home, ran.stdout, ran.stderr, trace.stdout)


def test_the_otlp_endpoint_is_shown_without_its_credentials(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    port = _free_port()
    _config(
        home,
        f'[telemetry]\nexporter = "otlp"\nendpoint = "http://user:{CANARY}@127.0.0.1:{port}"\n',
    )
    config = thoughtline(home, environ, "config", "--json")
    settings = {item["key"]: item["value"] for item in json.loads(config.stdout)["settings"]}
    assert settings["telemetry.endpoint"] == f"http://user:***@127.0.0.1:{port}"
    human = thoughtline(home, environ, "config")
    sim.script(Transcript(answer="Fine."))
    ran = thoughtline(home, environ, "run", "x")  # the export fails: nothing listens
    assert ran.returncode == 0, ran.stderr
    _nowhere_written(home, config.stdout, human.stdout, ran.stdout, ran.stderr)


@pytest.mark.parametrize(
    ("table", "key"),
    [
        (f'[mcp_servers.s]\nurl = "ftp://user:{CANARY}@h/mcp"\n', "mcp_servers.s.url"),
        (f'[providers.anthropic]\nbase_url = "ftp://user:{CANARY}@h/v1"\n', "base_url"),
    ],
    ids=["mcp-url", "base-url"],
)
def test_a_url_refused_by_the_config_is_quoted_without_its_credentials(
    home: Path, environ: dict[str, str], table: str, key: str
) -> None:
    _config(home, table)
    result = thoughtline(home, environ, "tools")
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert key in line and "ftp://user:***@h/" in line
    _nowhere_written(home, result.stdout, result.stderr)
