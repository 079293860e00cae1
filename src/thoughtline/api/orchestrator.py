"""The run API: start runs, watch them, cancel them, read what the store keeps.

::

    import thoughtline

    run = thoughtline.run("Design a rate limiter", roles=["architect", "reviewer"],
                          chain_of_thought="surface")
    for task in run.tasks:
        print(task.role, task.output, task.reasoning, task.reasoning_notice)

In async code, an :class:`Orchestrator` owns the config, the store and the runtime; a
:class:`RunHandle` is one run executing::

    async with thoughtline.Orchestrator.open() as orchestrator:
        handle = orchestrator.start("Design a rate limiter", roles=["architect"])
        async for event in handle:        # live events, in order
            ...
        run = await handle                # the final Run, every task in a final state

A run may continue an ended one (``continues=run.id``): it joins that run's
conversation and each task is sent the earlier turns; :class:`~thoughtline.Conversation`
(and :meth:`Orchestrator.conversation` in async code) passes the id along for you.

Everything here goes through the same runtime as the command line, so the disclosure
gate, the store and the trace behave exactly as they do for ``thoughtline run``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Generator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Unpack

from thoughtline._blocking import BlockingRunner
from thoughtline.config import Config, load_config, thoughtline_home
from thoughtline.errors import ThoughtlineError
from thoughtline.records import TRACE_LAYERS, Run, TraceEvent, TraceLayer
from thoughtline.records.raw_requests import with_request_bodies
from thoughtline.records.run_events import RunEvent
from thoughtline.runtime import (
    PurgeReport,
    RunKeywords,
    RunManager,
    RunOptions,
    RunSpec,
    Runtime,
    RunTools,
    apply_retention,
    build_spec,
    open_recovered,
    spoken_as,
)
from thoughtline.store.run_ids import LATEST, find_run, resolve_run_id

if TYPE_CHECKING:
    from thoughtline.api.chat import AsyncConversation
    from thoughtline.runtime import StartedTools
    from thoughtline.store.base import Store
    from thoughtline.telemetry import OtelTelemetry

__all__ = ["Orchestrator", "PurgeReport", "RunHandle", "RunOptions", "run"]


class RunHandle:
    """One run executing. Await it for the final :class:`~thoughtline.Run`, iterate it
    (``async for``) for its live events in order, or :meth:`cancel` it.

    Every iteration replays the events from the run's first one, so a consumer that starts
    late misses nothing. ``run`` is the live record: its tasks change as the run goes.
    :meth:`Orchestrator.start` returns one; the run executes in the orchestrator's
    :class:`~thoughtline.runtime.engine.background.RunManager`."""

    def __init__(
        self,
        manager: RunManager,
        run: Run,
        *,
        keep_events: bool = True,
        tools: RunTools | None = None,
        started: StartedTools | None = None,
    ) -> None:
        self.run = run
        self._manager = manager
        self._keep_events = keep_events
        self._events: list[RunEvent] = []
        # One future per iterator waiting for more: a waiting iterator costs the loop one
        # wake-up, where an Event waited on alongside the run's task cost two tasks'
        # worth of callbacks per event (about 40 µs an event: bench/README.md, "Paced
        # streams through the Python API").
        self._waiting: list[asyncio.Future[None]] = []
        self._cancel_requested = False
        self._cancel_delivered = False
        self._task: asyncio.Task[Run] = manager.launch(
            run, observer=self._observe, tools=tools, started=started
        ).task
        self._task.add_done_callback(lambda _: self._wake())

    @property
    def run_id(self) -> str:
        """The run's id (``run_...``), known before it starts executing."""
        return self.run.id

    def done(self) -> bool:
        """Whether the run has ended (completed, failed, cancelled or interrupted)."""
        return self._task.done()

    def cancel(self) -> bool:
        """Stop the run: queued and running tasks end ``cancelled``, what arrived is kept,
        and awaiting the handle returns the run with status ``cancelled``. Returns False
        when the run had already ended."""
        if self._task.done():
            return False
        self._cancel_requested = True
        self._deliver_cancel()
        return True

    async def wait(self) -> Run:
        """The final run (the same as ``await handle``)."""
        return await self._task

    async def _events_from(self, position: int) -> list[RunEvent]:
        """The events from ``position`` on, once there is one (none once the run has
        ended): the synchronous stream takes them in batches, one hop per batch."""
        events = self._events
        while position >= len(events) and not self._task.done():
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            await waiter
        return events[position:]

    def __await__(self) -> Generator[object, None, Run]:
        return self._task.__await__()

    async def __aiter__(self) -> AsyncIterator[RunEvent]:
        position = 0
        events = self._events
        while True:
            while position < len(events):
                yield events[position]
                position += 1
            if self._task.done():
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            await waiter  # cancelling this iterator cancels its own future only

    def _wake(self) -> None:
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            if not waiter.done():
                waiter.set_result(None)

    def _observe(self, event: RunEvent) -> None:
        # The first event is emitted once the run is registered as executing, so a cancel
        # asked for before that point is delivered here.
        if self._cancel_requested:
            self._deliver_cancel()
        if self._keep_events:
            self._events.append(event)
            if self._waiting:
                self._wake()

    def _deliver_cancel(self) -> None:
        if not self._cancel_delivered:
            self._cancel_delivered = self._manager.cancel(self.run.id)


