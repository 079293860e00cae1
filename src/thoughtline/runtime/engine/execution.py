"""One run executing: its tasks in order, live events, and everything written durably.

Tasks run concurrently up to ``max_concurrency``; a task that runs after others waits for
them and receives their outputs (never their reasoning) as handoff. Every transition is
turned into rows when it happens and queued, with the live events before it, for the
runtime's :class:`~thoughtline.runtime.engine.store_writer.StoreWriter`; live events are
numbered, handed to the observer and reach the event log within the store's
``live_flush_s``. A run reports its end once all of it is written.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import replace
from typing import Final

from thoughtline.config.pricing import Pricer
from thoughtline.errors import ThoughtlineError
from thoughtline.model.requests import ToolSpec
from thoughtline.providers.client import ProviderClient
from thoughtline.providers.redaction import Redactor
from thoughtline.records import (
    TERMINAL_TASK_STATUSES,
    Run,
    Task,
    TaskError,
    TaskStatus,
    WorkerBackend,
    now_iso,
    short_run_id,
)
from thoughtline.records.event_log import to_records
from thoughtline.records.run_events import RunEvent, RunStarted, run_finished, tool_server_start
from thoughtline.records.server_starts import with_server_start
from thoughtline.runtime.engine.clients import CallOverlap
from thoughtline.runtime.engine.run_outcome import StopStatus, run_status, store_problem
from thoughtline.runtime.engine.run_recording import RunObserver, RunRecorder, RunServices
from thoughtline.runtime.engine.task_call import TaskCall
from thoughtline.runtime.engine.telemetry_hooks import CallReport, notify
from thoughtline.runtime.planning.roles import RoleCatalog
from thoughtline.runtime.planning.run_tools import Approver, RunTools
from thoughtline.runtime.planning.toolbox import StartedTools, TaskTools, Toolbox, ToolServer
from thoughtline.runtime.policy.budget import RunBudget
from thoughtline.store.base import StoreError
from thoughtline.tools.server_start import SERVER_START

logger = logging.getLogger(__name__)


END_WRITE_TRIES: Final = 2
"""How many more holds a run's end gets after a server outage lost one."""


