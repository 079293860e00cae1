"""How a run ended, in one word: its status from its tasks' and how it was stopped, and
what a store that failed it had (in the sentence a run stopped by its store records)."""

from __future__ import annotations

from typing import Final, Literal

from thoughtline.records import Run, RunStatus
from thoughtline.store.base import StoreError, StoreProblem

StopStatus = Literal["cancelled", "interrupted", "failed"]

STORE_PROBLEMS: Final[dict[StoreProblem, str]] = {
    "full": "its disk is full",
    "damaged": "its file is damaged",
    "locked": "another process held it locked",
    "unavailable": "it could not be reached",
    "closed": "it was closed",
}


def store_problem(error: StoreError) -> str:
    """What happened to the store, as a clause (``its disk is full``)."""
    return STORE_PROBLEMS.get(error.problem, error.problem)


def run_status(run: Run, stopped: StopStatus | None) -> RunStatus:
    """A finished run's status from its tasks' (``stopped``: how it was stopped, if it was;
    tasks that failed because the store lost what it held count as failed tasks)."""
    statuses = [task.status for task in run.tasks]
    if stopped is not None and stopped != "failed":
        return stopped
    if "cancelled" in statuses:
        return "cancelled"
    if statuses and all(status == "prepared" for status in statuses):
        return "completed_prepare_only"
    if all(status == "done" for status in statuses):
        return "completed"
    if any(status == "done" for status in statuses):
        return "completed_with_failures"
    return "failed"
