"""One connection pool per runtime: runs share it, a long-lived owner keeps it between
runs and closes it at shutdown, a one-shot process closes it after its run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2
import pytest

from tests.runtime.test_disclosure_e2e import TRANSCRIPT, make_runtime
from thoughtline.runtime.engine.background import RunManager
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.testing import Simulator, SimulatorServer

SPEC = RunSpec(
    request="Explain the decision.",
    tasks=(
        TaskSpec(name="a", role="engineer", provider="openai-chat", model="gpt-4o"),
        TaskSpec(name="b", role="engineer", provider="openai-chat", model="gpt-4o"),
    ),
)


def count_pools(runtime: Runtime) -> list[httpx2.AsyncClient]:
    """Record every pool the runtime builds."""
    built: list[httpx2.AsyncClient] = []
    build = runtime._build_http

    def counting() -> httpx2.AsyncClient:
        built.append(build())
        return built[-1]

    runtime.clients._build_http = counting
    return built


async def test_a_one_shot_run_builds_one_pool_for_all_its_tasks_and_closes_it(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    built = count_pools(runtime)
    try:
        run = await runtime.run(SPEC, explicit_mode="surface")
        assert run.status == "completed", [t.error for t in run.tasks]
        assert len(built) == 1 and built[0].is_closed
        run = await runtime.run(SPEC, explicit_mode="surface")
        assert run.status == "completed"
        assert len(built) == 2 and built[1].is_closed
    finally:
        store.close()


async def test_a_long_lived_owner_reuses_its_pool_across_runs_and_closes_it_at_shutdown(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    built = count_pools(runtime)
    manager = RunManager(runtime)
    try:
        first = await manager.start(SPEC, explicit_mode="hidden")
        assert (await first.wait(timeout_s=30)).status == "completed"
        together = [await manager.start(SPEC, explicit_mode="surface") for _ in range(3)]
        runs = await asyncio.gather(*(managed.wait(timeout_s=30) for managed in together))
        assert [run.status for run in runs] == ["completed"] * 3
        assert len(built) == 1 and not built[0].is_closed
        assert len(sim.requests) == 8
    finally:
        await manager.shutdown()
        store.close()
    assert built[0].is_closed


async def test_a_runtime_used_from_a_new_event_loop_builds_a_pool_there(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    built = count_pools(runtime)
    runtime.clients.hold()  # as a long-lived owner would, so the first pool stays open

    def run_on_a_new_loop() -> str:
        return asyncio.run(runtime.run(SPEC, explicit_mode="hidden")).status

    try:
        assert await asyncio.to_thread(run_on_a_new_loop) == "completed"
        assert await asyncio.to_thread(run_on_a_new_loop) == "completed"
        assert len(built) == 2
    finally:
        await runtime.aclose()
        store.close()


async def test_a_pool_the_environment_cannot_build_fails_the_runs_tasks_and_the_next_run_builds_it(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An unreadable trust store fails every task with the error naming the variable
    (not a traceback, not a run left running); once it is fixed, the same long-lived
    runtime builds its pool for the next run."""
    sim.script(TRANSCRIPT)
    runtime, store = make_runtime(tmp_path, sim_server, environ)
    manager = RunManager(runtime)
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    try:
        failed = await (await manager.start(SPEC, explicit_mode="surface")).wait(timeout_s=30)
        assert failed.status == "failed"
        for task in failed.tasks:
            assert task.status == "failed" and task.error is not None
            assert task.error.code == "CONFIG_INVALID"
            assert task.error.message.startswith(f"SSL_CERT_FILE={tmp_path / 'missing.pem'} ")
            assert task.reasoning_status == "not_applicable"
        assert sim.requests == []
        stored = store.get_run(failed.id)
        assert stored is not None and stored.status == "failed"
        monkeypatch.delenv("SSL_CERT_FILE")
        fixed = await (await manager.start(SPEC, explicit_mode="surface")).wait(timeout_s=30)
        assert fixed.status == "completed", [task.error for task in fixed.tasks]
    finally:
        await manager.shutdown()
        store.close()
