"""``thoughtline purge``: apply [trace.retention] per layer."""

from __future__ import annotations

import sys

import click

from thoughtline.cli._context import open_store
from thoughtline.config import load_config
from thoughtline.runtime.retention import purge, purge_displayed_reasoning
from thoughtline.runtime.trace import retention_seconds


@click.command("purge")
@click.option("--dry-run", is_flag=True, help="Print what would be removed, remove nothing.")
def purge_command(dry_run: bool) -> None:
    """Remove trace events older than each layer's retention."""
    config = load_config()
    store = open_store(config)
    retention = retention_seconds(config.retention)
    try:
        removed = purge(store, retention, dry_run=dry_run)
        keep_reasoning = retention.get("reasoning")
        cleared = (
            0
            if keep_reasoning is None
            else purge_displayed_reasoning(store, keep_reasoning, dry_run=dry_run)
        )
        residue = None if dry_run else store.purge_residue()
        unfinished = residue is not None and store.deletion_erases
    finally:
        store.close()
    verb = "would remove" if dry_run else "removed"
    for layer, count in removed.items():
        keep = config.retention.get(layer, "forever")
        click.echo(f"{layer}: {verb} {count} event(s) (retention {keep})")
    # The reasoning retention also reaches the copies shown on display surfaces.
    click.echo(
        f"displayed reasoning: {verb} from {cleared} task(s) "
        f"(retention {config.retention.get('reasoning', 'forever')})"
    )
    if residue is not None:
        # Removed from the database, not yet from the disk: always said. A failure only
        # where the next purge can finish the job (a cron job would otherwise fail on
        # every PostgreSQL purge, which keeps deleted bytes until VACUUM by design).
        click.echo(f"thoughtline: {residue}", err=True)
        if unfinished:
            sys.exit(1)
