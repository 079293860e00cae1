"""The editor's MCP servers in ``thoughtline acp``, through the ``acp`` package's client:
servers passed in ``session/new`` are the session's tools (real servers from the package
index and the test server, over stdio and Streamable HTTP), a destructive tool waits for
``session/request_permission`` (both answers), a tool call's kind comes from its
annotations, and a provider key in the agent's environment never reaches an editor's
server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError
from acp.helpers import text_block
from acp.meta import PROTOCOL_VERSION
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    PermissionOption,
    RequestPermissionResponse,
    SseMcpServer,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

from tests.acp.test_acp_agent import (
    RecordingClient,
    bounded,
    refused_at_start,
    spawn,
    stored_run,
)
from tests.conftest import CANARY_KEY
from tests.support import all_bytes_under
from tests.tools.test_mcp_tools import (
    TEST_SERVER,
    _config,
    _free_port,
    _git_repository,
    http_server,
)
from thoughtline.providers.redaction import REDACTED
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing import SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # every test starts the agent and tool server processes
__all__ = ["http_server"]  # a fixture used here: the test MCP server over Streamable HTTP

FINAL = Transcript(answer="Done.")


def calling(name: str, arguments: dict[str, object], call_id: str = "call_1") -> Transcript:
    return Transcript(
        tool_calls=(SimToolCall(call_id=call_id, name=name, arguments=json.dumps(arguments)),)
    )


def stdio(name: str, *args: str, env: dict[str, str] | None = None) -> McpServerStdio:
    return McpServerStdio(
        name=name,
        command=sys.executable,
        args=list(args),
        env=[EnvVariable(name=key, value=value) for key, value in (env or {}).items()],
    )


@dataclass
class Permission:
    """One ``session/request_permission`` the editor received, and the tool calls it had
    been told of by then."""

    session_id: str
    tool_call: ToolCallUpdate
    options: list[PermissionOption]
    announced: set[str]


@dataclass
class AnsweringClient(RecordingClient):
    """The editor side, answering every permission request with ``answer`` (an option
    id, or ``None`` for a cancelled request)."""

    answer: str | None = "allow_once"
    permissions: list[Permission] = field(default_factory=list)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        announced = {
            update.tool_call_id for _, update in self.updates if isinstance(update, ToolCallStart)
        }
        self.permissions.append(Permission(session_id, tool_call, options, announced))
        if self.answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answer)
        )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def tool_updates(client: RecordingClient, session_id: str) -> tuple[ToolCallStart, list[Any]]:
    """The one tool call of a tool (not a task) in the session: its start and its updates."""
    turn = client.turn(session_id)
    (start,) = [u for u in turn if isinstance(u, ToolCallStart) and "/" in u.tool_call_id]
    updates = [
        u for u in turn if isinstance(u, ToolCallProgress) and u.tool_call_id == start.tool_call_id
    ]
    return start, updates


async def test_a_server_from_session_new_is_the_sessions_tool_and_a_read_only_one_reads(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script_turns(calling("time__get_current_time", {"timezone": "UTC"}), FINAL)
    async with spawn(home, environ, client=AnsweringClient()) as agent:
        init = await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        capabilities = init.agent_capabilities
        assert capabilities is not None and capabilities.mcp_capabilities is not None
        assert (capabilities.mcp_capabilities.http, capabilities.mcp_capabilities.sse) == (
            True,
            False,
        )
        session = await bounded(
            agent.conn.new_session(
                cwd=str(home.parent), mcp_servers=[stdio("time", "-m", "mcp_server_time")]
            )
        )
        response = await bounded(
            agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Time?")])
        )
    assert response.stop_reason == "end_turn"
    start, updates = tool_updates(agent.client, session.session_id)
    assert (start.title, start.kind, start.status) == (
        "time.get_current_time",
        "read",
        "in_progress",
    )
    assert json.loads(start.raw_input["arguments"]) == {"timezone": "UTC"}
    (end,) = updates
    assert end.status == "completed"
    result = json.loads(end.raw_output["result"])
    assert result["timezone"] == "UTC"
    assert result["datetime"] in json.dumps(sim.requests[1].body)  # the model got it
    assert "time__get_current_time" in json.dumps(sim.requests[0].body)
    assert isinstance(agent.client, AnsweringClient) and agent.client.permissions == []

    snapshot = stored_run(home, response.field_meta["thoughtline"]["run_id"])
    (task,) = snapshot["tasks"]
    (call,) = task["tool_calls"]
    assert (call["server"], call["name"], call["status"]) == ("time", "get_current_time", "done")
    assert (call["read_only"], call["destructive"]) == (True, False)


def staged_repository(path: Path) -> Path:
    repository = _git_repository(path)
    (repository / "notes.txt").write_text("staged\n")
    subprocess.run(["git", "add", "notes.txt"], cwd=repository, check=True)
    return repository


def staged(repository: Path) -> str:
    return subprocess.run(
        ["git", "diff", "--cached", "--name-only"],
        cwd=repository,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.mark.parametrize("answer", ["allow_once", "reject_once", None])
async def test_a_destructive_tool_asks_the_editor_and_runs_only_when_allowed(
    home: Path, sim: Simulator, environ: dict[str, str], tmp_path: Path, answer: str | None
) -> None:
    repository = staged_repository(tmp_path / "repo")
    assert staged(repository) == "notes.txt"
    sim.script_turns(calling("git__git_reset", {"repo_path": str(repository)}), FINAL)
    client = AnsweringClient(answer=answer)
    git = stdio("git", "-m", "mcp_server_git", "--repository", str(repository))
    async with spawn(home, environ, client=client) as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        session = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[git]))
        response = await bounded(
            agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Unstage.")])
        )
    assert response.stop_reason == "end_turn"
    assert response.field_meta["thoughtline"]["status"] == "completed"

    (asked,) = client.permissions
    start, updates = tool_updates(client, session.session_id)
    assert start.kind == "delete" and start.title == "git.git_reset"
    # The editor knew the tool call before it was asked about it.
    assert asked.tool_call.tool_call_id == start.tool_call_id
    assert start.tool_call_id in asked.announced
    assert (asked.tool_call.title, asked.tool_call.kind, asked.tool_call.status) == (
        "git.git_reset",
        "delete",
        "pending",
    )
    assert json.loads(asked.tool_call.raw_input["arguments"]) == {"repo_path": str(repository)}
    assert [(o.option_id, o.kind) for o in asked.options] == [
        ("allow_once", "allow_once"),
        ("allow_always", "allow_always"),
        ("reject_once", "reject_once"),
    ]

    snapshot = stored_run(home, response.field_meta["thoughtline"]["run_id"])
    (task,) = snapshot["tasks"]
    assert task["status"] == "done"
    (call,) = task["tool_calls"]
    assert call["destructive"] is True
    answered = json.dumps(sim.requests[1].body)
    if answer == "allow_once":
        assert staged(repository) == ""  # it ran
        assert (call["status"], call["error"]) == ("done", None)
        assert [u.status for u in updates] == ["in_progress", "completed"]
        assert "did not allow" not in answered
    else:
        assert staged(repository) == "notes.txt"  # it never ran
        assert (call["status"], call["error"], call["is_error"]) == (
            "denied",
            "TOOL_NOT_ALLOWED",
            True,
        )
        assert [u.status for u in updates] == ["failed"]
        assert "The user did not allow this call to git.git_reset" in answered


async def test_allow_always_holds_for_the_rest_of_the_session(
    home: Path, sim: Simulator, environ: dict[str, str], tmp_path: Path
) -> None:
    repository = staged_repository(tmp_path / "repo")
    reset = calling("git__git_reset", {"repo_path": str(repository)})
    sim.script_turns(reset, FINAL, reset, FINAL)
    client = AnsweringClient(answer="allow_always")
    git = stdio("git", "-m", "mcp_server_git", "--repository", str(repository))
    async with spawn(home, environ, client=client) as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        session = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[git]))
        for request in ("Unstage.", "Again."):
            response = await bounded(
                agent.conn.prompt(session_id=session.session_id, prompt=[text_block(request)])
            )
            assert response.field_meta["thoughtline"]["status"] == "completed"
        # Another session asks again.
        other = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[git]))
        sim.script_turns(reset, FINAL)
        await bounded(agent.conn.prompt(session_id=other.session_id, prompt=[text_block("Go.")]))
    assert [asked.session_id for asked in client.permissions] == [
        session.session_id,
        other.session_id,
    ]
    assert staged(repository) == ""


async def test_a_provider_key_in_the_agents_environment_never_reaches_the_editors_server(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    probe = stdio("probe", TEST_SERVER, env={"PROBE_MARK": "mark-${HOME}"})
    sim.script_turns(calling("probe__environment", {}), FINAL)
    async with spawn(home, environ, client=AnsweringClient()) as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        session = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[probe]))
        response = await bounded(
            agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Env?")])
        )
    assert response.field_meta["thoughtline"]["status"] == "completed"
    start, (end,) = tool_updates(agent.client, session.session_id)
    assert start.kind == "other"  # no annotations
    seen = json.loads(end.raw_output["result"])
    assert seen["PROBE_MARK"] == "mark-${HOME}"  # the editor's value, as sent
    # Not redacted on the way back: the server never had the key.
    assert CANARY_KEY not in end.raw_output["result"] and REDACTED not in end.raw_output["result"]
    assert not any(name.endswith("_API_KEY") for name in seen)
    assert not any(name.endswith("_BASE_URL") for name in seen)
    assert CANARY_KEY not in json.dumps(sim.requests[1].body)


async def test_an_editors_server_is_recorded_without_its_values_and_a_load_must_give_it_again(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    secret = "editor-only-value-8b1f2c"
    server = stdio("time", "-m", "mcp_server_time", env={"TIME_TOKEN": secret})
    sim.script_turns(calling("time__get_current_time", {"timezone": "UTC"}), FINAL)
    async with spawn(home, environ, client=AnsweringClient()) as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        session = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[server]))
        first = await bounded(
            agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Time?")])
        )
        assert first.stop_reason == "end_turn"
    store = SQLiteStore(home / "thoughtline.db")
    try:
        (run,) = store.list_runs()
        (recorded,) = run.tool_servers
    finally:
        store.close()
    assert (recorded.origin, recorded.command, recorded.env) == (
        "editor",
        sys.executable,
        ("TIME_TOKEN",),
    )
    assert secret.encode() not in all_bytes_under(home)

    # Loaded without its server, the conversation cannot go on with its tools.
    requests = len(sim.requests)
    async with spawn(home, environ, client=AnsweringClient()) as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        await bounded(agent.conn.load_session(cwd="/", session_id=session.session_id))
        with pytest.raises(RequestError) as refused:
            await bounded(
                agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Again?")])
            )
        assert refused.value.data == {"code": "TOOL_SERVER_GONE"}
        assert "used the MCP server 'time', which its editor defined" in str(refused.value)
        # Given again, it starts again.
        sim.script_turns(FINAL)
        await bounded(
            agent.conn.load_session(cwd="/", session_id=session.session_id, mcp_servers=[server])
        )
        again = await bounded(
            agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Again?")])
        )
        assert again.stop_reason == "end_turn"
    assert "time__get_current_time" in json.dumps(sim.requests[requests].body)


async def test_a_streamable_http_server_from_session_new_gets_the_editors_headers(
    home: Path, sim: Simulator, environ: dict[str, str], http_server: tuple[str, str]
) -> None:
    url, token = http_server
    remote = HttpMcpServer(
        type="http",
        name="remote",
        url=url,
        headers=[HttpHeader(name="Authorization", value=f"Bearer {token}")],
    )
    sim.script_turns(calling("remote__repeat", {"text": "h", "times": 3}), FINAL)
    async with spawn(home, environ, client=AnsweringClient()) as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        session = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[remote]))
        await bounded(agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Go.")]))
    start, (end,) = tool_updates(agent.client, session.session_id)
    assert (start.title, end.status, end.raw_output["result"]) == (
        "remote.repeat",
        "completed",
        "hhh",
    )
    assert token not in agent.stderr.read_text()


async def test_bad_servers_in_session_new_are_refused_and_the_agent_keeps_serving(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    _config(
        home,
        f"""
