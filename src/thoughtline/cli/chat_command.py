"""``thoughtline chat``: a conversation on a terminal, each line a run that continues the
last one.

Nothing of the conversation is held here but the id of the turn the next line continues:
each line is planned from the store (:func:`~thoughtline.runtime.planning.options.build_spec`),
so ``chat -c`` resumes a chat and ``run -c`` goes on with it from a script. A turn is shown
with ``run``'s live view; Ctrl-C during it cancels that turn's run only (what arrived is
kept, and the next line continues from the turn before it). Ctrl-C or Ctrl-D at the
prompt, or ``/exit``, ends the chat; ``/help`` and ``/multi`` (a message of several lines,
up to ``/end``) are handled here and never sent. Lines are read with :func:`input` (GNU readline's
editing and history when Python has it): no other terminal library.
"""

from __future__ import annotations

import contextlib
import re
import sys
from dataclasses import dataclass, replace

import click
from rich.console import Console
from rich.text import Text

from thoughtline.cli._context import open_runtime
from thoughtline.cli._continuing import continuing_from
from thoughtline.cli._driver import catching_interrupts, drive
from thoughtline.cli._options import OptionValue
from thoughtline.cli._render import finish_reasons, print_outputs, text_console
from thoughtline.cli._terminal_text import echo_error, visible
from thoughtline.cli.completion import complete_run_ids
from thoughtline.cli.live_view import LiveRunView
from thoughtline.cli.run_ids import resolve_run
from thoughtline.errors import ThoughtlineError
from thoughtline.records import Run, short_run_id
from thoughtline.runtime import RunOptions, RunSpec, Runtime, build_spec, spoken_as

PROMPT = "\u203a "  # a single right-pointing angle quotation mark
MORE = "\u2026 "  # the prompt of a multi-line message's further lines
EXIT_WORDS = frozenset({"/exit", "/quit"})
MULTI_START, MULTI_END = "/multi", "/end"
HELP = (
    "Each line is sent as the next turn. Chat commands, never sent to the model:\n"
    "  /help           this text\n"
    "  /multi          a message of several lines, ended by a line holding /end\n"
    "  /exit, /quit    end the chat (so do Ctrl-D and Ctrl-C at the prompt)\n"
    "Ctrl-C during a turn stops that turn; the next line continues from the turn before it."
)
COMMAND = re.compile(r"/[A-Za-z]+")
"""A line that is one slash word (``/help``) is a chat command; ``/etc/hosts?`` or
``/help me`` is text for the model."""
CONTINUABLE = frozenset({"completed", "completed_with_failures"})
"""How a turn must end for the next line to continue it: a cancelled or failed turn is
kept in the store, and the next line goes on from the turn before it."""


@dataclass(frozen=True, slots=True)
class _Flags:
    """What every turn is planned with (the flags win over the turn before's tasks)."""

    options: RunOptions

    def spec(self, runtime: Runtime, last: str | None, request: str) -> RunSpec:
        given = replace(self.options, request=request, continues=last)
        return build_spec(given, "chat", runtime=runtime).spec

    def plan(self, runtime: Runtime, last: str | None, request: str) -> Run:
        with spoken_as("chat"):
            spec = self.spec(runtime, last, request)
            return runtime.plan(spec, explicit_mode=self.options.chain_of_thought)


@click.command("chat")
@click.option(
    "-c",
    "--continue",
    "continue_latest",
    is_flag=True,
    help="Resume the latest run's conversation.",
)
@click.option(
    "--continues",
    metavar="RUN_ID",
    shell_complete=complete_run_ids,
    help="Resume the conversation at this run (an id, a short id, a unique start of either, or 'latest').",
)
@click.option(
    "-r",
    "--role",
    "roles",
    multiple=True,
    help="A specialist role; repeat for several concurrent tasks. Default: [defaults] role, "
    "else none (no system prompt).",
)
@click.option(
    "--system",
    metavar="TEXT",
    help="A persona given inline: the system prompt of every turn's tasks (not with --role).",
)
@click.option("-p", "--provider", help="Endpoint name (wins over the resumed run's).")
@click.option("-m", "--model", help="Model id for the endpoint.")
@click.option(
    "--chain-of-thought",
    "chain_of_thought",
    type=OptionValue("chain_of_thought", "chat"),
    help="Disclosure mode for every turn (wins over the resumed run's and config).",
)
@click.option("-e", "--effort", type=OptionValue("effort", "chat"), help="Reasoning effort.")
@click.option(
    "--max-output-tokens",
    type=OptionValue("max_output_tokens", "chat"),
    help="Most tokens each task may generate.",
)
@click.option(
    "--temperature", type=OptionValue("temperature", "chat"), help="Sampling temperature, 0 to 2."
)
@click.option(
    "--tool",
    "tools",
    multiple=True,
    metavar="SPEC",
    help="A tool every task may call: SERVER or SERVER.TOOL of a configured MCP server; repeat for several.",
)
@click.option(
    "--max-steps",
    type=OptionValue("max_steps", "chat"),
    help="Most model calls each task may make per turn.",
)
@click.option(
    "--max-cost",
    type=OptionValue("max_cost", "chat"),
    metavar="USD",
    help="US dollars each turn's run may spend (wins over config).",
)
def chat_command(
    continue_latest: bool,
    continues: str | None,
    roles: tuple[str, ...],
    provider: str | None,
    model: str | None,
    chain_of_thought: str | None,
    effort: str | None,
    max_output_tokens: int | None,
    temperature: float | None,
    tools: tuple[str, ...],
    max_steps: int | None,
    max_cost: float | None,
    system: str | None,
) -> None:
    """Talk on a terminal: each line is a run that continues the one before (the first
    starts a conversation, unless -c or --continues resumes one).

    Ctrl-C stops the turn that is running; Ctrl-C or Ctrl-D at the prompt, or /exit,
    ends the chat. A script uses `thoughtline run -c` instead."""
    if system is not None and roles:
        raise click.UsageError(
            "--system gives every task its persona; do not combine it with --role."
        )
    resumed = continuing_from(continue_latest, continues)
    flags = _Flags(
        RunOptions(
            roles=roles,
            provider=provider,
            model=model,
            effort=effort,  # type: ignore[arg-type]  # checked (OptionValue)
            chain_of_thought=chain_of_thought,  # type: ignore[arg-type]  # checked
            max_output_tokens=max_output_tokens,
            temperature=temperature,
            tools=tools or None,
            max_steps=max_steps,
            max_cost=max_cost,
            system=system,
        )
    )
    # A bad flag is refused (exit 2) whether or not there is a terminal.
    flags.options.check("chat")
    if not _on_terminal():
        raise ThoughtlineError(
            "CHAT_NEEDS_TERMINAL",
            "thoughtline chat needs a terminal on stdin and stdout; from a script, continue "
            'a conversation with: thoughtline run -c "..." (or --continues RUN_ID).',
        )
    _enable_line_editing()
    _config, store, runtime = open_runtime(tool_lists=True)
    try:
        last = None if resumed is None else resolve_run(store, resumed).id
        # Planned once, not stored: a bad flag, or a run that cannot be continued, is
        # refused (exit 2) before the first prompt rather than after every line.
        flags.plan(runtime, last, ".")
        console = text_console()
        _chat(console, runtime, flags, last)
    finally:
        store.close()


