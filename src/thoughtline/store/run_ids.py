"""Run ids as people type them: a full id, its short id, or a unique start of either.

Short ids are the start of the ids made since (see :func:`thoughtline.records.new_run_id`),
so one lookup in the store's index of run ids (``Store.run_ids_with_prefix``) finds
every form, old runs as well as new ones, in both stores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from thoughtline.errors import ThoughtlineError
from thoughtline.records import short_run_id

if TYPE_CHECKING:
    from thoughtline.store.base import Store

SHOWN_CANDIDATES = 8


def resolve_run_id(store: Store, text: str) -> str | None:
    """The id of the one stored run ``text`` names, or ``None`` when none does;
    ``RUN_ID_AMBIGUOUS`` (listing the candidates' short ids) when several do."""
    if not text or store.get_run(text) is not None:
        return text or None
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
