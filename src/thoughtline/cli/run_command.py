"""``thoughtline run``: start a run and watch it."""

from __future__ import annotations

import os
import select
import stat
import sys
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

import click

from thoughtline.cli._context import open_runtime
from thoughtline.cli._continuing import continuing_from
from thoughtline.cli._driver import Interrupts, catching_interrupts, drive, stopper
from thoughtline.cli._options import OptionValue, option_help
from thoughtline.cli._render import (
    cut_off_line,
    finish_reasons,
    print_outputs,
    summary_table,
    text_console,
)
from thoughtline.cli._terminal_text import echo_error, json_for
from thoughtline.cli.completion import (
    complete_models,
    complete_providers,
    complete_roles,
    complete_run_ids,
)
from thoughtline.cli.live_view import LiveRunView
from thoughtline.cli.piped_view import PipedRunView
from thoughtline.cli.run_ids import resolve_run
from thoughtline.config import load_config
from thoughtline.errors import ThoughtlineError
from thoughtline.records import Run, RunSnapshot
from thoughtline.runtime import (
    RunOptions,
    RunSpec,
    Runtime,
    build_spec,
    check_request_size,
    load_plan,
    request_too_large,
    spoken_as,
)
from thoughtline.tools.listing import merged_servers
from thoughtline.tools.settings import load_mcp_json

EXAMPLES = """\b
Examples:
  thoughtline run "Review this design"           one task, reasoning hidden
  thoughtline run "Plan it" -r architect -r reviewer
  thoughtline run "Shorten it" --system "You are terse."  an inline persona
  thoughtline run "Why slow?" --chain-of-thought surface
  thoughtline run "Summarize this" < notes.txt   the request, then the file
  git diff | thoughtline run -                   the request from stdin
  thoughtline run "Summarize" -q > summary.md    only the answer
  thoughtline run -c "And the tests?"            continue the latest run
"""

EXIT_OK = 0
EXIT_TASKS_FAILED = 1
EXIT_CANCELLED = 130
EXIT_STDOUT_CLOSED = 141  # as if killed by SIGPIPE, what shells report for `| head`