class RunExecution(RunRecorder):
    """One run executing: its tasks, their ordering and the shared HTTP resources. It is
    each task's :class:`~thoughtline.runtime.engine.task_sink.TaskSink`."""

    def __init__(
        self,
        services: RunServices,
        run: Run,
        observer: RunObserver | None,
        tools: RunTools | None = None,
        *,
        started: StartedTools | None = None,
    ) -> None:
        super().__init__(services, run, observer)
        self.run_tools = tools or RunTools()
        self.finished: dict[str, asyncio.Event] = {task.id: asyncio.Event() for task in run.tasks}
        self.semaphore = asyncio.Semaphore(services.max_concurrency)
        self.uses_clients = run.worker_backend == "provider"
        self.workers: list[asyncio.Future[None]] = []
        self.starting: asyncio.Future[StartedTools | None] | None = None
        """The start of the run's tool servers while it goes on (:meth:`cancel` stops it)."""
        self.cancelled = False
        self.stop_status: StopStatus = "cancelled"
        self.stop_error: TaskError | None = None
        """What stopped tasks end with: for ``failed``, the store lost what it held; for
        ``cancelled``, the reason its caller gave (:meth:`cancel`)."""
        self.end_lost = False
        """A write given up during a server outage may have held how the run ended."""
        self.toolbox: Toolbox | None = None
        self.started_tools = started  # started by the front end before the run was stored
        self._budget = RunBudget(run.max_cost)
        if started is not None:
            # Their starts so far were told as the run's first events (the front end's
            # observer heard them then); the run goes on numbering from there.
            early = started.hand_over(self.server_notice)
            for event in early:
                self.seq = event.seq
                run.server_starts = with_server_start(run.server_starts, event)
                self.emit(event, observed=started.observer is None)

    def cancel(self, status: StopStatus = "cancelled", error: TaskError | None = None) -> None:
        """Stop every task still queued or running (idempotent). ``interrupted`` is for a
        process shutting down: the run did not fail and nobody cancelled it; ``failed``
        for a store that lost what it held (:attr:`stop_error`). ``error``: why the
        caller stopped it, recorded as the stopped tasks' error (the gateway's client
        that stopped reading)."""
        if not self.cancelled:
            self.stop_status = status
            if error is not None and self.stop_error is None:
                self.stop_error = error
        self.cancelled = True
        if self.starting is not None:
            self.starting.cancel()
        for worker in self.workers:
            worker.cancel()

    def store_failed(self, error: StoreError) -> None:
        """A write to the store failed (disk full, damaged file): nothing more can be
        recorded, so the run stops and writes nothing else. What was written stays, and
        the next process that opens the store marks the run interrupted, keeping what
        reached the event log.

        A server that stayed away past the writer's hold (``held_then_lost``) may come
        back: the tasks then fail ``STORE_UNAVAILABLE``, saying what was lost, and the
        run goes on writing how it ended, which the writer holds for the server again."""
        if error.held_then_lost:
            self.end_lost = True
            if self.stop_error is None and self.store_failure is None:
                self.stop_error = TaskError(
                    code="STORE_UNAVAILABLE", message=error.message, retryable=True
                )
                self.cancel("failed")
            return
        if self.store_failure is None:
            self.store_failure = error
        self.cancel("interrupted")

    def stopped_by(self) -> str | None:
        """Why the run stopped its tasks when nobody cancelled it, for their notices."""
        if self.end_lost and self.stop_error is not None and self.store_failure is None:
            return (
                "thoughtline stopped the task because the store stayed unreachable and "
                "the events it held for it were lost"
            )
        if self.store_failure is None:
            return None
        return (
            "thoughtline stopped the task because the store could not be written "
            f"({store_problem(self.store_failure)})"
        )

    @property
    def worker_backend(self) -> WorkerBackend:
        return self.run.worker_backend

    @property
    def roles(self) -> RoleCatalog:
        return self.services.roles

    @property
    def redactor(self) -> Redactor:
        return self.services.redactor

    @property
    def records_provider_raw(self) -> bool:
        return self.services.trace_provider_raw

    def calling(self, provider: str) -> AbstractAsyncContextManager[CallOverlap]:
        """Around one model call to ``provider`` (the endpoint's ``max_concurrency``)."""
        if self.toolbox is not None:  # servers offered from the cache start meanwhile
            self.toolbox.release()
        return self.services.clients.calling(provider)

    def report_call(self, task: Task, report: CallReport) -> None:
        """Tell the telemetry hook that a task's model calls ended."""
        notify(self.services.telemetry, lambda hook: hook.task_finished(self.run, task, report))

    @property
    def tool_timeout_s(self) -> float:
        return self.services.tool_timeout_s

    @property
    def pricer(self) -> Pricer:
        return self.services.pricer

    @property
    def budget(self) -> RunBudget:
        return self._budget

    def tools_for(self, task: Task) -> TaskTools:
        if self.toolbox is None:  # the run's servers are started before its tasks
            raise ThoughtlineError("TOOL_SERVER_UNAVAILABLE", "The run started no tool servers.")
        return self.toolbox.offer(task.tools, asks=self.approver is not None)

    def tools_pending(self, task: Task) -> bool:
        return self.toolbox is not None and self.toolbox.pending(task.tools)

    async def confirm_tools(
        self, task: Task, *, step: int, offered: tuple[ToolSpec, ...]
    ) -> TaskTools | None:
        assert self.toolbox is not None
        await self.toolbox.confirm(task.tools)
        fresh = self.tools_for(task)
        if fresh.specs == offered:
            return None
        before = {spec.name: spec for spec in offered}
        after = {spec.name: spec for spec in fresh.specs}
        self.trace.add(
            "tools.changed",
            task_id=task.id,
            metadata={
                "step": step,
                "redone": step < task.max_steps,
                "added": sorted(after.keys() - before.keys()),
                "removed": sorted(before.keys() - after.keys()),
                "changed": sorted(
                    name for name in before.keys() & after.keys() if before[name] != after[name]
                ),
            },
        )
        return fresh

    @property
    def approver(self) -> Approver | None:
        return self.run_tools.approve

    def toolbox_connection(self, server: str) -> ToolServer:
        assert self.toolbox is not None
        return self.toolbox.connection(server)

    async def go(self) -> Run:
        run = self.run
        run.status = "running"
        self.trace.add(
            "run.started",
            metadata={
                "request": run.request,
                "chain_of_thought": run.chain_of_thought,
                "chain_of_thought_source": run.chain_of_thought_source,
                "worker_backend": run.worker_backend,
                "tasks": [
                    {"id": t.id, "name": t.name, "role": t.role, "after": t.after}
                    for t in run.tasks
                ],
            },
        )
        self.emit(
            RunStarted(run_id=run.id, seq=self.next_seq(), at=now_iso(), snapshot=run.snapshot())
        )
        notify(self.services.telemetry, lambda hook: hook.run_started(run))
        await self.persist(run=True)
        no_client = await self.acquire_clients()
        try:
            # The run's tool servers stop when its tasks end, fail or are cancelled.
            async with AsyncExitStack() as servers:
                problem = await self.start_tools(servers, start=no_client is None)
                await self.run_tasks(no_client or problem)
        finally:
            if self.uses_clients and no_client is None:
                await self.services.clients.release()
        run.status = run_status(run, self.stop_status if self.cancelled else None)
        run.finished_at = finished_at = now_iso()
        finished = run_finished(
            run.status,
            run_id=run.id,
            seq=self.next_seq(),
            at=finished_at,
            snapshot=run.snapshot(),
        )
        self.trace.add(finished.wire_name, metadata={"status": run.status})
        # The end is told once it is written: a store that failed on the way means the run
        # stopped there (what reached the store is what recovery will keep), never that it
        # completed.
        self.emit(finished, observed=False)
        await self.persist(run=True)
        await self.services.writer.flush()
        await self.write_end_again(finished)
        if self.store_failure is not None and run.status != "interrupted":
            run.status = "interrupted"
            finished = run_finished(
                run.status,
                run_id=run.id,
                seq=finished.seq,
                at=finished_at,
                snapshot=run.snapshot(),
            )
        notify(self.services.telemetry, lambda hook: hook.run_finished(run))
        if self.observer is not None:
            self.observer(finished)
        if self.store_failure is not None:
            raise StoreError(
                self.store_failure.problem,
                f"{self.store_failure.message} Run {short_run_id(run.id)} stopped there; "
                f"see what it kept with: thoughtline status {short_run_id(run.id)}",
            ) from self.store_failure
        return run

    async def write_end_again(self, finished: RunEvent) -> None:
        """After a server outage that lost held writes, write the run's end and its
        tasks' final rows once more (a run must not stay ``running`` in the store while
        its owner beats for it), each try held for the server as long as the first."""
        for _ in range(END_WRITE_TRIES):
            if not self.end_lost or self.store_failure is not None:
                return
            self.end_lost = False
            ending = self.services.store.prepare(
                events=to_records([finished]), run=self.run, tasks=list(self.run.tasks)
            )
            # Parts of it may be stored already: keep those rows.
            self.services.writer.submit(replace(ending, replayed=True), self.store_failed)
            await self.services.writer.flush()

    async def run_tasks(self, problem: TaskError | None) -> None:
        """Every task to its final status (each failed with ``problem`` when set: no
        client, or a tool server that did not start)."""
        run = self.run
        if problem is None:
            self.workers = [asyncio.ensure_future(self.task_when_ready(task)) for task in run.tasks]
        if self.cancelled:  # cancelled before the workers existed
            self.cancel()
        # Workers record their own outcome; cancellation ends them, not this coroutine.
        await asyncio.gather(*self.workers, return_exceptions=True)
        # A worker cancelled before its first step never recorded an outcome.
        for task in run.tasks:
            if task.status not in TERMINAL_TASK_STATUSES:
                if problem is not None and not self.cancelled:
                    await self.finish_task(task, status="failed", error=problem)
                else:
                    await self.finish_task(task, status=self.stop_status, error=self.stop_error)

    async def start_tools(self, servers: AsyncExitStack, *, start: bool) -> TaskError | None:
        """Take (or, with ``start``, start) the MCP servers the run's tasks may call, once
        for the run (``servers`` stops them when the run ends, fails or is cancelled),
        beside the run's Python callables; the error every task then fails with when one
        does not start (or the run names a server it was not given)."""
        started, self.started_tools = self.started_tools, None
        if started is None:
            if not self.uses_clients or not start:
                return None
            # Each task's tool names are checked when it starts: one task naming a tool
            # its server lacks does not fail the others.
            starting = self.starting = asyncio.ensure_future(
                self.services.start_tools(
                    self.run, tools=self.run_tools, check=False, listener=self.server_notice
                )
            )
            try:
                started = await starting
            except ThoughtlineError as exc:
                return TaskError(code=exc.code, message=exc.message, retryable=False)
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not self.cancelled or (current is not None and current.cancelling()):
                    raise
                return None  # the run was cancelled while its servers started
            finally:
                self.starting = None
            if started is None:
                return None
        servers.push_async_callback(started.aclose)
        self.toolbox = started.toolbox
        return None

    def server_notice(self, kind: str, metadata: dict[str, object]) -> None:
        """A tool server's notice: its start (begun, ready or failed) as a live event; a
        pooled server's start again after it ended in the run's trace, with its next
        write."""
        if kind == SERVER_START:
            event = tool_server_start(
                metadata, run_id=self.run.id, seq=self.next_seq(), at=now_iso()
            )
            self.run.server_starts = with_server_start(self.run.server_starts, event)
            self.emit(event)
            # The run's row keeps its starts (a few writes a run), so the run read back
            # from the store shows them as its live snapshot did.
            self._queue(run=True)
            return
        self.trace.add(kind, metadata=metadata)

    async def acquire_clients(self) -> TaskError | None:
        """Take the runtime's connection pool for this run's provider calls; the error
        every task then fails with when the environment's trust store or proxy cannot be
        used (the message names the variable), instead of a traceback and a run left
        running."""
        if not self.uses_clients:
            return None
        try:
            await self.services.clients.acquire()
        except ThoughtlineError as exc:
            return TaskError(code=exc.code, message=exc.message, retryable=False)
        return None

    def client_for(self, provider: str) -> ProviderClient:
        return self.services.clients.client_for(provider)

    async def task_when_ready(self, task: Task) -> None:
        try:
            for dependency in task.after:
                await self.finished[dependency].wait()
            failed = [
                self.run.task(dependency)
                for dependency in task.after
                if self.run.task(dependency).status not in ("done", "prepared")
            ]
            if failed:
                names = ", ".join(f"{dep.name} ({dep.status})" for dep in failed)
                await self.finish_task(
                    task,
                    status="failed",
                    error=TaskError(
                        code="TASK_DEPENDENCY_FAILED",
                        message=f"Not run: it runs after {names}, which did not finish.",
                        retryable=False,
                    ),
                )
                return
            async with self.semaphore:
                # Inline tasks never wait on the network: yield once per task so a large
                # run does not hold the event loop (and a daemon's other clients) for long.
                await asyncio.sleep(0)
                await TaskCall(self, task).go()
        except asyncio.CancelledError:
            if task.status not in ("done", "prepared", "failed", "cancelled", "interrupted"):
                await self.finish_task(task, status=self.stop_status, error=self.stop_error)
            raise
        except Exception as exc:  # a bug must fail one task visibly, not the whole run silently
            logger.exception("task %s failed unexpectedly", task.id)
            await self.finish_task(
                task,
                status="failed",
                error=TaskError(
                    code="INTERNAL_ERROR", message=f"{type(exc).__name__}: {exc}", retryable=False
                ),
            )
        finally:
            self.finished[task.id].set()

    async def finish_task(
        self, task: Task, *, status: TaskStatus, error: TaskError | None = None
    ) -> None:
        task.status = status
        task.error = error
        task.timings.finished_at = now_iso()
        if task.reasoning_status is None:
            stopped = status in ("cancelled", "interrupted") or (
                status == "failed" and error is not None and error is self.stop_error
            )
            if stopped and task.chain_of_thought == "hidden":
                # Nothing was asked for, so nothing was interrupted.
                task.reasoning_status = "not_requested"
                task.reasoning_notice = (
                    "Reasoning was not requested (chain_of_thought is hidden); "
                    f"the task was {status} before the model answered."
                )
            elif stopped and task.timings.started_at is None:
                task.reasoning_status = "not_applicable"
                task.reasoning_notice = (
                    f"The run was {status} before this task started, so no model was called."
                )
            else:
                task.reasoning_status = "interrupted" if stopped else "not_applicable"
                task.reasoning_notice = (
                    f"The task was {status} before the model answered."
                    if stopped
                    else "The task did not run, so no model was called."
                )
            if stopped and (reason := self.stopped_by()) is not None:
                task.reasoning_notice = f"{reason}. {task.reasoning_notice}"
        self.trace.add(
            "worker.failed" if status == "failed" else f"task.{status}",
            task_id=task.id,
            metadata={"status": status, "error": None if error is None else error.to_dict()},
        )
        self.emit_task_completed(task)
        await self.persist(task=task)

    def handoff(self, task: Task) -> str:
        """The user prompt: the request plus upstream *outputs* (never their reasoning)."""
        parts = [self.run.request]
        upstream = [self.run.task(dependency) for dependency in task.after]
        if upstream:
            parts.append("Outputs of the tasks this one follows:")
            for source in upstream:
                output = (
                    source.output if source.output is not None else "(prepared only: no output)"
                )
                parts.append(f"### {source.name} ({source.role})\n{output}")
        return "\n\n".join(parts)
