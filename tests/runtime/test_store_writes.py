"""How a run's writes reach the store through the runtime's writer: a run streams on while
another process holds the SQLite file, reports its end only once everything is written,
and runs executing together share transactions."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.test_background import SLOW, spec
from tests.runtime.test_disclosure_e2e import make_runtime
from thoughtline.records.run_events import RunCompleted, TaskAnswerDelta, TaskCompleted
from thoughtline.runtime.engine.runner import RunEvent
from thoughtline.runtime.policy import retention
from thoughtline.store.base import PreparedWrite
from thoughtline.testing import Simulator, SimulatorServer


async def test_a_run_streams_on_while_another_process_holds_the_store_and_ends_written(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(SLOW)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    run = runtime.prepare(spec("first", "second"), explicit_mode="surface")
    # The day's retention pass is due too: it runs in a thread, and waits for the lock
    # there, while the run streams.
    seen: list[RunEvent] = []
    completed = asyncio.Event()

    def observe(event: RunEvent) -> None:
        seen.append(event)
        if sum(isinstance(seen_event, TaskCompleted) for seen_event in seen) == 2:
            completed.set()

    other_process = sqlite3.connect(tmp_path / "thoughtline.db", isolation_level=None)
    other_process.execute("BEGIN IMMEDIATE")  # the write lock, until released
    try:
        running = asyncio.ensure_future(runtime.execute(run, observer=observe))
        # Every task streams and finishes while nothing can be written...
        await asyncio.wait_for(completed.wait(), 30)
        answers = [event.text for event in seen if isinstance(event, TaskAnswerDelta)]
        assert "".join(answers) == "y" * 800  # however the network chunked it
        await asyncio.sleep(0.3)
        # ...but the run does not say it is over before its writes are in the store:
        # neither to its caller nor to the live surfaces.
        assert not running.done()
        assert not any(isinstance(event, RunCompleted) for event in seen)
    finally:
        other_process.execute("ROLLBACK")
        other_process.close()
    finished = await asyncio.wait_for(running, 30)
    assert finished.status == "completed"
    assert isinstance(seen[-1], RunCompleted)
    stored = store.get_run(run.id)
    assert stored is not None
    assert stored.status == "completed"
    assert [task.output for task in stored.tasks] == ["y" * 400, "y" * 400]
    logged = store.run_events(run.id)
    assert [event.seq for event in logged][-1] == seen[-1].seq
    await runtime.aclose()
    store.close()


async def test_runs_executing_together_share_transactions(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(SLOW)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    transactions: list[int] = []
    write_prepared = store.write_prepared

    def counting(writes: Sequence[PreparedWrite], *, wait: bool = True) -> bool:
        written = write_prepared(writes, wait=wait)
        if written:
            transactions.append(len(writes))
        return written

    store.write_prepared = counting  # type: ignore[method-assign]
    runs = [runtime.prepare(spec(f"t{n}"), explicit_mode="surface") for n in range(8)]
    transactions.clear()
    finished = await asyncio.gather(*(runtime.execute(run) for run in runs))
    assert [run.status for run in finished] == ["completed"] * 8
    # Each run writes its start, each task's start and end, and its end (4 transitions),
    # and its live deltas: 8 runs together need far fewer transactions than writes.
    assert sum(transactions) >= 8 * 4
    assert len(transactions) < sum(transactions) / 2, transactions
    for run in runs:
        stored = store.get_run(run.id)
        assert stored is not None
        assert stored.status == "completed"
        assert stored.tasks[0].output == "y" * 400
    await runtime.aclose()
    store.close()


async def test_runs_ask_whether_the_purge_is_due_off_the_loop_once_a_minute(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Starting a run does not read the store on the event loop for the day's purge:
    the first start asks in a thread, and later starts within the minute do not ask."""
    sim.script(SLOW)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    asked_from: list[threading.Thread] = []
    real = retention.purge_if_due

    def recording(*args: Any, **kwargs: Any) -> Any:
        asked_from.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(retention, "purge_if_due", recording)
    for request in ("first", "second", "third"):
        await runtime.execute(runtime.prepare(spec(request), explicit_mode="hidden"))
    await runtime.aclose()
    assert len(asked_from) == 1
    assert asked_from[0] is not threading.main_thread()
    assert retention.purge_due(store) is False  # it purged, and recorded it
    store.close()
