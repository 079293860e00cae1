"""``thoughtline mcp``: serve the run API to an MCP client over stdio."""

from __future__ import annotations

import asyncio

import click

from thoughtline._process import freeze_startup_heap, load_what_runs_use
from thoughtline.cli._context import open_runtime
from thoughtline.integrations.mcp import serve_stdio


@click.command("mcp")
def mcp_command() -> None:
    """An MCP server over stdio: tools orchestration_run and orchestration_status.

    Uses the store under THOUGHTLINE_HOME and the usual config and credentials. stdout
    carries the protocol; logs go to stderr. Runs still executing when the client
    disconnects end interrupted, with what arrived kept.
    """
    _config, store, runtime = open_runtime()
    load_what_runs_use()
    freeze_startup_heap()
    try:
        asyncio.run(serve_stdio(runtime, store))
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
