"""The MCP server: both tools with their schemas, served on stdio."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations

from thoughtline import __version__
from thoughtline.integrations.mcp.schema import RUN_SNAPSHOT_SCHEMA, STATUS_SCHEMA
from thoughtline.integrations.mcp.tools import ThoughtlineMCP
from thoughtline.records import SNAPSHOT_SCHEMA
from thoughtline.runtime import Runtime
from thoughtline.store.base import Store

SERVER_NAME: Final = "thoughtline"


def build_server(service: ThoughtlineMCP) -> MCPServer:
    """The MCP server with both tools, their input schemas and hand-written output
    schemas."""
    run_tool = Tool.from_function(
        service.orchestration_run,
        name="orchestration_run",
        title="Run thoughtline specialists",
        description=(
            "Run a request through one thoughtline specialist task per role and return the "
            f"{SNAPSHOT_SCHEMA} snapshot: per task its status, answer, reasoning_status and "
            "reasoning_notice, and reasoning text only when chain_of_thought displays it "
            "(surface, surface_and_telemetry). Sends progress per task when asked. With "
            "wait=false it returns at once; poll orchestration_status. To follow up on an "
            "ended run, pass its id as continues: each task is sent the earlier turns."
        ),
        annotations=ToolAnnotations(read_only_hint=False, open_world_hint=True),
    )
    run_tool.fn_metadata.output_schema = RUN_SNAPSHOT_SCHEMA
    status_tool = Tool.from_function(
        service.orchestration_status,
        name="orchestration_status",
        title="thoughtline run status",
        description=(
            f"The {SNAPSHOT_SCHEMA} snapshot of a run (the latest when run_id is omitted) as "
            "`run`, and the most recent runs (id, status, request) as `runs`."
        ),
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    status_tool.fn_metadata.output_schema = STATUS_SCHEMA
    return MCPServer(
        SERVER_NAME,
        version=__version__,
        instructions=(
            "thoughtline runs LLM specialist tasks and decides per run what happens to the "
            "model's reasoning (chain_of_thought: hidden, surface, telemetry_only, "
            "surface_and_telemetry). Use orchestration_run, then orchestration_status."
        ),
        tools=[run_tool, status_tool],
        log_level="WARNING",
    )


async def serve_stdio(runtime: Runtime, store: Store) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin; runs still executing
    then end ``interrupted``."""
    service = ThoughtlineMCP(runtime, store)
    server = build_server(service)
    try:
        await server.run_stdio_async()
    finally:
        with contextlib.suppress(asyncio.CancelledError):
            await service.shutdown()
