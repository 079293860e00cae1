"""``thoughtline init``: write a commented starter ``thoughtline.toml``."""

from __future__ import annotations

from pathlib import Path

import click

from thoughtline.errors import ThoughtlineError

# Every setting at its default, so the file changes nothing until a line is edited; the
# comments say what each does and which values it takes (the config is strict).
STARTER = """\
# thoughtline configuration. Unknown keys and bad values are errors that name this file,
# the key and the allowed values; `thoughtline config` shows what is in effect and why.
# Precedence for the reasoning mode: --chain-of-thought > plan file > per role > this file.

[orchestration]
# What happens to the model's reasoning:
#   hidden                 not requested, never stored (the default)
#   surface                requested and shown (CLI, daemon, MCP, ACP), not written to the trace
#   telemetry_only         requested and written to the trace and telemetry only
#   surface_and_telemetry  both
chain_of_thought = "hidden"
worker_backend = "provider"       # provider calls the model; inline only prepares prompts
store = "sqlite"                  # sqlite (under THOUGHTLINE_HOME) | postgres (set [store] dsn)
max_concurrency = 8               # tasks of a run that call providers at once
max_tasks_per_run = 32            # a run with more tasks is refused (1-1000)
max_request_bytes = 262144        # the longest request, in bytes of UTF-8 text (256 KiB; up to 64 MiB)
max_steps = 8                     # model calls one task may make (each tool step is one; 1-1000)
# max_cost = 0.50                 # US dollars one run may spend (--max-cost wins; needs prices)

# [orchestration.chain_of_thought_by_role]
# reviewer = "surface"            # a mode per role (architect, engineer, reviewer, security, yours)

[defaults]
provider = "anthropic"            # anthropic, openai, openrouter, gemini, deepseek, ollama, vllm, llamacpp, or yours
# model = "claude-sonnet-4-6"     # the endpoint's default model when left out
effort = "provider-default"       # provider-default | none | minimal | low | medium | high | xhigh | max
# role = "engineer"               # the persona of a task no --role asked for (unset: none, no system prompt)

# A server of your own that speaks a known wire API:
# [providers.my-vllm]
# wire_api = "openai-chat"        # anthropic-messages | openai-responses | openai-chat | gemini | ollama
# base_url = "http://127.0.0.1:8000/v1"
# api_key_env = "MY_VLLM_KEY"     # optional: the variable holding its key
# max_concurrency = 1             # for local servers that serve one request at a time

# What calls cost, in US dollars per million tokens: wins over the built-in price data
# (thoughtline prices shows what is used). A local server costs "unknown" until priced.
# [prices."ollama/*"]
# input = 0
# output = 0

# [roles.translator]
# prompt = "You translate technical text into plain English."
# tools = ["git", "time.get_current_time"]   # MCP tools it may call: SERVER or SERVER.TOOL
# max_steps = 8
# max_cost = 0.10                 # US dollars each task of the role may spend

# An MCP tool server, started for a run and stopped with it:
# [mcp_servers.git]
# command = "uvx"
# args = ["mcp-server-git", "--repository", "."]

# [store]                         # with store = "postgres"
# dsn = "postgresql://thoughtline@db.internal:5432/thoughtline"
# pool_min = 1                    # connections each process keeps open
# pool_max = 8                    # and opens at most
# lease_s = 10                    # heartbeat of a process's runs; 3 missed beats: presumed dead
# live_flush_ms = 5               # how soon live events reach other daemons
# statement_timeout_ms = 0        # 0: no limit
# application_name = "thoughtline"
# outage_buffer_rows = 100000     # rows held in memory while the server is unreachable
# outage_limit_s = 20             # and for how long; then those tasks fail STORE_UNAVAILABLE

# [server]                        # thoughtline serve and thoughtline mcp
# max_active_runs = 16            # runs at once, then 429 + Retry-After (unset: no limit)
# max_connections = 4096          # HTTP connections open at once (serve), live streams included
# header_timeout_s = 10           # to send a request's head; also the longest silence in a body
# keep_alive_timeout_s = 5        # idle between two requests on one connection

[timeouts]                        # seconds; also per endpoint under [providers.NAME.timeouts]
connect = 10
read = 120                        # the longest silence between bytes
total = 900                       # one provider call, retries excluded
tool = 60                         # one tool call

[trace]
provider_raw = false              # keep redacted request/response bodies (layer provider_raw)

[trace.retention]                 # how long each trace layer is kept ("30d", "12h", "forever")
provider_raw = "7d"
reasoning = "30d"
answer = "forever"

# [telemetry]
# exporter = "otlp"               # export spans (also on when OTEL_EXPORTER_OTLP_ENDPOINT is set)
# capture_content = false         # message content in spans, only when the mode records reasoning
"""


@click.command("init")
@click.option(
    "--path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("thoughtline.toml"),
    show_default=True,
    help="Where to write the file.",
)
@click.option("--force", is_flag=True, help="Overwrite the file if it exists.")
def init_command(path: Path, force: bool) -> None:
    """Write a commented starter thoughtline.toml (every setting at its default)."""
    if path.exists() and not force:
        raise ThoughtlineError(
            "CONFIG_EXISTS", f"{path} already exists; pass --force to overwrite it."
        )
    try:
        path.write_text(STARTER, encoding="utf-8")
    except OSError as exc:
        raise ThoughtlineError(
            "CONFIG_WRITE_FAILED", f"Cannot write {path}: {exc.strerror}."
        ) from None
    click.echo(f"thoughtline: wrote {path}; edit it, then check it with: thoughtline config")
