"""``thoughtline demo``: every disclosure mode on several endpoints, offline.

Starts the provider simulator on 127.0.0.1 and runs one request through several
endpoints in every mode, with a throwaway store, then prints what each run shows,
records and why. The providers are simulated; the wire protocols, adapters, transport,
disclosure gate, store and trace are the real ones.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from thoughtline.cli._tables import Cell, Column, fitted_table
from thoughtline.cli._terminal_text import TerminalConsole
from thoughtline.config import Config
from thoughtline.providers.client import RetryPolicy
from thoughtline.providers.endpoints import EndpointSettings
from thoughtline.records import CHAIN_OF_THOUGHT_MODES
from thoughtline.runtime import RunSpec, Runtime, TaskSpec
from thoughtline.store.opening import open_store
from thoughtline.tools.settings import McpServerSettings

DEMO_TASKS: tuple[tuple[str, str, str, str], ...] = (
    # (task name, endpoint, model, what it shows)
    ("anthropic-adaptive", "anthropic", "claude-sonnet-4-6", "adaptive thinking, summarized"),
    ("anthropic-budget", "anthropic", "claude-sonnet-4-5", "older model: budget_tokens"),
    ("openai-responses", "openai", "gpt-5.5", "summaries + encrypted carrier"),
    ("openai-chat", "openai-chat", "gpt-5.5", "Chat Completions: token count only"),
    ("openrouter", "openrouter", "anthropic/claude-sonnet-4.6", "reasoning_details"),
    ("gemini", "gemini", "gemini-3-pro", "thought parts + signatures"),
    ("deepseek", "deepseek", "deepseek-reasoner", "raw reasoning_content"),
)
DEMO_KEY = "demo-key-not-a-real-credential"
DEMO_REQUEST = "In two sentences: why keep a model's reasoning separate from its answer?"
DEMO_TOOL_REQUEST = "What time is it in Tokyo?"
DEMO_TOOL_SERVER = "demo"
DEMO_TOOL_MODULE = "thoughtline.testing.demo_tools"


def demo_config(openai_base_url: str) -> Config:
    return Config(
        path=None,
        max_concurrency=8,
        providers={
            # Hosted OpenAI over Chat Completions: a user-defined endpoint speaks that
            # wire API unless it names another.
            "openai-chat": EndpointSettings(
                base_url=openai_base_url,
                api_key_env="OPENAI_API_KEY",
                dialect="openai",
            )
        },
        trace_provider_raw=True,
        mcp_servers={
            DEMO_TOOL_SERVER: McpServerSettings(
                name=DEMO_TOOL_SERVER,
                command=sys.executable,
                args=("-m", DEMO_TOOL_MODULE),
                source="thoughtline demo",
            )
        },
    )


async def run_demo(
    environ: dict[str, str], home: Path, openai_base_url: str
) -> list[dict[str, Any]]:
    config = demo_config(openai_base_url)
    # The embedded store of a home of its own, opened the one way every front end does.
    store = open_store(config, {"THOUGHTLINE_HOME": str(home)})
    runtime = Runtime(
        config=config,
        store=store,
        environ=environ,
        retry=RetryPolicy(max_retries=1, initial_delay_s=0.05),
    )
    spec = RunSpec(
        request=DEMO_REQUEST,
        tasks=tuple(
            TaskSpec(name=name, role="engineer", provider=endpoint, model=model)
            for name, endpoint, model, _ in DEMO_TASKS
        ),
    )
    results = []
    try:
        for mode in CHAIN_OF_THOUGHT_MODES:
            run = await runtime.run(replace(spec), explicit_mode=mode)
            recorded = {
                event.task_id: len(str(event.metadata.get("reasoning") or ""))
                for event in store.trace(run.id, "reasoning")
            }
            for task in run.tasks:
                results.append(
                    {
                        "mode": mode,
                        "task": task.name,
                        "run_id": run.id,
                        "status": task.status,
                        "reasoning_status": task.reasoning_status,
                        "reasoning_notice": task.reasoning_notice,
                        "shown_chars": len(task.reasoning or ""),
                        "recorded_chars": recorded.get(task.id),
                        "reasoning_tokens": task.usage.reasoning_tokens,
                        "answer_chars": len(task.output or ""),
                        "answer": task.output,
                        "reasoning": task.reasoning,  # what the mode lets the task show
                        "error": None if task.error is None else task.error.code,
                    }
                )
        if _mcp_installed():  # the [testing] extra installs it
            results.append(await _tool_loop(runtime))
    finally:
        store.close()
    return results


def _mcp_installed() -> bool:
    try:
        return importlib.util.find_spec("mcp") is not None
    except ImportError:  # an import hook that refuses it
        return False


async def _tool_loop(runtime: Runtime) -> dict[str, Any]:
    """One task whose model calls the demo server's clock, then answers quoting it."""
    _, endpoint, model, _ = DEMO_TASKS[0]
    spec = RunSpec(
        request=DEMO_TOOL_REQUEST,
        tasks=(
            TaskSpec(
                name="tool-loop",
                role="assistant",
                provider=endpoint,
                model=model,
                tools=(DEMO_TOOL_SERVER,),
            ),
        ),
    )
    run = await runtime.run(spec, explicit_mode="surface")
    task = run.tasks[0]
    return {
        "mode": "surface",
        "task": task.name,
        "run_id": run.id,
        "status": task.status,
        "reasoning_status": task.reasoning_status,
        "answer": task.output,
        "tool_calls": [
            {
                "server": call.server,
                "name": call.name,
                "arguments": call.arguments,
                "status": call.status,
                "result": call.result,
            }
            for call in task.tool_calls or ()
        ],
        "error": None if task.error is None else task.error.code,
    }


