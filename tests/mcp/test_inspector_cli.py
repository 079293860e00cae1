"""``thoughtline mcp`` driven by a second, independent client: the MCP Inspector's CLI
(TypeScript SDK), pinned, fetched with npx. Its client also validates structured content
against the declared output schema.

The first run downloads the package (about 20 s on a warm network); later runs use the
npx cache and take a few seconds.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CANARY_KEY
from tests.mcp.test_mcp_server import server_env
from tests.runtime.test_disclosure_e2e import ANSWER, CANARY, TRANSCRIPT
from thoughtline.testing import Simulator

INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"
NPX = shutil.which("npx")
THOUGHTLINE = Path(sys.executable).parent / "thoughtline"

pytestmark = [
    pytest.mark.slow,  # the MCP inspector (node) driving a server process
    pytest.mark.xdist_group("npx"),  # one worker: two first npx runs would fill one cache
    pytest.mark.skipif(
        NPX is None, reason="npx (Node.js) is not installed; the MCP Inspector CLI needs it"
    ),
    pytest.mark.skipif(
        not THOUGHTLINE.exists(),
        reason=f"the thoughtline console script is not installed next to {sys.executable}",
    ),
    # The first npx run downloads the inspector; give it room beyond the suite default.
    pytest.mark.timeout(300),
]


def inspector(tmp_path: Path, environ: dict[str, str], *args: str) -> dict[str, Any]:
    assert NPX is not None
    result = subprocess.run(
        [NPX, "-y", INSPECTOR, "--cli", str(THOUGHTLINE), "mcp", *args],
        capture_output=True,
        text=True,
        env=server_env(tmp_path / "home", environ),
        cwd=tmp_path,
        timeout=280,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert CANARY_KEY not in result.stdout + result.stderr
    output: dict[str, Any] = json.loads(result.stdout)
    return output


def test_inspector_lists_the_tools_with_output_schemas(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    listing = inspector(tmp_path, environ, "--method", "tools/list")
    tools = {tool["name"]: tool for tool in listing["tools"]}
    assert set(tools) == {"orchestration_run", "orchestration_status"}
    for tool in tools.values():
        assert tool["outputSchema"]["type"] == "object"
    assert tools["orchestration_run"]["outputSchema"]["properties"]["schema"]["const"] == (
        "thoughtline.run/v1"
    )


def test_inspector_runs_a_hidden_mode_request(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    result = inspector(
        tmp_path,
        environ,
        "--method",
        "tools/call",
        "--tool-name",
        "orchestration_run",
        "--tool-arg",
        "request=Explain the decision.",
        "--tool-arg",
        "chain_of_thought=hidden",
    )
    assert result.get("isError") is not True, result
    snapshot = result["structuredContent"]
    assert snapshot["status"] == "completed"
    assert snapshot["chain_of_thought"] == "hidden"
    (task,) = snapshot["tasks"]
    assert task["output"] == ANSWER
    assert task["reasoning"] is None
    assert task["reasoning_status"] == "not_requested"
    assert CANARY not in json.dumps(result)
    assert len(sim.requests) == 1
    body = sim.requests[0].body
    assert body is not None
    assert "thinking" not in body
