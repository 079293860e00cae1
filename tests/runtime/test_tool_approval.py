"""What a trusted front end adds to a run (:class:`~thoughtline.runtime.planning.run_tools.RunTools`),
through the real runtime, store and simulator and real MCP servers over stdio: servers
that are not in the config, and an approver asked before each destructive call instead of
``allow_destructive``."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import make_runtime
from tests.runtime.test_tool_loop import FINAL, calling, one_task, probe_server
from tests.tools.test_mcp_tools import _git_repository
from thoughtline.errors import ConfigError
from thoughtline.providers.redaction import REDACTED
from thoughtline.records import Run
from thoughtline.runtime.planning.plan import RunSpec
from thoughtline.runtime.planning.run_tools import RunTools, ToolApproval
from thoughtline.testing import SimToolCall, Simulator, SimulatorServer, Transcript
from thoughtline.tools.settings import McpServerSettings

pytestmark = pytest.mark.slow  # every test starts a tool server process


def git_server(repository: Path) -> McpServerSettings:
    return McpServerSettings(
        name="git",
        command=sys.executable,
        args=("-m", "mcp_server_git", "--repository", str(repository)),
    )


def stage(repository: Path) -> None:
    (repository / "notes.txt").write_text("staged\n")
    subprocess.run(["git", "add", "notes.txt"], cwd=repository, check=True)


def staged(repository: Path) -> str:
    return subprocess.run(
        ["git", "diff", "--cached", "--name-only"],
        cwd=repository,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


async def run_with(
    tmp_path: Path,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    spec: RunSpec,
    tools: RunTools,
    **config: object,
) -> Run:
    runtime, store = make_runtime(tmp_path / "home", sim_server, environ, **config)
    try:
        return await runtime.run(spec, explicit_mode="hidden", tools=tools)
    finally:
        await runtime.aclose()
        store.close()


@pytest.mark.parametrize("answer", ["yes", "no", "fails"])
async def test_an_approver_decides_each_destructive_call_instead_of_allow_destructive(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    caplog: pytest.LogCaptureFixture,
    answer: str,
) -> None:
    repository = _git_repository(tmp_path / "repo")
    stage(repository)
    assert staged(repository) == "notes.txt"
    # The model also writes a loaded key into the arguments: the approver never sees it.
    arguments = json.dumps({"repo_path": str(repository), "note": CANARY_KEY})
    status = SimToolCall(
        call_id="s1", name="git__git_status", arguments=json.dumps({"repo_path": str(repository)})
    )
    reset = SimToolCall(call_id="r1", name="git__git_reset", arguments=arguments)
    sim.script_turns(Transcript(tool_calls=(status, reset)), FINAL)
    asked: list[ToolApproval] = []

    async def approve(request: ToolApproval) -> bool:
        asked.append(request)
        if answer == "fails":
            raise ConnectionResetError("the editor went away")
        return answer == "yes"

    # The whole server, allow_destructive unset: with an approver its reset is offered.
    with caplog.at_level(logging.WARNING, logger="thoughtline.runtime.engine.tool_calls"):
        run = await run_with(
            tmp_path,
            sim_server,
            environ,
            one_task(tools=("git",)),
            RunTools(approve=approve),
            mcp_servers={"git": git_server(repository)},
        )
    offered = {tool["name"] for tool in sim.requests[0].body["tools"]}  # type: ignore[index]
    assert "git__git_reset" in offered and "git__git_status" in offered
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.tool_calls is not None
    read, destructive = task.tool_calls
    # Only the destructive call asked; the read-only one ran at once.
    (request,) = asked
    assert (request.task_id, request.tool.spec, request.tool.destructive) == (
        task.id,
        "git.git_reset",
        True,
    )
    assert request.call["id"] == "r1" and request.call["status"] == "running"
    assert CANARY_KEY not in request.call["arguments"] and REDACTED in request.call["arguments"]
    assert (read.status, read.read_only, read.destructive) == ("done", True, False)
    assert destructive.destructive and not destructive.read_only
    answered = json.dumps(sim.requests[1].body)
    if answer == "yes":
        assert (destructive.status, destructive.error) == ("done", None)
        assert staged(repository) == ""  # it ran
        assert "did not allow" not in answered
    else:
        assert (destructive.status, destructive.error) == ("denied", "TOOL_NOT_ALLOWED")
        assert staged(repository) == "notes.txt"  # it never ran
        assert "The user did not allow this call to git.git_reset" in answered
    if answer == "fails":
        assert "asking to run git.git_reset failed: the editor went away" in caplog.text


async def test_without_an_approver_allow_destructive_still_decides(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    repository = _git_repository(tmp_path / "repo")
    sim.script(FINAL)
    run = await run_with(
        tmp_path,
        sim_server,
        environ,
        one_task(tools=("git",)),
        RunTools(),
        mcp_servers={"git": git_server(repository)},
    )
    assert run.tasks[0].status == "done"
    offered = {tool["name"] for tool in sim.requests[0].body["tools"]}  # type: ignore[index]
    assert "git__git_status" in offered and "git__git_reset" not in offered


async def test_added_servers_are_offered_to_every_task_beside_its_own(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script_turns(calling("repeat", {"text": "ab", "times": 2}), FINAL)
    time = McpServerSettings(name="time", command=sys.executable, args=("-m", "mcp_server_time"))
    run = await run_with(
        tmp_path,
        sim_server,
        environ,
        one_task(tools=("time.get_current_time",)),
        RunTools(servers={"probe": probe_server()}),
        mcp_servers={"time": time},
    )
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.tools == ("time.get_current_time", "probe")
    offered = {tool["name"] for tool in sim.requests[0].body["tools"]}  # type: ignore[index]
    assert offered == {
        "time__get_current_time",
        "probe__ancestors",
        "probe__environment",
        "probe__repeat",
        "probe__sleep",
        "probe__hang",
        "probe__big",
        "probe__busy",
        "probe__pid",
        "probe__echo",
        "probe__refuse",
        "probe__die",
        "probe__meet",
        "probe__shout",
    }
    assert task.tool_calls is not None
    (call,) = task.tool_calls
    assert (call.server, call.status, call.result) == ("probe", "done", "abab")


async def test_an_added_server_may_not_take_a_configured_name(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    with pytest.raises(ConfigError, match="The MCP server 'probe' is defined twice"):
        await run_with(
            tmp_path,
            sim_server,
            environ,
            one_task(),
            RunTools(servers={"probe": probe_server()}),
            mcp_servers={"probe": probe_server()},
        )
    assert sim.requests == []


async def test_a_background_run_checks_its_tools_against_the_added_servers_before_it_is_stored(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    """The path an ACP prompt takes: the run's servers, the front end's among them, start
    and its tool names are checked before the run is stored; the run then uses them."""
    from thoughtline.errors import ThoughtlineError
    from thoughtline.runtime.engine.background import RunManager

    asked: list[ToolApproval] = []

    async def approve(request: ToolApproval) -> bool:
        asked.append(request)
        return True

    runtime, store = make_runtime(tmp_path / "home", sim_server, environ)
    manager = RunManager(runtime)
    added = RunTools(servers={"probe": probe_server()}, approve=approve)
    try:
        with pytest.raises(ThoughtlineError, match="probe has no tool 'nosuch'") as missing:
            await manager.start(
                one_task(tools=("probe.nosuch",)), explicit_mode="hidden", tools=added
            )
        assert missing.value.code == "TOOL_NOT_FOUND"
        assert store.list_runs() == []
        sim.script_turns(calling("repeat", {"text": "ab", "times": 2}), FINAL)
        managed = await manager.start(one_task(tools=()), explicit_mode="hidden", tools=added)
        run = await managed.wait(timeout_s=60)
    finally:
        await manager.shutdown()
        await runtime.aclose()
        store.close()
    task = run.tasks[0]
    assert task.status == "done", task.error
    assert task.tools == ("probe",)
    assert task.tool_calls is not None
    assert [(c.server, c.status, c.result) for c in task.tool_calls] == [("probe", "done", "abab")]
    assert asked == []  # repeat is not destructive
    assert len(sim.requests) == 2
