"""Run ids as people type them, on every surface: a full id, its short id, a unique start
of either (``run_`` may be left out), or ``latest``; and conversations named by their id
or by any of these forms of one of their runs' ids.

Short ids are the start of the ids made since (see :func:`thoughtline.records.new_run_id`),
so one lookup in the store's index of run ids (``Store.run_ids_with_prefix``) finds
every form, old runs as well as new ones, in both stores. ``latest`` is never the start
of an id: a short id is lower-case Crockford base32, which has no ``l``.

The functions here find; each surface says in its own words that nothing was found
(``RUN_NOT_FOUND``, ``CONVERSATION_NOT_FOUND``, ``SESSION_UNKNOWN``), while an
ambiguous start is refused here, in the same words everywhere (``RUN_ID_AMBIGUOUS``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from thoughtline.errors import ThoughtlineError
from thoughtline.records import short_run_id

if TYPE_CHECKING:
    from thoughtline.records import Run
    from thoughtline.store.base import Store

LATEST: Final = "latest"
"""The id of the newest run, whatever it is."""
SHOWN_CANDIDATES = 8


def find_run(store: Store, text: str) -> Run | None:
    """The stored run ``text`` names, or ``None`` when none does; ``RUN_ID_AMBIGUOUS``
    (listing the candidates' short ids, at most 8) when several do."""
    if text == LATEST:
        return store.latest_run()
    run = store.get_run(text) if text else None
    if run is not None:
        return run
    run_id = _unique_start(store, text)
    return None if run_id is None else store.get_run(run_id)


def resolve_run_id(store: Store, text: str) -> str | None:
    """The id of the one stored run ``text`` names, or ``None`` when none does (as
    :func:`find_run`, reading only the index of ids for a start of one)."""
    if text == LATEST:
        latest = store.latest_run()
        return None if latest is None else latest.id
    if not text or store.get_run(text) is not None:
        return text or None
    return _unique_start(store, text)


def find_conversation(store: Store, text: str) -> list[Run] | None:
    """The runs of the conversation ``text`` names, oldest first, or ``None`` when it
    names none: a conversation id (its first run's id, or an ACP session's), else any
    form of the id of one of its runs (:func:`find_run`). A run stored before
    conversations were recorded is a conversation of its own."""
    if text != LATEST and (runs := store.conversation_runs(text)):
        return runs
    run = find_run(store, text)
    if run is None:
        return None
    return store.conversation_runs(run.conversation_id or run.id) or [run]


def _unique_start(store: Store, text: str) -> str | None:
    prefix = text if text.startswith("run_") else f"run_{text}"
    if len(prefix) <= len("run_"):
        return None
    # One more than shown, to tell "these" from "these and more".
    matches = store.run_ids_with_prefix(prefix, SHOWN_CANDIDATES + 1)
    if len(matches) == 1:
        return matches[0]
    if not matches:
        return None
    shown = ", ".join(short_run_id(run_id) for run_id in matches[:SHOWN_CANDIDATES])
    if len(matches) > SHOWN_CANDIDATES:
        shown += ", …"
        count = f"more than {SHOWN_CANDIDATES} runs"
    else:
        count = f"{len(matches)} runs"
    raise ThoughtlineError(
        "RUN_ID_AMBIGUOUS", f"{text!r} matches {count}: {shown}. Give more of the id."
    )