@click.command("run", epilog=EXAMPLES)
@click.argument("request", required=False, metavar="[REQUEST|-]")
@click.option(
    "-r",
    "--role",
    "roles",
    multiple=True,
    shell_complete=complete_roles,
    help="A specialist role; repeat for several concurrent tasks. Default: [defaults] role, else none (no system prompt).",
)
@click.option(
    "--system",
    metavar="TEXT",
    help="A persona given inline: the system prompt of every task (not with --role or --plan).",
)
@click.option(
    "-p",
    "--provider",
    shell_complete=complete_providers,
    help="Endpoint name (anthropic, openai, openrouter, gemini, deepseek, ollama, vllm, llamacpp, or your own). Default: [defaults] provider, else anthropic.",
)
@click.option(
    "-m",
    "--model",
    shell_complete=complete_models,
    help="Model id for the endpoint (thoughtline models lists them). Default: [defaults] model, else claude-sonnet-4-6.",
)
@click.option(
    "--chain-of-thought",
    "chain_of_thought",
    type=OptionValue("chain_of_thought"),
    help="Disclosure mode for this run (wins over plan and config). Default: [orchestration] chain_of_thought, else hidden.",
)
@click.option(
    "-e",
    "--effort",
    type=OptionValue("effort"),
    help="Reasoning effort. Default: [defaults] effort, else provider-default.",
)
@click.option(
    "--max-output-tokens",
    type=OptionValue("max_output_tokens"),
    help=option_help("max_output_tokens"),
)
@click.option(
    "--temperature",
    type=OptionValue("temperature"),
    help=option_help("temperature"),
)
@click.option(
    "--worker-backend",
    type=OptionValue("worker_backend"),
    help=option_help("worker_backend"),
)
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(path_type=Path),
    help="A TOML plan file with tasks and handoffs (a regular file of at most 1 MiB).",
)
@click.option(
    "--tool",
    "tools",
    multiple=True,
    metavar="SPEC",
    help="A tool every task may call: SERVER or SERVER.TOOL of a configured MCP server; repeat for several (wins over roles and plan).",
)
@click.option(
    "--mcp-config",
    "mcp_config",
    type=click.Path(path_type=Path),
    help='An mcp.json file ({"mcpServers": {...}}, as Claude Desktop, Claude Code, Cursor and VS Code keep it): its servers are added to the config\'s.',
)
@click.option(
    "--max-steps",
    type=OptionValue("max_steps"),
    help=option_help("max_steps"),
)
@click.option(
    "--max-cost",
    type=OptionValue("max_cost"),
    metavar="USD",
    help=option_help("max_cost"),
)
@click.option(
    "-c",
    "--continue",
    "continue_latest",
    is_flag=True,
    help="Continue the latest run: its conversation so far goes with REQUEST.",
)
@click.option(
    "--continues",
    metavar="RUN_ID",
    shell_complete=complete_run_ids,
    help="Continue this run (an id, a short id, a unique start of either, or 'latest'): its tasks again, with its conversation so far; --role, --provider, --model and --effort win.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print only the final run snapshot (JSON) on stdout."
)
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Nothing on stderr but errors: the answers stream to stdout, with no live view, "
    "reasoning, progress or table.",
)
def run_command(
    request: str | None,
    roles: tuple[str, ...],
    provider: str | None,
    model: str | None,
    chain_of_thought: str | None,
    effort: str | None,
    max_output_tokens: int | None,
    temperature: float | None,
    worker_backend: str | None,
    plan_path: Path | None,
    tools: tuple[str, ...],
    mcp_config: Path | None,
    max_steps: int | None,
    max_cost: float | None,
    continue_latest: bool,
    continues: str | None,
    as_json: bool,
    quiet: bool,
    system: str | None,
) -> None:
    """Run REQUEST through one task per --role (or the tasks of --plan).

    Text piped to stdin follows REQUEST, after a blank line (a missing REQUEST or "-":
    the request is stdin alone). On a terminal the run is shown live, then each full answer and a table;
    piped, stdout carries only the answers (streamed) and stderr the progress."""
    # Loaded first: it says how much of stdin a request may take.
    config = load_config()
    if mcp_config is not None:
        config = replace(
            config, mcp_servers=merged_servers(config.mcp_servers, load_mcp_json(mcp_config))
        )
    continued = continuing_from(continue_latest, continues)
    if system is not None and (roles or plan_path is not None):
        raise click.UsageError(
            "--system gives every task its persona; do not combine it with --role or --plan."
        )
    if plan_path is not None and continued is not None:
        raise click.UsageError(
            "--plan starts a new conversation; do not combine it with -c or --continues."
        )
    request = _request_text(
        request,
        from_stdin_when_missing=plan_path is None,
        limit=config.max_request_bytes,
        quiet=quiet,
    )
    plan: RunSpec | None = None
    if plan_path is not None:
        if roles or provider or model or effort:
            raise click.UsageError(
                "--plan declares its tasks; do not combine it with --role, --provider, --model or --effort."
            )
        plan = load_plan(plan_path, request=request)
    elif not request:
        raise click.UsageError("Give a REQUEST (or a --plan file, or the request on stdin).")
    options = RunOptions(
        request=None if plan is not None else request,
        plan=plan,
        roles=roles,
        system=system,
        provider=provider,
        model=model,
        chain_of_thought=chain_of_thought,  # type: ignore[arg-type]  # checked (OptionValue)
        effort=effort,  # type: ignore[arg-type]  # checked (OptionValue)
        max_output_tokens=max_output_tokens,
        temperature=temperature,
        worker_backend=worker_backend,  # type: ignore[arg-type]  # checked (OptionValue)
        tools=tools or None,
        max_steps=max_steps,
        max_cost=max_cost,
    )
    with catching_interrupts() as interrupts:
        _config, store, runtime = open_runtime(config, tool_lists=True)
        try:
            # The run it continues is read here: refused (exit 2) before anything is
            # stored when it does not exist, has not ended or keeps no history.
            if continued is not None:
                options = replace(options, continues=resolve_run(store, continued).id)
            with spoken_as("run"):
                spec = build_spec(options, "run", runtime=runtime).spec
            if interrupts.count:  # Ctrl-C before anything was stored
                raise click.Abort
            # Stored once its tool servers started and its tool names were checked.
            with spoken_as("run"):
                run = runtime.plan(
                    spec, explicit_mode=chain_of_thought, worker_backend=worker_backend
                )
            outcome = _execute(runtime, run, interrupts, as_json=as_json, quiet=quiet)
        finally:
            store.close()
    final = outcome.run
    if outcome.stdout_closed:
        # The reader went away (`| head -1`): the run was stopped; nothing more to say.
        _silence_stdout()
        sys.exit(EXIT_STDOUT_CLOSED)
    snapshot = final.snapshot()
    finishes = finish_reasons(snapshot)
    if as_json:
        click.echo(json_for(sys.stdout, snapshot))
    elif quiet:
        pass  # the answers streamed; errors follow
    elif outcome.terminal:
        console = text_console()
        print_outputs(console, snapshot, finishes=finishes)
        console.print(summary_table(snapshot, console.width))
    else:
        errors = text_console(stderr=True)
        for task in snapshot["tasks"]:
            line = cut_off_line(finishes.get(task["id"]))
            if line is not None:
                errors.print(f"task {task['name']}: {line.plain}", soft_wrap=True)
        errors.print(summary_table(snapshot, errors.width))
    _exit(final, snapshot)


