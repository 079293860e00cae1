"""Runs executing together in one runtime (a daemon's) stream at the same time: the
shared connection pool does not queue one run's call behind another's."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from tests.runtime.test_background import spec
from tests.runtime.test_disclosure_e2e import make_runtime
from thoughtline.testing import SimRequest, Simulator, SimulatorServer, Transcript
from thoughtline.testing.simulator import FrameRole

RUNS = 24  # more than any fixed pool sized from one run's max_concurrency (8 tasks)


@pytest.mark.slow  # paced streams of about two seconds
async def test_more_runs_than_a_run_has_tasks_stream_at_the_same_time(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.pace_s = 0.05
    sim.script(Transcript(answer="a" * 120, chunk_chars=3))  # about two seconds a stream
    lock = threading.Lock()
    streaming: set[int] = set()
    most = 0

    def on_frame(request: SimRequest, role: FrameRole) -> None:
        nonlocal most
        with lock:
            if role == "end":
                streaming.discard(id(request))
            else:
                streaming.add(id(request))
            most = max(most, len(streaming))

    sim.on_frame_sent = on_frame
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    runs = [runtime.prepare(spec(f"t{n}"), explicit_mode="hidden") for n in range(RUNS)]
    finished = await asyncio.gather(*(runtime.execute(run) for run in runs))
    assert [run.status for run in finished] == ["completed"] * RUNS
    assert most == RUNS, f"at most {most} of {RUNS} runs streamed at once"
    await runtime.aclose()
    store.close()
