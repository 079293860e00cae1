"""The ``thoughtline`` command line. One module per command group; this one wires them.

Commands are imported only when invoked, so ``thoughtline status`` does not pay for the
HTTP client, and optional integrations (``serve``, ``mcp``, ``acp``) load their extras
only when used.
"""

from __future__ import annotations

import io
import os
import sys
from importlib import import_module
from importlib.util import find_spec

import click

from thoughtline import __version__
from thoughtline.errors import ThoughtlineError

# name -> (module, attribute, one-line help shown by --help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("thoughtline.cli.run_command", "run_command", "Start a run and watch it."),
    "chat": (
        "thoughtline.cli.chat_command",
        "chat_command",
        "A conversation on a terminal: each line continues the last.",
    ),
    "status": (
        "thoughtline.cli.runs_command",
        "status_command",
        "Snapshot of a run (latest by default).",
    ),
    "runs": ("thoughtline.cli.runs_command", "runs_command", "Recent runs, newest first."),
    "trace": ("thoughtline.cli.runs_command", "trace_command", "Operator view of a run's trace."),
    "usage": (
        "thoughtline.cli.usage_command",
        "usage_command",
        "Tokens spent, by day, model, role, mode or provider.",
    ),
    "export": (
        "thoughtline.cli.export_command",
        "export_command",
        "A run as a Markdown record or as JSON.",
    ),
    "purge": (
        "thoughtline.cli.purge_command",
        "purge_command",
        "Apply [trace.retention] per layer.",
    ),
    "providers": (
        "thoughtline.cli.providers_command",
        "providers_command",
        "Endpoints and what each model discloses.",
    ),
    "models": (
        "thoughtline.cli.models_command",
        "models_command",
        "Model ids --model takes, and the reasoning each returns.",
    ),
    "prices": (
        "thoughtline.cli.prices_command",
        "prices_command",
        "Prices per million tokens, and where each came from.",
    ),
    "init": (
        "thoughtline.cli.init_command",
        "init_command",
        "Write a commented starter thoughtline.toml.",
    ),
    "config": (
        "thoughtline.cli.config_command",
        "config_command",
        "Resolved configuration and its sources.",
    ),
    "demo": (
        "thoughtline.cli.demo_command",
        "demo_command",
        "Every mode on several endpoints, offline.",
    ),
    "simulate": (
        "thoughtline.cli.simulate_command",
        "simulate_command",
        "Simulated providers on 127.0.0.1, to try the CLI offline.",
    ),
    "serve": (
        "thoughtline.cli.serve_command",
        "serve_command",
        "The HTTP daemon: API, SSE and the web page.",
    ),
    "mcp": ("thoughtline.cli.mcp_command", "mcp_command", "An MCP server over stdio."),
    "acp": ("thoughtline.cli.acp_command", "acp_command", "An ACP agent over stdio."),
    "store": ("thoughtline.cli.store_command", "store_group", "Copy the store into PostgreSQL."),
    "gateway": (
        "thoughtline.cli.gateway_command",
        "gateway_group",
        "The gateway's clients: add one (its token printed once), list, remove.",
    ),
    "tools": (
        "thoughtline.cli.tools_command",
        "tools_command",
        "The configured MCP servers and their tools.",
    ),
    "completion": (
        "thoughtline.cli.completion",
        "completion_command",
        "Shell completion script (bash, zsh, fish).",
    ),
}


# Commands that need an extra: (extra, modules it installs). Checked before the command's
# module is imported: `thoughtline serve` is then one sentence naming the extra, and
# `thoughtline serve --help` says what the command does and which extra it needs.
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "serve": ("server", ("fastapi", "uvicorn")),
    "mcp": ("mcp", ("mcp",)),
    "acp": ("acp", ("acp",)),
    "tools": ("mcp", ("mcp",)),
    "simulate": ("testing", ("uvicorn",)),
}


