"""RUN_ID arguments as people type them: a full id, a short id, a unique start of
either, or ``latest`` (see :mod:`thoughtline.store.run_ids`)."""

from __future__ import annotations

from thoughtline.errors import ThoughtlineError
from thoughtline.records import Run
from thoughtline.store.base import Store
from thoughtline.store.run_ids import resolve_run_id


def resolve_run(store: Store, text: str | None) -> Run:
    """The run ``text`` names (the latest when ``None`` or ``latest``), or a clear error."""
    if text is None or text == "latest":
        latest = store.latest_run()
        if latest is None:
            raise ThoughtlineError(
                "RUN_NOT_FOUND", 'No runs yet. Start one with: thoughtline run "..."'
            )
        return latest
    run_id = resolve_run_id(store, text)
    found = None if run_id is None else store.get_run(run_id)
    if found is None:
        raise ThoughtlineError(
            "RUN_NOT_FOUND", f"No run {text!r} in this store. List runs with: thoughtline runs"
        )
    return found
