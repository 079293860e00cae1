"""RUN_ID arguments as people type them (see :mod:`thoughtline.store.run_ids`), with the
command line's words for a run that is not there."""

from __future__ import annotations

from thoughtline.errors import ThoughtlineError
from thoughtline.records import Run
from thoughtline.store.base import Store
from thoughtline.store.run_ids import LATEST, find_run

NO_RUNS_YET = 'No runs yet. Start one with: thoughtline run "..."'


def resolve_run(store: Store, text: str | None) -> Run:
    """The run ``text`` names (the latest when ``None`` or ``latest``), or a clear error."""
    found = find_run(store, LATEST if text is None else text)
    if found is None and text in (None, LATEST):
        raise ThoughtlineError("RUN_NOT_FOUND", NO_RUNS_YET)
    if found is None:
        raise ThoughtlineError(
            "RUN_NOT_FOUND", f"No run {text!r} in this store. List runs with: thoughtline runs"
        )
    return found