def missing_extra(cmd_name: str, module: str | None = None) -> ThoughtlineError | None:
    """The error for a command whose extra is not installed (``module``: one known
    missing), or ``None`` when everything it needs can be found."""
    extra, modules = EXTRAS.get(cmd_name, ("all", ()))
    if module is None:
        module = next((name for name in modules if not _installed(name)), None)
        if module is None:
            return None
    return ThoughtlineError(
        "EXTRA_MISSING",
        f"'thoughtline {cmd_name}' needs the [{extra}] extra: "
        f"pip install 'thoughtline[{extra}]' (missing module {module}).",
    )


def _installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or blocked package is not usable either
        return False


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, attribute, text = entry
        problem = missing_extra(cmd_name)
        if problem is None:
            try:
                module = import_module(module_name)
            except ModuleNotFoundError as exc:
                if exc.name is not None and exc.name.startswith("thoughtline"):
                    raise
                problem = missing_extra(cmd_name, exc.name)
        if problem is not None:
            return _needing_extra(cmd_name, text, problem)
        command: click.Command = getattr(module, attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, text) for name, (_, _, text) in COMMANDS.items()])


def _needing_extra(name: str, text: str, problem: ThoughtlineError) -> click.Command:
    """A command whose extra is missing: ``--help`` says what it does and which extra it
    needs (exit 0), shell completion still lists it, and running it, with whatever
    arguments, is the one sentence naming the extra (exit 2)."""

    def refuse(args: tuple[str, ...]) -> None:
        raise problem

    return click.Command(
        name,
        help=f"{text}\n\n{problem.message}",
        callback=refuse,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        add_help_option=True,
    )


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="thoughtline")
def cli() -> None:
    """Run LLM specialist tasks and decide, once, what happens to their reasoning."""


def undecodable_argument(args: list[str]) -> str | None:
    """A sentence naming the first argument that is not UTF-8, or ``None``.

    On POSIX, Python hands over such bytes as lone surrogates; they would fail later,
    wherever the text is stored or printed, so they are refused before anything runs.
    """
    for index, argument in enumerate(args):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            what = f"command-line argument {index + 1}"
            if argument.startswith("--") and "=" in argument:
                option, argument = argument.split("=", 1)
                what = f"the value of {option}"
            shown = repr(os.fsencode(argument))[2:-1]
            return f"{what} ('{shown}') is not valid UTF-8 text; pass arguments as UTF-8."
    return None


def main() -> None:
    """Console entry point: known errors print one clear sentence and exit non-zero.

    Error sentences quote providers, plans, stored runs and arguments: on a terminal
    they are made visible, never obeyed (see :mod:`thoughtline.cli._terminal_text`)."""
    problem = undecodable_argument(sys.argv[1:])
    if problem is not None:
        _say(f"thoughtline: {problem}")
        sys.exit(2)
    try:
        # One name however it was started (the script, python -m): usage lines and the
        # shell completion variable (_THOUGHTLINE_COMPLETE) depend on it.
        cli.main(standalone_mode=False, prog_name="thoughtline")
    except ThoughtlineError as exc:
        _say(f"thoughtline: {exc.message}")
        if wants_json(sys.argv[1:]):
            _say_json(exc)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("thoughtline: aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        # Usage errors quote the arguments given: shown through the same door as the rest.
        shown = io.StringIO()
        exc.show(file=shown)
        _say(shown.getvalue().removesuffix("\n"))
        sys.exit(exc.exit_code)


def wants_json(args: list[str]) -> bool:
    """Whether the command line asks for ``--json`` (before a ``--``): its refusal is
    then JSON on stdout too, so a script reading stdout gets the code."""
    for argument in args:
        if argument == "--":
            return False
        if argument == "--json":
            return True
    return False


def _say_json(exc: ThoughtlineError) -> None:
    """A refusal as ``--json`` prints it: the daemon's error shape, on stdout."""
    from thoughtline.cli._terminal_text import json_for

    error = {"error": {"code": exc.code, "message": exc.message}}
    click.echo(json_for(sys.stdout, error))


def _say(message: str) -> None:
    # Imported on the error path only: it loads rich, which a command may not need.
    from thoughtline.cli._terminal_text import echo_error

    echo_error(message)