def _cell(row: dict[str, Any]) -> Text:
    # Text, never markup: an error message may quote what a provider sent.
    if row["error"]:
        return Text(row["error"], style="red")
    cell = Text(row["reasoning_status"] or "-", style="bold")
    if row["shown_chars"]:
        cell.append("\non the task")
    if row["recorded_chars"] is not None:
        cell.append("\nin the trace")
    return cell


def _one_run_in_full(console: TerminalConsole, rows: list[dict[str, Any]]) -> None:
    """The answer and reasoning of the first task's surface run, then what to try next."""
    from thoughtline.cli.simulate_command import commands_to_try

    name, endpoint, model, _ = DEMO_TASKS[0]
    row = next(row for row in rows if row["task"] == name and row["mode"] == "surface")
    console.print(f"\n[bold]One run in full[/]: {endpoint} {model}, chain_of_thought=surface.")
    console.print("[bold]Reasoning[/] (shown, the provider's summary):")
    console.print(Text(row["reasoning"] or "-"), soft_wrap=True)
    console.print("[bold]Answer[/]:")
    console.print(Text(row["answer"] or "-"), soft_wrap=True)
    loop = next((row for row in rows if row["task"] == "tool-loop"), None)
    if loop is not None:
        console.print(
            f"\n[bold]One tool loop[/]: {endpoint} {model} with the demo MCP server "
            f"(python -m {DEMO_TOOL_MODULE}), request {DEMO_TOOL_REQUEST!r}."
        )
        for call in loop["tool_calls"]:
            console.print(
                Text(
                    f"Tool call: {call['server']}.{call['name']} {call['arguments']} "
                    f"({call['status']}): {call['result']}"
                ),
                soft_wrap=True,
            )
        console.print("[bold]Answer[/]:")
        console.print(Text(loop["answer"] or loop["error"] or "-"), soft_wrap=True)
    else:
        console.print(
            Text(
                "\nThe tool loop needs the mcp package: pip install 'thoughtline[testing]'.",
                style="dim",
            )
        )
    console.print(
        "\n[bold]Try next[/]: [bold]thoughtline simulate[/] serves these simulated "
        "providers until Ctrl-C and prints the lines to paste into another terminal; there:"
    )
    for command in commands_to_try():
        console.print(Text(f"  {command}"), soft_wrap=True)


@click.command("demo")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def demo_command(as_json: bool) -> None:
    """Every disclosure mode on several endpoints, offline, against the simulator."""
    from thoughtline.testing import SimulatorServer  # needs the [testing] extra

    with (
        SimulatorServer() as server,
        tempfile.TemporaryDirectory(prefix="thoughtline-demo-") as home,
    ):
        environ = server.environ()
        for variable in ("ANTHROPIC", "OPENAI", "OPENROUTER", "GEMINI", "DEEPSEEK"):
            environ[f"{variable}_API_KEY"] = DEMO_KEY
        rows = asyncio.run(run_demo(environ, Path(home), server.base_url_for("openai")))
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    # Markup on for the demo's own sentences; what the runs returned is Text, and the
    # console shows any control character in it rather than obeying it.
    console = TerminalConsole()
    console.print(
        "[bold]thoughtline demo[/] — the providers are [bold]simulated[/] on "
        f"{server.url}; the wire protocols, adapters, disclosure gate, store and trace are real.\n"
        f"Request: {DEMO_REQUEST!r}, one task per endpoint, one run per mode.\n"
    )
    table: list[tuple[Cell, ...]] = []
    for name, endpoint, model, note in DEMO_TASKS:
        cells = {row["mode"]: row for row in rows if row["task"] == name}
        table.append(
            (
                endpoint,
                model,
                Text(note, style="dim"),
                *(_cell(cells[mode]) for mode in CHAIN_OF_THOUGHT_MODES),
                Text(cells["surface"]["reasoning_notice"] or ""),
            )
        )
    columns = (
        Column("endpoint", key=True),
        Column("model", key=True),
        Column("shows", wrap=True),
        *(Column(mode) for mode in CHAIN_OF_THOUGHT_MODES),
        Column("why (notice in surface mode)", wrap=True),
    )
    console.print(
        fitted_table(
            console,
            columns,
            table,
            title="What each run shows on the task (task.reasoning) and records in the trace "
            "(trace.reasoning)",
            show_lines=True,
        )
    )
    console.print(
        "[dim]hidden requests nothing and keeps nothing, even when a provider reasons anyway; "
        "surface attaches reasoning to the task (every display surface); telemetry_only writes "
        "it to the reasoning trace layer only; surface_and_telemetry does both.[/]"
    )
    _one_run_in_full(console, rows)
