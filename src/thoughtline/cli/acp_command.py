"""``thoughtline acp``: an Agent Client Protocol agent over stdio (the ``[acp]`` extra)."""

from __future__ import annotations

import logging
import sys

import click

from thoughtline._process import freeze_startup_heap, load_what_runs_use
from thoughtline.cli._context import open_runtime
from thoughtline.cli._max_cost import MAX_COST
from thoughtline.integrations.acp import SessionSettings, run_stdio_agent, validate_settings
from thoughtline.integrations.acp.agent import PERMISSION_TIMEOUT_S
from thoughtline.model.requests import EFFORTS
from thoughtline.records import CHAIN_OF_THOUGHT_MODES


@click.command("acp")
@click.option(
    "--role",
    "roles",
    multiple=True,
    help="Default role for new sessions; repeat for several tasks.",
)
@click.option("--provider", help="Default endpoint name for new sessions.")
@click.option("--model", help="Default model id for new sessions.")
@click.option(
    "--chain-of-thought",
    "chain_of_thought",
    type=click.Choice(CHAIN_OF_THOUGHT_MODES),
    help="Default disclosure mode for new sessions (clients can switch it per session).",
)
@click.option("--effort", type=click.Choice(EFFORTS), help="Default reasoning effort.")
@click.option(
    "--max-cost",
    type=MAX_COST,
    help="USD each prompt's run may spend (a session's _meta.thoughtline.max_cost wins).",
)
@click.option(
    "--permission-timeout",
    "permission_timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=PERMISSION_TIMEOUT_S,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for the editor's answer to a destructive tool's permission "
    "request; no answer by then rejects the call.",
)
@click.option(
    "--log-level",
    type=click.Choice(("debug", "info", "warning", "error")),
    default="warning",
    show_default=True,
    help="Log level (logs go to stderr; stdout carries only the protocol).",
)
def acp_command(
    roles: tuple[str, ...],
    provider: str | None,
    model: str | None,
    chain_of_thought: str | None,
    effort: str | None,
    max_cost: float | None,
    permission_timeout_s: float,
    log_level: str,
) -> None:
    """Serve ACP on stdin/stdout: each prompt starts a run; sessions pick the
    chain-of-thought mode (session modes), roles, provider, model, effort and
    budget."""
    logging.basicConfig(
        stream=sys.stderr,
        level=log_level.upper(),
        format="thoughtline acp: %(levelname)s %(name)s: %(message)s",
    )
    defaults = SessionSettings(
        chain_of_thought=chain_of_thought,
        roles=roles,
        provider=provider,
        model=model,
        effort=effort,
        max_cost=max_cost,
    )
    _config, store, runtime = open_runtime()
    try:
        validate_settings(runtime, defaults)
        load_what_runs_use()
        freeze_startup_heap()
        run_stdio_agent(runtime, defaults, permission_timeout_s=permission_timeout_s)
    finally:
        store.close()