[mcp_servers.time]
command = {json.dumps(sys.executable)}
args = ["-m", "mcp_server_time"]
""",
    )
    bad = {
        "would hand a provider key to the tool server": [
            stdio("leaky", TEST_SERVER, env={"TOKEN": f"Bearer {CANARY_KEY}"})
        ],
        "session/new: mcp_servers.leaky-http.headers.Authorization: would hand a provider key": [
            HttpMcpServer(
                type="http",
                name="leaky-http",
                url="http://127.0.0.1:1/mcp",
                headers=[HttpHeader(name="Authorization", value=f"Bearer {CANARY_KEY}")],
            )
        ],
        "uses the sse transport": [
            SseMcpServer(type="sse", name="old", url="http://127.0.0.1:1/sse", headers=[])
        ],
        "is not a usable server name": [stdio("has space", TEST_SERVER)],
        "is used twice": [stdio("probe", TEST_SERVER), stdio("probe", TEST_SERVER)],
        "is also the name of a server in": [stdio("time", TEST_SERVER)],
        "url must be an http:// or https:// URL": [
            HttpMcpServer(type="http", name="remote", url="ftp://127.0.0.1/mcp", headers=[])
        ],
    }
    async with spawn(home, environ, client=AnsweringClient()) as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        for said, servers in bad.items():
            with pytest.raises(RequestError) as refused:
                await bounded(agent.conn.new_session(cwd="/", mcp_servers=servers))
            assert refused.value.code == -32602, said
            assert said in str(refused.value), str(refused.value)
            assert refused.value.data == {"code": "SESSION_MCP_SERVER_INVALID"}
            assert CANARY_KEY not in str(refused.value)
        # A server that does not start refuses the prompt, in one sentence, before its
        # run is stored; the session keeps serving.
        broken = stdio("broken", "-c", "import sys; sys.stderr.write('no luck'); sys.exit(3)")
        session = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[broken]))
        with pytest.raises(RequestError) as unavailable:
            await bounded(
                agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Go.")])
            )
        assert agent.process.returncode is None
        assert unavailable.value.data == {"code": "TOOL_SERVER_UNAVAILABLE"}
        assert "no luck" in str(unavailable.value)
        with pytest.raises(RequestError) as again:  # not left busy
            await bounded(
                agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Go.")])
            )
        assert again.value.data == {"code": "TOOL_SERVER_UNAVAILABLE"}
    store = SQLiteStore(home / "thoughtline.db")
    try:
        assert store.list_runs() == []
    finally:
        store.close()
    assert sim.requests == []
    log = agent.stderr.read_text()
    assert "Traceback" not in log and CANARY_KEY not in log


async def test_an_http_server_from_session_new_is_shown_without_the_credentials_in_its_url(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    port = _free_port()  # nothing listens there
    remote = HttpMcpServer(
        type="http",
        name="remote",
        url=f"http://user:secretpass@127.0.0.1:{port}/mcp?token=tok-5e1f",
        headers=[],
    )
    async with spawn(home, environ, client=AnsweringClient()) as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        session = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[remote]))
        with pytest.raises(RequestError) as unavailable:
            await bounded(
                agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Go.")])
            )
    assert unavailable.value.data == {"code": "TOOL_SERVER_UNAVAILABLE"}
    said = str(unavailable.value)
    assert f"The MCP server remote (http://user:***@127.0.0.1:{port}/mcp?token=***)" in said
    for written in (said, agent.stderr.read_text()):
        assert "secretpass" not in written and "tok-5e1f" not in written
    assert b"secretpass" not in all_bytes_under(home)
    assert sim.requests == []


@dataclass
class WaitingClient(AnsweringClient):
    """An editor whose user has not answered yet when the prompt is cancelled: it
    answers ``cancelled`` once told to, as ACP asks of a client."""

    asked: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.asked.set()
        await self.release.wait()
        return await super().request_permission(session_id, tool_call, options, **kwargs)


async def test_cancelling_while_the_editor_is_asked_runs_nothing_and_keeps_serving(
    home: Path, sim: Simulator, environ: dict[str, str], tmp_path: Path
) -> None:
    repository = staged_repository(tmp_path / "repo")
    sim.script_turns(calling("git__git_reset", {"repo_path": str(repository)}), FINAL)
    client = WaitingClient(answer=None)
    git = stdio("git", "-m", "mcp_server_git", "--repository", str(repository))
    async with spawn(home, environ, client=client) as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        session = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[git]))
        prompt = asyncio.ensure_future(
            agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Unstage.")])
        )
        await bounded(client.asked.wait())
        await agent.conn.cancel(session_id=session.session_id)
        response = await bounded(prompt)
        client.release.set()  # the late answer reaches nobody, and harms nothing
        # Still serving: the same session runs its next prompt.
        sim.script(Transcript(answer="Still here."))
        again = await bounded(
            agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Hi.")])
        )
        assert agent.process.returncode is None
    assert response.stop_reason == "cancelled"
    assert again.stop_reason == "end_turn"
    assert staged(repository) == "notes.txt"
    snapshot = stored_run(home, response.field_meta["thoughtline"]["run_id"])
    (call,) = snapshot["tasks"][0]["tool_calls"]
    assert (call["status"], call["error"]) == ("cancelled", "TOOL_CANCELLED")
    assert len(sim.requests) == 2  # the loop did not go on after the cancel
    assert "Traceback" not in agent.stderr.read_text()


@dataclass
class SilentClient(AnsweringClient):
    """An editor whose user never answers a permission request (until released)."""

    asked: list[str] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call.tool_call_id)
        await self.release.wait()
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id="allow_once")
        )


async def test_an_unanswered_permission_request_ends_as_a_rejection_after_the_timeout(
    home: Path, sim: Simulator, environ: dict[str, str], tmp_path: Path
) -> None:
    repository = staged_repository(tmp_path / "repo")
    sim.script_turns(calling("git__git_reset", {"repo_path": str(repository)}), FINAL)
    client = SilentClient()
    git = stdio("git", "-m", "mcp_server_git", "--repository", str(repository))
    async with spawn(home, environ, "--permission-timeout", "0.5", client=client) as agent:
        await bounded(agent.conn.initialize(protocol_version=PROTOCOL_VERSION))
        session = await bounded(agent.conn.new_session(cwd="/", mcp_servers=[git]))
        response = await bounded(
            agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Unstage.")])
        )
        client.release.set()  # a late answer reaches nobody, and harms nothing
        assert agent.process.returncode is None
    assert response.stop_reason == "end_turn"
    assert staged(repository) == "notes.txt"  # it never ran, nor after the late "allow"
    start, updates = tool_updates(client, session.session_id)
    assert client.asked == [start.tool_call_id]
    assert [u.status for u in updates] == ["failed"]
    snapshot = stored_run(home, response.field_meta["thoughtline"]["run_id"])
    (call,) = snapshot["tasks"][0]["tool_calls"]
    assert (call["status"], call["error"]) == ("denied", "TOOL_NOT_ALLOWED")
    assert "The user did not allow this call to git.git_reset" in json.dumps(sim.requests[1].body)
    assert "got no answer in 0.5 s: rejected" in agent.stderr.read_text()


def test_a_permission_timeout_that_is_not_positive_is_refused(
    home: Path, environ: dict[str, str]
) -> None:
    said = refused_at_start(home, environ, "--permission-timeout", "0")
    assert "Invalid value for '--permission-timeout': 0.0 is not in the range x>0." in said
