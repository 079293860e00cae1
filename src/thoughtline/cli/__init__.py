"""The ``thoughtline`` command line. One module per command group; this one wires them."""

from __future__ import annotations

import sys

import click

from thoughtline import __version__
from thoughtline.cli.config_command import config_command
from thoughtline.cli.demo_command import demo_command
from thoughtline.cli.providers_command import providers_command
from thoughtline.cli.purge_command import purge_command
from thoughtline.cli.run_command import run_command
from thoughtline.cli.runs_command import runs_command, status_command, trace_command
from thoughtline.errors import ThoughtlineError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="thoughtline")
def cli() -> None:
    """Run LLM specialist tasks and decide, once, what happens to their reasoning."""


for command in (
    run_command,
    status_command,
    runs_command,
    trace_command,
    purge_command,
    providers_command,
    config_command,
    demo_command,
):
    cli.add_command(command)


def main() -> None:
    """Console entry point: known errors print one clear sentence and exit non-zero."""
    try:
        cli.main(standalone_mode=False)
    except ThoughtlineError as exc:
        click.echo(f"thoughtline: {exc.message}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("thoughtline: aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
