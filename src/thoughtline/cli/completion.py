"""Shell completion: ``thoughtline completion bash|zsh|fish`` prints the script to load,
and the values people type most are completed from what this machine knows: run ids
(newest first, from the store's index of ids), providers (built-in and configured),
roles (built-in, configured, ``specialists/*.md``) and model ids (the capability data).

Completing never fails loudly: a missing or broken config or store completes nothing,
as a shell expects, rather than printing an error into the prompt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import click
from click.shell_completion import CompletionItem, get_completion_class

__all__ = [
    "complete_models",
    "complete_providers",
    "complete_roles",
    "complete_run_ids",
    "completion_command",
]

_RUN_IDS_SHOWN = 20

PROG = "thoughtline"
COMPLETE_VAR = "_THOUGHTLINE_COMPLETE"


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion_command(shell: Literal["bash", "zsh", "fish"]) -> None:
    """Print the shell completion script for SHELL.

    \b
    Load it in the current shell, or add the line to your shell's startup file:
      bash:  eval "$(thoughtline completion bash)"      (~/.bashrc)
      zsh:   eval "$(thoughtline completion zsh)"       (~/.zshrc)
      fish:  thoughtline completion fish | source       (~/.config/fish/config.fish)
    """
    from thoughtline.cli import cli

    completion_class = get_completion_class(shell)
    assert completion_class is not None  # the choice lists only shells click knows
    click.echo(completion_class(cli, {}, PROG, COMPLETE_VAR).source())


def complete_run_ids(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Ids of stored runs starting with what was typed (``run_`` may be left out):
    short ids while what was typed fits in one, whole ids otherwise (or once ``run_``
    was typed); with nothing typed, the newest runs first."""
    from thoughtline.records import SHORT_ID_LENGTH, short_run_id

    try:
        from thoughtline.config import load_config
        from thoughtline.store.opening import open_store, sqlite_path

        config = load_config()
        if config.store != "postgres" and not sqlite_path().exists():
            return []  # no store yet: nothing to complete, and none is created
        store = open_store(config)  # read only: no crash recovery from a shell prompt
        try:
            if not incomplete:
                ids = [run.id for run in store.list_runs(_RUN_IDS_SHOWN)]
            else:
                prefix = incomplete if incomplete.startswith("run_") else f"run_{incomplete}"
                ids = store.run_ids_with_prefix(prefix, _RUN_IDS_SHOWN)
        finally:
            store.close()
    except Exception:  # a shell prompt is no place for an error
        return []
    short = not incomplete.startswith("run_") and len(incomplete) <= SHORT_ID_LENGTH
    shown = [CompletionItem(short_run_id(run_id) if short else run_id) for run_id in ids]
    if "latest".startswith(incomplete):
        shown.insert(0, CompletionItem("latest", help="the newest run"))
    return shown


def complete_providers(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Endpoint names: the built-in ones and those the config adds."""
    try:
        from thoughtline.config import load_config
        from thoughtline.providers.endpoints import EndpointRegistry

        config = load_config()
        names = EndpointRegistry(config.providers, config_source=str(config.path)).names
    except Exception:
        return []
    return [CompletionItem(name) for name in names if name.startswith(incomplete)]


def complete_roles(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Role names as a run finds them: built-in, ``[roles]``, ``specialists/*.md``."""
    try:
        from thoughtline.config import load_config
        from thoughtline.runtime import RoleCatalog

        config = load_config()
        folders = [Path.cwd() / "specialists"]
        if config.path is not None:
            folders.insert(0, config.path.parent / "specialists")
        names = RoleCatalog(folders, config.roles).names
    except Exception:
        return []
    return [CompletionItem(name) for name in names if name.startswith(incomplete)]


def complete_models(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Model ids the capability data lists for the chosen ``--provider`` (every
    provider's when none is chosen yet)."""
    try:
        from thoughtline.cli.models_command import models_report

        provider = ctx.params.get("provider")
        listing = models_report(provider if isinstance(provider, str) else None)
    except Exception:
        return []
    seen: dict[str, str] = {}
    for entry in listing["providers"]:
        for model in entry["models"]:
            if model["id"].startswith(incomplete):
                seen.setdefault(model["id"], entry["name"])
    return [CompletionItem(model_id, help=provider) for model_id, provider in seen.items()]
