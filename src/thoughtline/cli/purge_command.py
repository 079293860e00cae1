"""``thoughtline purge``: apply [trace.retention] per layer."""

from __future__ import annotations

import sys

import click

from thoughtline.cli._context import open_store
from thoughtline.config import load_config
from thoughtline.runtime import apply_retention
from thoughtline.store.base import Vacuumed


@click.command("purge")
@click.option("--dry-run", is_flag=True, help="Print what would be removed, remove nothing.")
@click.option(
    "--vacuum",
    is_flag=True,
    help="Then run VACUUM (not FULL) on the PostgreSQL tables the purge deleted from, and "
    "say how many bytes it freed (SQLite needs none).",
)
def purge_command(dry_run: bool, vacuum: bool) -> None:
    """Remove trace events older than each layer's retention."""
    if dry_run and vacuum:
        raise click.UsageError("--dry-run deletes nothing for --vacuum to reclaim; give one.")
    config = load_config()
    store = open_store(config)
    try:
        report = apply_retention(store, config.retention, dry_run=dry_run, vacuum=vacuum)
        unfinished = report.residue is not None and store.deletion_erases
    finally:
        store.close()
    removed, cleared, residue = report.removed, report.displayed_reasoning_cleared, report.residue
    verb = "would remove" if dry_run else "removed"
    for layer, count in removed.items():
        keep = config.retention.get(layer, "forever")
        click.echo(f"{layer}: {verb} {count} event(s) (retention {keep})")
    # The reasoning retention also reaches the copies shown on display surfaces.
    click.echo(
        f"displayed reasoning: {verb} from {cleared} task(s) "
        f"(retention {config.retention.get('reasoning', 'forever')})"
    )
    if vacuum:
        click.echo(describe_vacuum(report.vacuumed))
    if residue is not None:
        # Removed from the database, not yet from the disk: always said. A failure only
        # where the next purge can finish the job (a cron job would otherwise fail on
        # every PostgreSQL purge, which keeps deleted bytes until VACUUM by design).
        click.echo(f"thoughtline: {residue}", err=True)
        if unfinished:
            sys.exit(1)


def describe_vacuum(vacuumed: Vacuumed | None) -> str:
    """One line on what ``--vacuum`` did."""
    if vacuumed is None:
        return (
            "vacuum: not needed on SQLite (a purge overwrites what it deletes, and new rows "
            "reuse the free pages)"
        )
    if not vacuumed.tables:
        return "vacuum: nothing to do (this purge deleted nothing)"
    return (
        f"vacuum: {', '.join(vacuumed.tables)}: freed {vacuumed.bytes_freed:,} bytes "
        f"({vacuumed.bytes_before:,} -> {vacuumed.bytes_after:,} bytes with their indexes); "
        "new rows reuse the rest of the space the deleted rows held"
    )