def _chat(console: Console, runtime: Runtime, flags: _Flags, last: str | None) -> None:
    where = "a new conversation" if last is None else f"continuing run {last}"
    console.print(
        Text(
            f"thoughtline chat · {where} · /help · Ctrl-C stops a turn · Ctrl-D or /exit ends",
            "dim",
        )
    )
    try:
        while True:
            try:
                line = input(PROMPT)
            except EOFError:
                console.print()
                return
            except UnicodeDecodeError:
                echo_error("thoughtline: that line is not valid UTF-8 text; type it again.")
                continue
            text = line.strip()
            if not text:
                continue
            if text in EXIT_WORDS:
                return
            if text == MULTI_START:
                line = _read_lines()
                if not line.strip():
                    continue
            elif COMMAND.fullmatch(text):
                _command(console, text)
                continue
            if _bad_text(line):
                echo_error("thoughtline: that line is not valid UTF-8 text; type it again.")
                continue
            final = _turn(console, runtime, flags, last, line)
            if final is not None and final.status in CONTINUABLE:
                last = final.id
    except KeyboardInterrupt:  # Ctrl-C at the prompt (or between turns)
        console.print()


def _command(console: Console, text: str) -> None:
    """A chat command other than the exits and /multi: said here, never sent."""
    if text == "/help":
        console.print(Text(HELP), soft_wrap=True)
        return
    echo_error(f"thoughtline: {text} is not a chat command (/help lists them); nothing was sent.")


def _read_lines() -> str:
    """The lines of a /multi message, up to a line holding /end (Ctrl-D ends it too;
    Ctrl-C drops it: nothing is sent)."""
    lines: list[str] = []
    while True:
        try:
            line = input(MORE)
        except EOFError:
            break
        except UnicodeDecodeError:
            echo_error("thoughtline: that line is not valid UTF-8 text; type it again.")
            continue
        except KeyboardInterrupt:
            echo_error("\nthoughtline: message dropped; nothing was sent.")
            return ""
        if line.strip() == MULTI_END:
            break
        lines.append(line)
    return "\n".join(lines)


def _turn(
    console: Console, runtime: Runtime, flags: _Flags, last: str | None, request: str
) -> Run | None:
    """One line as a run, shown live, then each full answer; ``None`` when it was refused
    (said in one sentence) or cancelled before it was stored."""
    with catching_interrupts() as interrupts:
        try:
            run = flags.plan(runtime, last, request)
            starting = runtime.servers_to_start(run)
            with LiveRunView(console, starting=starting, planned=run.snapshot()) as live:
                final = drive(runtime, run, live.handle, interrupts, stored=False)
        except ThoughtlineError as exc:
            echo_error(f"thoughtline: {exc.message}")
            return None
        except click.Abort:  # Ctrl-C while the tool servers started: nothing stored
            console.print(Text("turn cancelled before it started.", "yellow"))
            return None
    snapshot = final.snapshot()
    print_outputs(console, snapshot, finishes=finish_reasons(snapshot))
    for task in snapshot["tasks"]:
        if task["error"] and task["status"] != "cancelled":
            echo_error(
                f"thoughtline: task {task['name']} {task['status']}: {task['error']['code']}"
            )
    if final.status in CONTINUABLE:
        console.print(Text(visible(f"run {short_run_id(final.id)} · {final.status}"), "dim"))
    else:
        then = (
            "continues from the turn before it" if last is not None else "starts a new conversation"
        )
        console.print(
            Text(
                visible(
                    f"turn {final.status}; what arrived is kept (thoughtline status {short_run_id(final.id)}); "
                    f"the next line {then}."
                ),
                "yellow",
            ),
            soft_wrap=True,
        )
    return final


def _on_terminal() -> bool:
    return all(stream is not None and stream.isatty() for stream in (sys.stdin, sys.stdout))


def _bad_text(line: str) -> bool:
    """A line holding bytes that are not UTF-8 (read as lone surrogates)."""
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _enable_line_editing() -> None:
    """Arrow keys and history for :func:`input`, where Python was built with readline."""
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (imported for its effect on input())
