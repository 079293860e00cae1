"""Retention: which trace rows expire when, and when a purge is due. The policy, above
any store; a store only deletes what it is told to (:class:`~thoughtline.store.base.Store`).

- Each trace layer is kept for its ``[trace.retention]`` duration (``None``: forever);
  :func:`purge` deletes the events older than that, and says how many of each layer.
- The ``reasoning`` retention also reaches the displayed copies of reasoning (the task's
  reasoning and parts, the run event log's deltas and snapshots):
  :func:`purge_displayed_reasoning` clears those of tasks that finished longer ago, and
  leaves a notice saying so.
- Long-running processes purge on their own at most once a day, whichever process
  sharing the store comes first (:func:`purge_due`); a real purge counts as one, a dry
  run does not.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from thoughtline.records import TRACE_LAYERS, TraceLayer, iso, parse_epoch
from thoughtline.runtime.policy.trace import retention_seconds
from thoughtline.store.base import Store, Vacuumed

PURGE_EVERY_S = 86_400
"""How often processes purge on their own."""
LAST_PURGE_KEY = "last_purge_at"
"""The store's meta key holding when the last purge ran (ISO timestamp)."""
RETENTION_NOTE = "The reasoning text was removed by the reasoning retention."
"""Appended to the notice of a task whose displayed reasoning retention removed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PurgeReport:
    """What a purge (:meth:`Orchestrator.purge <thoughtline.Orchestrator.purge>`,
    ``thoughtline purge``) removed (or would remove, with ``dry_run``).

    ``removed`` counts trace events per layer; ``displayed_reasoning_cleared`` counts tasks
    whose displayed reasoning outlived the ``reasoning`` retention; ``residue`` is set when
    data left the database but not yet the disk (the purge is not complete);
    ``vacuumed`` says what ``VACUUM`` freed when the purge asked for it on a store that
    needs it (PostgreSQL)."""

    removed: Mapping[TraceLayer, int]
    displayed_reasoning_cleared: int
    dry_run: bool
    residue: str | None = None
    vacuumed: Vacuumed | None = None


def apply(
    store: Store, retention: Mapping[str, str], *, dry_run: bool = False, vacuum: bool = False
) -> PurgeReport:
    """Apply ``[trace.retention]`` (``retention``: each layer's duration as configured)
    to every layer and to displayed reasoning, as ``thoughtline purge`` and
    :meth:`Orchestrator.purge <thoughtline.Orchestrator.purge>` do; with ``dry_run``,
    only count. With ``vacuum`` (``thoughtline purge --vacuum``), then reclaim the space
    of what was deleted (:meth:`Store.vacuum <thoughtline.store.base.Store.vacuum>`)."""
    seconds = retention_seconds(retention)
    removed = purge(store, seconds, dry_run=dry_run)
    keep_reasoning = seconds.get("reasoning")
    cleared = (
        0
        if keep_reasoning is None
        else purge_displayed_reasoning(store, keep_reasoning, dry_run=dry_run)
    )
    residue = None if dry_run else store.purge_residue()
    vacuumed = store.vacuum() if vacuum and not dry_run else None
    return PurgeReport(
        removed=removed,
        displayed_reasoning_cleared=cleared,
        dry_run=dry_run,
        residue=residue,
        vacuumed=vacuumed,
    )


def purge(
    store: Store, retention_s: Mapping[TraceLayer, int | None], *, dry_run: bool = False
) -> dict[TraceLayer, int]:
    """Delete trace events older than each layer's retention (``None``, or a layer left
    out: keep forever). Returns how many events of each layer were (or would be)
    removed; a real purge is recorded as the last one (see :func:`purge_due`)."""
    now = time.time()
    cutoffs: dict[TraceLayer, float] = {}
    for layer in TRACE_LAYERS:
        keep = retention_s.get(layer)
        if keep is None:
            continue
        if keep < 0:
            raise ValueError(f"retention for {layer} must be >= 0 seconds, got {keep}")
        cutoffs[layer] = now - keep
    counts = store.delete_trace_before(cutoffs, dry_run=dry_run)
    if not dry_run:
        store.set_meta(LAST_PURGE_KEY, iso(now))
    return counts


def purge_displayed_reasoning(store: Store, older_than_s: int, *, dry_run: bool = False) -> int:
    """Remove the displayed copies of reasoning of tasks that finished more than
    ``older_than_s`` ago — the ``reasoning`` retention applies to every copy, not only
    the trace layer. Returns how many tasks were (or would be) cleared; each keeps a
    notice saying its reasoning was removed by retention."""
    cutoff = iso(time.time() - older_than_s)
    return store.clear_displayed_reasoning(cutoff, RETENTION_NOTE, dry_run=dry_run)


def purge_due(store: Store, every_s: int = PURGE_EVERY_S) -> bool:
    """True when no purge ran in the last ``every_s`` seconds, for long-running
    processes that purge automatically; records the check, so of the processes sharing
    the store exactly one gets True."""
    last = store.get_meta(LAST_PURGE_KEY)
    now = time.time()
    if not _due(last, now, every_s):
        return False
    return store.replace_meta(LAST_PURGE_KEY, last, iso(now))


def purge_if_due(
    store: Store, retention_s: Mapping[TraceLayer, int | None], every_s: int = PURGE_EVERY_S
) -> dict[TraceLayer, int] | None:
    """Apply the retention when :func:`purge_due` says so (so retention holds even when
    nobody runs ``thoughtline purge``); ``None`` when it was not due."""
    if not purge_due(store, every_s):
        return None
    removed = purge(store, retention_s)
    keep = retention_s.get("reasoning")
    if keep is not None:
        purge_displayed_reasoning(store, keep)
    return removed


def _due(last: str | None, now: float, every_s: int) -> bool:
    seen = parse_epoch(last)
    # A last purge "in the future" means the clock went back: treat it as due.
    return seen is None or not 0 <= now - seen < every_s
