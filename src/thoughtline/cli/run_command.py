"""``thoughtline run``: start a run and watch it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import click

from thoughtline.cli._context import open_runtime
from thoughtline.cli.live_view import (
    LiveRunView,
    PlainRunView,
    print_outputs,
    summary_table,
    text_console,
)
from thoughtline.records import CHAIN_OF_THOUGHT_MODES, Run
from thoughtline.requests import EFFORTS
from thoughtline.runtime.plan import load_plan, spec_from_roles
from thoughtline.runtime.runner import RunObserver, Runtime

EXIT_OK = 0
EXIT_TASKS_FAILED = 1
EXIT_CANCELLED = 130


@click.command("run")
@click.argument("request", required=False)
@click.option(
    "--role", "roles", multiple=True, help="A specialist role; repeat for several concurrent tasks."
)
@click.option(
    "--provider",
    help="Endpoint name (anthropic, openai, openrouter, gemini, deepseek, ollama, vllm, llamacpp, or your own).",
)
@click.option("--model", help="Model id for the endpoint.")
@click.option(
    "--chain-of-thought",
    "chain_of_thought",
    type=click.Choice(CHAIN_OF_THOUGHT_MODES),
    help="Disclosure mode for this run (wins over plan and config).",
)
@click.option("--effort", type=click.Choice(EFFORTS), help="Reasoning effort.")
@click.option(
    "--worker-backend",
    type=click.Choice(("provider", "inline")),
    help="provider calls the model; inline prepares prompts only.",
)
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A TOML plan file with tasks and handoffs.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print only the final run snapshot (JSON) on stdout."
)
def run_command(
    request: str | None,
    roles: tuple[str, ...],
    provider: str | None,
    model: str | None,
    chain_of_thought: str | None,
    effort: str | None,
    worker_backend: str | None,
    plan_path: Path | None,
    as_json: bool,
) -> None:
    """Run REQUEST through one task per --role (or the tasks of --plan)."""
    if plan_path is not None:
        if roles or provider or model or effort:
            raise click.UsageError(
                "--plan declares its tasks; do not combine it with --role, --provider, --model or --effort."
            )
        spec = load_plan(plan_path, request=request)
    else:
        if not request:
            raise click.UsageError("Give a REQUEST (or a --plan file).")
        spec = spec_from_roles(request, list(roles), provider=provider, model=model, effort=effort)
    _config, store, runtime = open_runtime()
    try:
        run = runtime.prepare(spec, explicit_mode=chain_of_thought, worker_backend=worker_backend)
        final = _execute(runtime, run, as_json=as_json)
    finally:
        store.close()
    snapshot = final.snapshot()
    if as_json:
        click.echo(json.dumps(snapshot, indent=2, ensure_ascii=False))
    for task in snapshot["tasks"]:
        if task["error"]:
            click.echo(
                f"thoughtline: task {task['name']} {task['status']}: {task['error']['code']}: {task['error']['message']}",
                err=True,
            )
    if final.status in ("completed", "completed_prepare_only"):
        sys.exit(EXIT_OK)
    if final.status == "cancelled":
        click.echo(
            f"thoughtline: run {final.id} cancelled; what arrived is kept (thoughtline status {final.id}).",
            err=True,
        )
        sys.exit(EXIT_CANCELLED)
    click.echo(f"thoughtline: run {final.id} {final.status}.", err=True)
    sys.exit(EXIT_TASKS_FAILED)


def _execute(runtime: Runtime, run: Run, *, as_json: bool) -> Run:
    stdout_is_tty = sys.stdout.isatty()
    if as_json:
        return _drive(runtime, run, None)
    if not stdout_is_tty:
        plain = PlainRunView(sys.stdout)
        final = _drive(runtime, run, plain.handle)
        console = text_console(file=sys.stdout, width=120)
        print_outputs(console, final.snapshot())
        console.print(summary_table(final.snapshot()))
        return final
    console = text_console()
    with LiveRunView(console) as view:
        final = _drive(runtime, run, view.handle)
    console.print(summary_table(final.snapshot()))
    return final


def _drive(runtime: Runtime, run: Run, observer: RunObserver | None) -> Run:
    """Run the event loop; Ctrl-C cancels the run cleanly and returns it as cancelled."""

    async def main() -> Run:
        task = asyncio.ensure_future(runtime.execute(run, observer=observer))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            runtime.cancel(run.id)
            return await task

    loop = asyncio.new_event_loop()
    main_task = loop.create_task(main())
    try:
        return loop.run_until_complete(main_task)
    except KeyboardInterrupt:
        main_task.cancel()
        return loop.run_until_complete(main_task)
    finally:
        loop.close()