class Orchestrator:
    """Runs specialist tasks against one config and one store.

    Build it with :meth:`open` (config file, :class:`~thoughtline.Config` or the
    environment) and close it when done; ``async with`` does both."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        telemetry: OtelTelemetry | None = None,
    ) -> None:
        self.runtime = runtime
        self._telemetry = telemetry
        self._runs = RunManager(runtime)
        self._closed = False

    @classmethod
    def open(
        cls,
        config: Config | str | os.PathLike[str] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> Orchestrator:
        """Load the config (a path, a :class:`~thoughtline.Config`, or ``None`` for
        ``THOUGHTLINE_CONFIG`` / ``./thoughtline.toml`` / ``$THOUGHTLINE_HOME/config.toml``),
        open the store it names (SQLite under ``THOUGHTLINE_HOME``, or PostgreSQL;
        ``THOUGHTLINE_STORE_URL`` overrides) and turn telemetry export on when
        configured. ``environ`` replaces ``os.environ`` for every look-up (credentials,
        base URLs, home, ``OTEL_*``)."""
        from thoughtline.providers.discovery import load_capabilities
        from thoughtline.telemetry import open_telemetry

        if isinstance(config, Config):
            loaded = config
        else:
            path = None if config is None else Path(config)
            loaded = load_config(path, environ=environ)
        home = thoughtline_home(environ)
        store = open_recovered(loaded, environ)
        try:
            runtime = Runtime(
                config=loaded,
                store=store,
                environ=environ,
                capabilities=load_capabilities(home),
            )
            telemetry = open_telemetry(loaded, redactor=runtime.redactor, environ=environ)
        except BaseException:
            store.close()
            raise
        runtime.telemetry = telemetry
        return cls(runtime, telemetry=telemetry)

    @property
    def config(self) -> Config:
        """The validated config this orchestrator runs with."""
        return self.runtime.config

    @property
    def store(self) -> Store:
        """The store runs, tasks and trace events are kept in."""
        return self.runtime.store

    # -- running -------------------------------------------------------------------
    def start(self, request: str | RunSpec, **options: Unpack[RunKeywords]) -> RunHandle:
        """Plan and store a run, then start executing it on the running event loop.

        ``request`` is the request text (one concurrent task per role in ``roles``;
        with none, one task with the config's ``[defaults] role``, else no persona and
        no system prompt; ``system`` gives every task a persona inline instead, not
        with ``roles`` or a plan's tasks) or a :class:`~thoughtline.RunSpec` (e.g. from
        :func:`~thoughtline.load_plan`), which declares its own tasks. ``chain_of_thought``
        and ``worker_backend`` win over the spec and the config, as do
        ``max_output_tokens`` (at least 1) and ``temperature`` (0 to 2), which apply to
        every task and win over plan tasks and ``[defaults]``. ``tools`` (``"SERVER"`` or
        ``"SERVER.TOOL"`` of configured MCP servers, and Python functions, sync or async,
        offered as ``python.NAME``: see :func:`~thoughtline.tool`) and ``max_steps``
        (model calls per task) apply to every task too, over its plan and role.
        ``max_cost`` (US dollars) is the run's budget, over its plan's and
        ``[orchestration] max_cost``: a model call whose worst case does not fit what is
        left fails its task ``BUDGET_EXCEEDED``.

        ``continues`` (a run id) makes this run a follow-up of that ended run: it joins
        the run's conversation, runs the run's tasks again (or one per role in
        ``roles``), each sent the earlier turns, and keeps a mode chosen for it; the
        arguments given here win. Tools on configured servers carry over, Python
        functions do not (pass them again).

        Raises a :class:`~thoughtline.ThoughtlineError` (unknown role, mode, effort,
        provider or backend; missing credential; for ``continues``, ``RUN_NOT_FOUND``,
        ``CONVERSATION_RUN_ACTIVE`` for a run not ended, ``CONVERSATION_HISTORY_GONE`` for
        one that keeps nothing to continue from) before anything runs."""
        _require_running_loop(
            "Orchestrator.start() runs on the event loop; in synchronous code use "
            "thoughtline.run()",
            running=True,
        )
        return self._start(run_options(request, options))

    def _start(self, options: RunOptions) -> RunHandle:
        run, run_tools = self._prepare(options)
        return RunHandle(self._runs, run, tools=run_tools)

    def conversation(self, continues: str | None = None) -> AsyncConversation:
        """A conversation on this orchestrator: each ``send`` starts a run that continues
        the one before (the first continues ``continues``, a run id, when given)."""
        from thoughtline.api.chat import AsyncConversation

        return AsyncConversation(self, continues)

    async def _run_to_end(
        self,
        options: RunOptions,
        *,
        on_stored: Callable[[Run], None] | None = None,
    ) -> Run:
        """Run a request to its end (the synchronous entry points' path): its tool
        servers start before it is stored, so one that does not start, or a tool it does
        not offer, raises with nothing stored. ``on_stored`` sees the run once stored."""
        handle = await self._launch(options, on_stored=on_stored)
        return await handle

    async def _launch(
        self,
        options: RunOptions,
        *,
        keep_events: bool = False,
        on_stored: Callable[[Run], None] | None = None,
    ) -> RunHandle:
        """Start a run as :meth:`_run_to_end` does and return its handle."""
        prepared, run_tools = self._prepare(options, store=False)
        runtime = self.runtime
        started = await runtime.start_tools(prepared, tools=run_tools)
        try:
            runtime.store.create_run(prepared)
        except BaseException:
            if started is not None:
                await started.aclose()
            raise
        if on_stored is not None:
            on_stored(prepared)
        return RunHandle(
            self._runs, prepared, keep_events=keep_events, tools=run_tools, started=started
        )

    def _prepare(self, options: RunOptions, *, store: bool = True) -> tuple[Run, RunTools | None]:
        with spoken_as("python"):
            built = build_spec(options, "python", runtime=self.runtime)
            python = built.python_tools
            run_tools = None if python is None else RunTools(python=python)
            mode, backend = options.chain_of_thought, options.worker_backend
            plan = self.runtime.plan if not store else self.runtime.prepare
            run = plan(built.spec, explicit_mode=mode, worker_backend=backend, tools=run_tools)
        return run, run_tools

    # -- reading -------------------------------------------------------------------
    def status(self, run_id: str | None = None) -> Run:
        """A run as the store holds it (the latest when ``run_id`` is omitted), the same
        record ``thoughtline status`` prints; ``run_id`` may be a short id, a unique
        start of an id or ``latest``. Raises ``RUN_NOT_FOUND`` (``RUN_ID_AMBIGUOUS``)."""
        found = find_run(self.store, run_id or LATEST)
        if found is None:
            raise _not_found(run_id)
        return found

    def runs(self, limit: int = 20) -> list[Run]:
        """Recent runs, newest first (``thoughtline runs``)."""
        return self.store.list_runs(limit)

    def trace(self, run_id: str, layer: TraceLayer | None = None) -> list[TraceEvent]:
        """A run's trace events in order, all layers or one (``thoughtline trace``);
        ``run_id`` as :meth:`status` takes it."""
        if layer is not None and layer not in TRACE_LAYERS:
            raise ThoughtlineError(
                "TRACE_LAYER_UNKNOWN",
                f"Unknown trace layer {layer!r}. Allowed values: {', '.join(TRACE_LAYERS)}.",
            )
        full = resolve_run_id(self.store, run_id)
        if full is None:
            raise _not_found(run_id)
        # Each request of the provider_raw layer whole (stored as what changed since the last).
        return with_request_bodies(self.store.trace(full, layer))

    def purge(self, *, dry_run: bool = False) -> PurgeReport:
        """Apply ``[trace.retention]`` per layer, also to displayed reasoning
        (``thoughtline purge``); with ``dry_run``, only count."""
        return apply_retention(self.store, self.config.retention, dry_run=dry_run)

    # -- closing -------------------------------------------------------------------
    async def aclose(self) -> None:
        """Interrupt the runs still executing (they end ``interrupted``, what arrived
        kept) and wait for them (see :meth:`RunManager.shutdown
        <thoughtline.runtime.engine.background.RunManager.shutdown>`), then flush telemetry and
        close the store. Leaving an ``async with`` block does this."""
        await self._runs.shutdown()
        self.close()

    def close(self) -> None:
        """Flush telemetry and close the store, when no run of this orchestrator is
        executing (else use :meth:`aclose`, which interrupts them first)."""
        if self._closed:
            return
        if self._runs.running():
            raise RuntimeError("runs are still executing; use: await orchestrator.aclose()")
        self._closed = True
        try:
            if self._telemetry is not None:
                self._telemetry.shutdown()
        finally:
            self.store.close()

    async def __aenter__(self) -> Orchestrator:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


def run(
    request: str | RunSpec,
    *,
    config: Config | str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    **options: Unpack[RunKeywords],
) -> Run:
    """Run a request to its end and return the final :class:`~thoughtline.Run`: the
    synchronous way, for scripts. Arguments are those of :meth:`Orchestrator.start` and
    :meth:`Orchestrator.open`. On Ctrl-C the run ends ``cancelled`` (what arrived is
    kept in the store) before ``KeyboardInterrupt`` propagates. Called where an event
    loop already runs (a Jupyter cell), it runs the run on a loop of its own, in a
    thread of its own, and blocks until the end. The run's tool servers
    start before it is stored: a tool its server does not offer (``TOOL_NOT_FOUND``,
    ``TOOL_NOT_ALLOWED``) or a server that does not start (``TOOL_SERVER_UNAVAILABLE``)
    raises with nothing stored. ``continues`` (a run id) follows up on that ended run
    (see :meth:`Orchestrator.start`); :class:`~thoughtline.Conversation` keeps track of
    the id from one request to the next."""
    given = run_options(request, options)

    async def main() -> Run:
        async with Orchestrator.open(config, environ=environ) as orchestrator:
            return await orchestrator._run_to_end(given)

    runner = BlockingRunner()
    try:
        return runner.run(main())
    finally:
        runner.close()


def _run_id(continues: object) -> str:
    """``continues`` as a run id, or one sentence saying what to pass."""
    if isinstance(continues, str) and continues:
        return continues
    if isinstance(continues, Run):
        hint = f"continues={continues.id!r} (run.id)"
    else:
        hint = "a run id such as run.id"
    raise ThoughtlineError(
        "REQUEST_INVALID", f"continues takes the id of the run to follow up on: {hint}."
    )


def run_options(request: str | RunSpec, options: RunKeywords) -> RunOptions:
    """A Python caller's request and keyword arguments as :class:`RunOptions` (a
    :class:`~thoughtline.RunSpec` is the run's plan)."""
    continues = options.get("continues")
    if continues is not None:
        options = {**options, "continues": _run_id(continues)}
    if isinstance(request, RunSpec):
        return RunOptions(plan=request, **options)
    return RunOptions(request=request, **options)


def _require_running_loop(message: str, *, running: bool) -> None:
    """Refuse, before anything is stored, a call made where it cannot work."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        if running:
            raise RuntimeError(message) from None
        return
    if not running:
        raise RuntimeError(message)


def _not_found(run_id: str | None) -> ThoughtlineError:
    if run_id in (None, LATEST):
        return ThoughtlineError("RUN_NOT_FOUND", "No runs yet in this store.")
    return ThoughtlineError("RUN_NOT_FOUND", f"No run {run_id!r} in this store.")
