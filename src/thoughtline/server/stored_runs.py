"""Snapshots of runs executing in other processes (a ``thoughtline run`` sharing the store,
another daemon), folded from the store's event log incrementally.

Such a run's stored row holds its tasks as they were when they started; the text they
streamed since is only in the event log. Folding the whole log for every request cost
0.46 s of CPU for a run 100k deltas long and 6-7 s for 1M, for each listing (the web page
lists runs every three seconds), in a worker thread that holds the GIL the event loop
needs. Here each run's folder is kept between requests, and a request reads only the
records appended since the last one.

Folders are kept for at most :data:`DEFAULT_MAX_RUNS` runs, least recently asked about
dropped first (folded from the start again when asked about again), and a run is
dropped as soon as the store says it ended: a finished run is served as stored. A
folder holds the run's displayed reasoning, so it is never reused once older than the
reasoning retention (``max_age_s``: the next request folds the store's log again, as
retention left it), and :meth:`StoredRunFolds.clear` drops them all when this process
purged. Every method may be called from worker threads at once."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from thoughtline.records import TERMINAL_RUN_STATUSES, Run, RunSnapshot
from thoughtline.records.event_log import from_records
from thoughtline.server.events import SnapshotFolder
from thoughtline.store.base import Store

DEFAULT_MAX_RUNS = 64
"""How many unfinished runs of other processes keep their folder between requests."""


@dataclass(slots=True)
class _Fold:
    lock: threading.Lock = field(default_factory=threading.Lock)
    folder: SnapshotFolder | None = None
    seq: int = 0
    """The last event folded (every record up to it has been read)."""
    built_at: float = field(default_factory=time.monotonic)


class StoredRunFolds:
    def __init__(
        self, store: Store, *, max_runs: int = DEFAULT_MAX_RUNS, max_age_s: float | None = None
    ) -> None:
        self._store = store
        self._max_runs = max_runs
        self._max_age_s = max_age_s
        self._lock = threading.Lock()
        self._folds: OrderedDict[str, _Fold] = OrderedDict()

    def snapshot(self, run: Run) -> tuple[RunSnapshot, int]:
        """``run``, as just read from the store, with its event log folded on, and the
        seq of the last event folded (0: none). A finished run is its stored snapshot."""
        if run.status in TERMINAL_RUN_STATUSES:
            self._forget(run.id)
            return run.snapshot(), 0
        fold = self._fold_of(run.id)
        with fold.lock:
            records = self._store.run_events(run.id, after_seq=fold.seq)
            events = from_records(records, after_seq=fold.seq, joined=True)
            if fold.folder is None:
                if not events:
                    return run.snapshot(), 0
                # The first event (run.started) replaces the whole snapshot anyway.
                fold.folder = SnapshotFolder(run.snapshot())
            folder = fold.folder
            for event in events:
                folder.apply(event)
            fold.seq = seq = folder.seq
            snapshot = folder.snapshot()
        if snapshot["status"] in TERMINAL_RUN_STATUSES:
            self._forget(run.id)  # it ended since the row was read
        return snapshot, seq

    def clear(self) -> None:
        """Drop every folder (this process purged: what they hold may be gone)."""
        with self._lock:
            self._folds.clear()

    def __len__(self) -> int:
        return len(self._folds)

    def _fold_of(self, run_id: str) -> _Fold:
        with self._lock:
            fold = self._folds.get(run_id)
            max_age_s = self._max_age_s
            if (
                fold is not None
                and max_age_s is not None
                and time.monotonic() - fold.built_at > max_age_s
            ):
                fold = None  # it may hold reasoning retention has purged since
            if fold is None:
                fold = self._folds[run_id] = _Fold()
                while len(self._folds) > self._max_runs:
                    self._folds.popitem(last=False)
            else:
                self._folds.move_to_end(run_id)
            return fold

    def _forget(self, run_id: str) -> None:
        with self._lock:
            self._folds.pop(run_id, None)
