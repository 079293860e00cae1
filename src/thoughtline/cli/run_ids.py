"""RUN_ID arguments as people type them: a full id, a unique prefix, or ``latest``.

A prefix is looked up in the store's index of run ids (``Store.run_ids_with_prefix``),
old runs as well as new ones.
"""

from __future__ import annotations

from thoughtline.errors import ThoughtlineError
from thoughtline.records import Run
from thoughtline.store.base import Store

_SHOWN_CANDIDATES = 8


def resolve_run(store: Store, text: str | None) -> Run:
    """The run ``text`` names (the latest when ``None`` or ``latest``), or a clear error."""
    if text is None or text == "latest":
        latest = store.latest_run()
        if latest is None:
            raise ThoughtlineError(
                "RUN_NOT_FOUND", 'No runs yet. Start one with: thoughtline run "..."'
            )
        return latest
    exact = store.get_run(text)
    if exact is not None:
        return exact
    prefix = text if text.startswith("run_") else f"run_{text}"
    # One more than shown, to tell "these" from "these and more".
    matches = (
        store.run_ids_with_prefix(prefix, _SHOWN_CANDIDATES + 1)
        if len(prefix) > len("run_")
        else []
    )
    if len(matches) == 1:
        found = store.get_run(matches[0])
        if found is not None:
            return found
    if not matches:
        raise ThoughtlineError(
            "RUN_NOT_FOUND", f"No run {text!r} in this store. List runs with: thoughtline runs"
        )
    shown = ", ".join(matches[:_SHOWN_CANDIDATES])
    count = (
        f"more than {_SHOWN_CANDIDATES} runs, the newest"
        if len(matches) > _SHOWN_CANDIDATES
        else f"{len(matches)} runs"
    )
    raise ThoughtlineError(
        "RUN_ID_AMBIGUOUS", f"{text!r} matches {count}: {shown}. Give more of the id."
    )
