"""A budget through the MCP server (``thoughtline mcp`` over stdio): ``max_cost`` of the
``orchestration_run`` tool refuses a call that has no room for 256 output tokens, before
anything is sent, and the structured output (checked against the tool's output schema) says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp.test_mcp_server import mcp_server, text_of
from thoughtline.testing import Simulator, Transcript


@pytest.mark.slow  # the MCP server as a child process
async def test_max_cost_refuses_a_call_that_could_overspend_and_bad_values_are_tool_errors(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(Transcript(answer="Done."))
    arguments = {
        "request": "Explain.",
        "provider": "openai",
        "model": "o4-mini",
        "max_output_tokens": 1_000,
    }
    async with mcp_server(tmp_path, environ) as server:
        # 256 output tokens at o4-mini's $4.40 per million alone are $0.0011.
        refused = await server.call("orchestration_run", {**arguments, "max_cost": 0.001})
        negative = await server.call("orchestration_run", {**arguments, "max_cost": -1})
    assert sim.requests == []
    assert refused.structured_content is not None, text_of(refused)
    assert refused.structured_content["max_cost"] == 0.001
    (task,) = refused.structured_content["tasks"]
    assert task["status"] == "failed" and task["error"]["code"] == "BUDGET_EXCEEDED"
    assert "of the run's $0.0010 budget after 0 model calls" in task["error"]["message"]
    assert negative.is_error and "max_cost" in text_of(negative)
