"""The store contract. SQLite implements it now; PostgreSQL will implement the same.

Every write is durable when the call returns (the runtime writes at each task
transition). A run left ``planned``/``running`` by a process that died is marked
``interrupted`` — with its unfinished tasks, which keep what had arrived — by
:meth:`Store.recover_interrupted`, which every store calls when it is opened.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol, TypeAlias

from thoughtline.errors import ThoughtlineError
from thoughtline.records import Run, RunEventRecord, Task, TraceEvent, TraceLayer

StoreProblem: TypeAlias = Literal["damaged", "full", "locked", "unavailable"]


class StoreError(ThoughtlineError):
    """The store cannot be used as it is: its file is damaged, its disk is full, another
    process holds it locked, or it cannot be read or written. The message names the file
    (or server) and what to do; ``problem`` says which, for code that reacts to it."""

    def __init__(self, problem: StoreProblem, message: str) -> None:
        super().__init__("STORE_UNAVAILABLE", message, retryable=problem == "locked")
        self.problem = problem


class Store(Protocol):
    def create_run(self, run: Run) -> None:
        """Insert the run and all its tasks; this process becomes the run's owner."""
        ...

    def update_run(self, run: Run) -> None:
        """Write the run's status and ``finished_at`` (tasks are written separately)."""
        ...

    def update_task(self, task: Task) -> None:
        """Write every field of one task."""
        ...

    def append_trace(self, events: Sequence[TraceEvent]) -> None:
        """Append trace events (one transaction)."""
        ...

    def append_run_events(self, events: Sequence[RunEventRecord]) -> None:
        """Append live events of runs (one transaction)."""
        ...

    def run_events(
        self, run_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[RunEventRecord]:
        """A run's live events with ``seq > after_seq``, in order."""
        ...

    def get_run(self, run_id: str) -> Run | None:
        """The run with its tasks, or ``None``."""
        ...

    def latest_run(self) -> Run | None: ...

    def list_runs(self, limit: int = 20) -> list[Run]:
        """Newest first, with tasks."""
        ...

    def trace(self, run_id: str, layer: TraceLayer | None = None) -> list[TraceEvent]:
        """Trace events of a run in the order written, optionally of one layer."""
        ...

    def purge(
        self, retention_s: Mapping[TraceLayer, int | None], *, dry_run: bool = False
    ) -> dict[TraceLayer, int]:
        """Delete trace events older than each layer's retention (``None`` = keep
        forever). Returns how many events of each layer were (or would be) removed."""
        ...

    def purge_displayed_reasoning(self, older_than_s: int, *, dry_run: bool = False) -> int:
        """Clear displayed reasoning (task rows, run event log) of tasks that finished
        more than ``older_than_s`` ago. Returns how many tasks were (or would be) cleared."""
        ...

    def purge_due(self, every_s: int = 86_400) -> bool:
        """True when no purge ran in the last ``every_s`` seconds (for long-running
        processes that purge automatically at most once a day); records the check."""
        ...

    def purge_residue(self) -> str | None:
        """After :meth:`purge`: ``None`` when what it removed is gone from every file of
        the store, otherwise why it is still on disk and how to finish (one sentence)."""
        ...

    def recover_interrupted(self) -> list[str]:
        """Mark runs whose owning process is gone as ``interrupted``, their unfinished
        tasks rebuilt from the run event log (see :mod:`thoughtline.store.recovery`);
        returns their ids."""
        ...

    def close(self) -> None: ...
