"""Listing runs on the daemon while another process's run streams a long reasoning.

A run executing in another process (a ``thoughtline run`` sharing the store) shows its
partial text in ``GET /v1/runs`` and ``GET /v1/runs/{id}`` only through its event log. This
script writes such a run into a fresh store, as its owner would (this process is the
owner, alive throughout: records of 10 reasoning deltas, as a fast stream's 10 ms flushes
write them), starts ``thoughtline serve`` on that store, and asks for the run list
``--requests`` times, the run growing by ``--grow`` deltas between two requests (the web
page lists runs every 3 s). For each request: the wall time and the daemon's CPU time
(/proc). The baseline, in this process on the same store after each request: folding the
whole log onto the stored run, as each request did before the daemon kept its folds
(``server/stored_runs.py``).

    .venv/bin/python bench/bench_listing.py [--deltas 1000000] [--grow 1000] [--requests 6]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2
from tests.support import daemon_url

from thoughtline.records import Run, Task, new_id, now_iso
from thoughtline.records.event_log import from_records, to_records
from thoughtline.records.run_events import RunStarted, TaskReasoningDelta, TaskStarted
from thoughtline.server.events import fold
from thoughtline.store.sqlite import SQLiteStore

PER_RECORD = 10
DELTA = "think "


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Owner:
    """Writes the run as the process executing it would."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store
        run_id = new_id("run")
        task = Task(id=new_id("task"), run_id=run_id, position=0, name="engineer",
                    role="engineer", provider="anthropic", model="claude-sonnet-4-6",
                    chain_of_thought="surface", chain_of_thought_source="explicit",
                    status="running")  # fmt: skip
        self.run = Run(id=run_id, request="Think at length.", chain_of_thought="surface",
                       chain_of_thought_source="explicit", worker_backend="provider",
                       status="running", tasks=[task])  # fmt: skip
        store.create_run(self.run)
        self.seq = 2
        store.write(
            events=to_records(
                [
                    RunStarted(run_id=run_id, seq=1, at=now_iso(), snapshot=self.run.snapshot()),
                    TaskStarted(
                        run_id=run_id, seq=2, at=now_iso(), task_id=task.id, task=task.to_dict()
                    ),
                ]
            )
        )

    def stream(self, deltas: int) -> None:
        task_id = self.run.tasks[0].id
        records = []
        for _ in range(deltas // PER_RECORD):
            first = self.seq + 1
            self.seq += PER_RECORD
            batch = [
                TaskReasoningDelta(
                    run_id=self.run.id, seq=seq, at=now_iso(), task_id=task_id, text=DELTA
                )
                for seq in range(first, self.seq + 1)
            ]
            records.extend(to_records(batch))
            if len(records) >= 10_000:
                self.store.write(events=records)
                records = []
        if records:
            self.store.write(events=records)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=1_000_000)
    parser.add_argument("--grow", type=int, default=1_000)
    parser.add_argument("--requests", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        home.mkdir()
        store = SQLiteStore(home / "thoughtline.db")
        owner = Owner(store)
        owner.stream(args.deltas)
        env = {**os.environ, "THOUGHTLINE_HOME": str(home)}
        daemon = subprocess.Popen(
            [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
            env=env,
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        rows = []
        try:
            base = daemon_url(daemon)
            with httpx2.Client(base_url=base, timeout=600) as client:
                for number in range(args.requests):
                    if number:
                        owner.stream(args.grow)
                    cpu = cpu_seconds(daemon.pid)
                    started = time.perf_counter()
                    listed = client.get("/v1/runs", params={"limit": 20}).json()["runs"]
                    wall = time.perf_counter() - started
                    cpu = cpu_seconds(daemon.pid) - cpu
                    reasoning = listed[0]["tasks"][0]["reasoning"] or ""
                    assert len(reasoning) == (owner.seq - 2) * len(DELTA), "a delta is missing"
                    started_cpu = time.process_time()
                    events = from_records(store.run_events(owner.run.id))
                    whole = fold(owner.run.snapshot(), events, events[-1].seq)
                    baseline = time.process_time() - started_cpu
                    assert whole["tasks"][0]["reasoning"] == reasoning
                    rows.append((number + 1, owner.seq - 2, wall, cpu, baseline))
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
            store.close()
    print(
        f"one unfinished run of another process, {args.deltas:,} reasoning deltas in records of "
        f"{PER_RECORD}, growing by {args.grow:,} between requests; python "
        f"{platform.python_version()}; load average {os.getloadavg()[0]:.1f} at the end\n"
    )
    print("| request | deltas in the log | wall | daemon CPU | baseline CPU: whole-log fold |")
    print("|---:|---:|---:|---:|---:|")
    for number, deltas, wall, cpu, baseline in rows:
        print(
            f"| {number} | {deltas:,} | {wall * 1000:,.0f} ms | {cpu * 1000:,.0f} ms "
            f"| {baseline * 1000:,.0f} ms |"
        )


if __name__ == "__main__":
    main()