def _exit(final: Run, snapshot: RunSnapshot) -> None:
    for task in snapshot["tasks"]:
        if task["error"]:
            echo_error(
                f"thoughtline: task {task['name']} {task['status']}: {task['error']['code']}: {task['error']['message']}"
            )
    if final.status in ("completed", "completed_prepare_only"):
        sys.exit(EXIT_OK)
    short = snapshot["short_id"]
    if final.status == "cancelled":
        click.echo(
            f"thoughtline: run {short} cancelled; what arrived is kept (thoughtline status {short}).",
            err=True,
        )
        sys.exit(EXIT_CANCELLED)
    click.echo(f"thoughtline: run {short} {final.status}.", err=True)
    sys.exit(EXIT_TASKS_FAILED)


def _request_text(
    request: str | None, *, from_stdin_when_missing: bool, limit: int, quiet: bool
) -> str | None:
    """The request: REQUEST, what stdin holds, or both joined as ``llm`` joins them
    (REQUEST, a blank line, then the piped text). "-" waits for stdin; otherwise stdin
    is read only when it is not a terminal and holds a file, or data or its end arrives
    within :data:`STDIN_WAIT_S`, so a test runner's open, silent pipe never hangs a run.
    Never more than ``limit`` bytes (and a final line break) are read: ``cat /dev/zero |
    thoughtline run -`` stops at once (the runtime checks a REQUEST argument)."""
    stdin = sys.stdin
    if request == "-":
        if stdin is None:
            raise click.UsageError("REQUEST is '-' but there is no stdin to read it from.")
        text = _read_stdin(stdin, limit)
        if not text.strip():
            raise click.UsageError("The request on stdin is empty; give a REQUEST.")
        check_request_size(text, limit)
        return text
    if request is None and not from_stdin_when_missing:
        return None
    if stdin is None or stdin.isatty():
        return request
    if not _stdin_has_something(stdin):
        if request is None:
            raise ThoughtlineError(
                "REQUEST_INVALID",
                f"Nothing arrived on stdin within {STDIN_WAIT_S:g} s; give a REQUEST, "
                "or '-' to wait for stdin.",
            )
        if not quiet:
            echo_error(
                f"thoughtline: nothing arrived on stdin within {STDIN_WAIT_S:g} s; "
                "the request goes alone."
            )
        return request
    text = _read_stdin(stdin, limit)
    if request is None:
        if not text.strip():
            raise click.UsageError("The request on stdin is empty; give a REQUEST.")
        check_request_size(text, limit)
        return text
    if not text.strip():  # `< /dev/null`, an empty file: the request alone
        return request
    joined = f"{request}\n\n{text}" if request.strip() else text
    check_request_size(joined, limit)
    return joined


# How long a pipe on stdin may stay silent before a run with a REQUEST goes without it.
STDIN_WAIT_S = 1.0


def _stdin_has_something(stdin: TextIO) -> bool:
    """Whether stdin is a file, or a pipe (FIFO, socket) with data or its end within
    :data:`STDIN_WAIT_S`; a stream with no descriptor is read as it is."""
    try:
        fd = stdin.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return True
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return True
        ready, _, _ = select.select([fd], [], [], STDIN_WAIT_S)
    except (OSError, ValueError):  # a closed descriptor: nothing to read
        return False
    return bool(ready)


def _read_stdin(stdin: TextIO, limit: int) -> str:
    """stdin's text without its final line break; at most ``limit`` bytes are taken."""
    # limit + 2: room for a final line break ("\r\n"), which is not part of the request.
    data = stdin.buffer.read(limit + 3)
    if len(data) > limit + 2:
        raise request_too_large(limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ThoughtlineError(
            "REQUEST_INVALID",
            f"stdin is not valid UTF-8 text (byte {exc.start + 1} is not); "
            "pipe UTF-8 text, e.g. through iconv.",
        ) from None
    return text.rstrip("\r\n")


@dataclass(frozen=True, slots=True)
class _Outcome:
    run: Run
    terminal: bool  # shown live on a terminal (the full answers are still to print)
    stdout_closed: bool  # the reader of stdout went away; the run was stopped


def _execute(
    runtime: Runtime, run: Run, interrupts: Interrupts, *, as_json: bool, quiet: bool
) -> _Outcome:
    if as_json:
        final = drive(runtime, run, None, interrupts, stored=False)
        return _Outcome(final, terminal=False, stdout_closed=False)
    starting = runtime.servers_to_start(run)
    if quiet or not sys.stdout.isatty():
        stop = stopper(runtime, run.id)
        with open(os.devnull, "w", encoding="utf-8") if quiet else nullcontext(sys.stderr) as err:
            view = PipedRunView(sys.stdout, err, on_closed=stop)
            view.starting(starting)
            final = drive(runtime, run, view.handle, interrupts, stored=False)
        return _Outcome(final, terminal=False, stdout_closed=view.out_closed)
    with LiveRunView(text_console(), starting=starting, planned=run.snapshot()) as live:
        final = drive(runtime, run, live.handle, interrupts, stored=False)
    return _Outcome(final, terminal=True, stdout_closed=False)


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's last flush does not fail loudly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
