"""RUN_ID arguments as people type them: a full id, a unique prefix, or ``latest``.

The store looks runs up by exact id only, so a prefix is matched here against the
newest :data:`PREFIX_SCAN` runs (``list_runs``). Ids are time-ordered, so a prefix of a
recent run is found; an older one needs its full id, and the error says so.
"""

from __future__ import annotations

from thoughtline.errors import ThoughtlineError
from thoughtline.records import Run
from thoughtline.store.base import Store

PREFIX_SCAN = 1000
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
    matches = (
        [run for run in store.list_runs(PREFIX_SCAN) if run.id.startswith(prefix)]
        if len(prefix) > len("run_")
        else []
    )
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ThoughtlineError(
            "RUN_NOT_FOUND",
            f"No run {text!r} in this store (a prefix is matched against the "
            f"{PREFIX_SCAN} newest runs). List runs with: thoughtline runs",
        )
    shown = ", ".join(run.id for run in matches[:_SHOWN_CANDIDATES])
    more = (
        f" and {len(matches) - _SHOWN_CANDIDATES} more" if len(matches) > _SHOWN_CANDIDATES else ""
    )
    raise ThoughtlineError(
        "RUN_ID_AMBIGUOUS",
        f"{text!r} matches {len(matches)} runs: {shown}{more}. Give more of the id.",
    )
