"""Runs: plan the tasks, execute them (concurrently, with handoffs), record everything.

:class:`Runtime` is the façade every front end uses. ``Runtime.prepare`` resolves roles,
endpoints, models and the disclosure mode of every task and stores the run
(:mod:`~thoughtline.runtime.planning.specs`); ``Runtime.execute`` runs it
(:mod:`~thoughtline.runtime.engine.execution`, one task at a time through
:mod:`~thoughtline.runtime.engine.task_call`). Observers receive live events (``answer.delta``,
and ``reasoning.delta`` only when the task's mode displays reasoning), already filtered by
the disclosure gate, so no surface needs mode logic.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import httpx2

from thoughtline.config import Config
from thoughtline.config.pricing import Pricer
from thoughtline.errors import ThoughtlineError
from thoughtline.model.requests import GenerationSettings, ModelRequest
from thoughtline.providers.capabilities import CapabilityTable, builtin_capabilities
from thoughtline.providers.client import ProviderClient, RetryPolicy, Timeouts
from thoughtline.providers.counting import count_input_tokens, counting_wires, counts_tokens
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.providers.redaction import Redactor
from thoughtline.providers.transport import default_http_client
from thoughtline.records import Run, TaskError, TraceLayer, short_run_id
from thoughtline.records.run_events import RunEvent
from thoughtline.runtime.engine.clients import SharedClients
from thoughtline.runtime.engine.execution import RunExecution
from thoughtline.runtime.engine.run_recording import RunObserver, RunServices
from thoughtline.runtime.engine.store_writer import StoreWriter
from thoughtline.runtime.engine.telemetry_hooks import RunTelemetry
from thoughtline.runtime.planning.conversation import Continuation, load_continuation
from thoughtline.runtime.planning.plan import RunSpec, continuation_spec
from thoughtline.runtime.planning.roles import RoleCatalog
from thoughtline.runtime.planning.run_tools import RunTools
from thoughtline.runtime.planning.specs import plan_run
from thoughtline.runtime.planning.toolbox import StartedTools, Toolbox
from thoughtline.runtime.policy import recovery, retention
from thoughtline.runtime.policy.trace import retention_seconds
from thoughtline.store.base import Store
from thoughtline.tools.list_cache import ToolListCache
from thoughtline.tools.notices import Listener
from thoughtline.tools.recorded import recorded_servers, resolve_recorded
from thoughtline.tools.specs import parse_tool_spec

logger = logging.getLogger(__name__)

PURGE_CHECK_EVERY_S = 60.0
"""How often at most a runtime asks the store whether the day's purge is due, when it
starts a run (a store read per run start otherwise)."""

__all__ = ["RunEvent", "RunObserver", "Runtime"]


class Runtime:
    """Plans and executes runs against a store. One instance can run many runs."""

    def __init__(
        self,
        *,
        config: Config,
        store: Store,
        environ: Mapping[str, str] | None = None,
        roles: RoleCatalog | None = None,
        capabilities: CapabilityTable | None = None,
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        telemetry: RunTelemetry | None = None,
    ) -> None:
        self.config = config
        self.store = store
        # What tool servers are started with (their own variables are taken from it).
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.registry = EndpointRegistry(
            config.providers,
            environ=environ,
            config_source=str(config.path) if config.path else "thoughtline.toml",
        )
        folders = [Path.cwd() / "specialists"]
        if config.path is not None:
            folders.insert(0, config.path.parent / "specialists")
        self.roles = roles or RoleCatalog(folders, config.roles)
        self.capabilities = capabilities or builtin_capabilities()
        self.retry = retry
        # [providers.NAME.timeouts] win for their endpoint: ProviderClient applies them.
        self.timeouts = timeouts or Timeouts().overridden_by(config.timeouts)
        self.transport = transport
        self.redactor = Redactor(self.registry.loaded_secrets())
        self.retention = retention_seconds(config.retention)
        # Prices every model call as it ends: [prices] in config, then the price data.
        self.pricer = Pricer.from_config(config)
        # Optional telemetry hook (runtime/engine/telemetry_hooks.py), e.g. OTLP export.
        self.telemetry = telemetry
        # Optional tool list cache: with it a run's servers start while its first model
        # call goes out with their cached lists (runtime/planning/tool_starts.py).
        self.tool_lists: ToolListCache | None = None
        self._executions: dict[str, RunExecution] = {}
        self._purge_asked_at = -math.inf  # time.monotonic() of the last purge_soon check
        self._purging: asyncio.Future[dict[TraceLayer, int] | None] | None = None
        # Every run's writes, many transitions per transaction (store_writer.py).
        self.writer = StoreWriter(store)
        # One connection pool and one client per endpoint for every run (clients.py).
        self.clients = SharedClients(
            build_http=self._build_http,
            build_client=self._build_client,
            limits={
                name: settings.max_concurrency
                for name, settings in config.providers.items()
                if settings.max_concurrency is not None
            },
        )

    def _build_http(self) -> httpx2.AsyncClient:
        # Every run of the runtime shares the pool, and it does not cap connections: a
        # cap sized from one run's max_concurrency queued the 17th run of a daemon behind
        # the others. Calls are bounded per run (max_concurrency) and per endpoint
        # ([providers.NAME] max_concurrency).
        if self.transport is not None:
            return httpx2.AsyncClient(timeout=self.timeouts.for_httpx(), transport=self.transport)
        return default_http_client(self.timeouts.for_httpx())

    def _build_client(self, provider: str, http: httpx2.AsyncClient) -> ProviderClient:
        return ProviderClient(
            self.registry.resolve(provider),
            http_client=http,
            capabilities=self.capabilities,
            retry=self.retry,
            timeouts=self.timeouts,
            redactor=self.redactor,
            capture_body=self.config.trace_provider_raw,
        )

    def counts_tokens(self, provider: str) -> bool:
        """Whether ``provider``'s wire API has a token count API thoughtline asks."""
        return counts_tokens(self.registry.resolve(provider).wire_api)

    @staticmethod
    def counting_wires() -> tuple[str, ...]:
        """The wire APIs with a token count API thoughtline asks."""
        return counting_wires()

    async def count_tokens(self, provider: str, request: ModelRequest) -> int | None:
        """``provider``'s own count of the input tokens ``request`` would send, on the
        shared connections and within the endpoint's ``max_concurrency``; ``None`` when
        its wire API has no count API (nothing is estimated). No run, no cost: a count
        generates nothing. A failure raises the call's ``ProviderError``."""
        await self.clients.acquire()
        try:
            async with self.clients.calling(provider):
                return await count_input_tokens(self.clients.client_for(provider), request)
        finally:
            await self.clients.release()

    async def aclose(self) -> None:
        """Write what is queued and close the shared connection pool (runs still
        executing are not stopped)."""
        if self._purging is not None:
            await asyncio.gather(self._purging, return_exceptions=True)
        await self.writer.aclose()
        await self.clients.aclose()

    def prepare(
        self,
        spec: RunSpec,
        *,
        explicit_mode: str | None = None,
        worker_backend: str | None = None,
        tools: RunTools | None = None,
    ) -> Run:
        """Resolve and store a run (status ``planned``). Raises a clear error for an
        unknown role, provider or mode, or a missing credential, before anything runs.
        ``tools`` adds servers a trusted front end defines (pass the same to
        :meth:`execute`)."""
        run = self.plan(
            spec, explicit_mode=explicit_mode, worker_backend=worker_backend, tools=tools
        )
        self.store.create_run(run)
        return run

    async def store_async(self, run: Run) -> None:
        """Store a run :meth:`plan` returned, through the writer: for a process serving
        others, runs started together share one transaction and the event loop never
        waits for a write of its own."""
        # Never held through a server outage: a run that cannot be recorded is refused.
        await self.writer.write(self.store.prepare(create=run), hold=False)

    def plan(
        self,
        spec: RunSpec,
        *,
        explicit_mode: str | None = None,
        worker_backend: str | None = None,
        tools: RunTools | None = None,
    ) -> Run:
        """Resolve a run as :meth:`prepare` does, without storing it (``store.create_run``
        or :meth:`store_async` does, e.g. once :meth:`start_tools` checked its tools).
        A spec that ``continues`` a run reads that run's conversation here: one that
        does not exist, has not ended or keeps no history is refused."""
        continuation = spec.loaded
        if spec.continues is None:
            continuation = None
        elif continuation is None or continuation.previous.id != spec.continues:
            continuation = load_continuation(self.store, spec.continues)
        config = self.config
        if continuation is not None:
            self._check_python_given(spec, continuation, tools)
            if continuation.servers:
                # Started again from the run's records, as if configured (never offered
                # whole to every task, as a front end's own servers are).
                servers = {**continuation.servers, **config.mcp_servers}
                config = replace(config, mcp_servers=servers)
        return plan_run(
            spec,
            config=config,
            registry=self.registry,
            roles=self.roles,
            redactor=self.redactor,
            explicit_mode=explicit_mode,
            worker_backend=worker_backend,
            added_servers=None if tools is None else tools.servers,
            python_tools=None if tools is None else tools.python,
            continuation=continuation,
        )

    def continuation_spec(
        self,
        continues: str,
        request: str,
        *,
        roles: Sequence[str] = (),
        provider: str | None = None,
        model: str | None = None,
        effort: str | None = None,
        generation: GenerationSettings | None = None,
        servers: Collection[str] = (),
    ) -> RunSpec:
        """The spec of a follow-up to run ``continues`` (an id, a short id or a unique
        start of either): its tasks again, or one per role in ``roles``, with the flags given
        (:func:`~thoughtline.runtime.planning.plan.continuation_spec`); tools on servers neither
        configured nor in ``servers`` (a front end's own) are left out. Refused like
        :meth:`plan` refuses it."""
        # Refused here as planning would refuse it, before a front end builds on it;
        # planning takes what was read (spec.loaded) rather than reading it again.
        loaded = load_continuation(self.store, continues)
        known = {*self.config.mcp_servers, *servers}
        recorded = {record.name for record in loaded.previous.tool_servers}
        spec = continuation_spec(
            loaded.previous,
            request,
            roles=roles,
            provider=provider,
            model=model,
            effort=effort,
            generation=generation,
            keep_tools=lambda name: parse_tool_spec(name).server in known | recorded,
        )
        # Servers the run used that are neither configured nor given: started again
        # from its records, or refused (TOOL_SERVER_GONE) before anything is stored.
        again = recorded_servers(
            loaded.previous.tool_servers,
            {parse_tool_spec(name).server for task in spec.tasks for name in task.tools or ()},
            known=known,
            run_id=short_run_id(loaded.previous.id),
            environ=self.environ,
        )
        return replace(spec, loaded=replace(loaded, servers=again))

    def _check_python_given(
        self, spec: RunSpec, continuation: Continuation, tools: RunTools | None
    ) -> None:
        """``TOOL_SERVER_GONE`` for a follow-up whose tasks still name the Python
        callables the run it continues called, when none were passed again."""
        if tools is not None and tools.python is not None:
            return
        named = {parse_tool_spec(name).server for task in spec.tasks for name in task.tools or ()}
        for record in continuation.previous.tool_servers:
            if record.origin == "python" and record.name in named:
                resolve_recorded(
                    record, run_id=short_run_id(continuation.previous.id), environ=self.environ
                )

    def servers_to_start(self, run: Run, *, tools: RunTools | None = None) -> list[str]:
        """The MCP servers :meth:`start_tools` starts for ``run``, by name, sorted (none
        when it only prepares prompts): what a front end names while they start."""
        if run.worker_backend != "provider":
            return []
        needed = {parse_tool_spec(name).server for task in run.tasks for name in task.tools}
        python = (tools or RunTools()).python
        if python is not None:
            needed.discard(python.settings.name)
        return sorted(needed)

    def services(self) -> RunServices:
        """What one run uses of this runtime (:class:`RunExecution` gets only this)."""
        return RunServices(
            store=self.store,
            writer=self.writer,
            clients=self.clients,
            roles=self.roles,
            redactor=self.redactor,
            pricer=self.pricer,
            telemetry=self.telemetry,
            retention=self.retention,
            max_concurrency=self.config.max_concurrency,
            tool_timeout_s=self.config.tool_timeout_s,
            trace_provider_raw=self.config.trace_provider_raw,
            start_tools=self.start_tools,
        )

    async def start_tools(
        self,
        run: Run,
        *,
        tools: RunTools | None = None,
        check: bool = True,
        observer: RunObserver | None = None,
        listener: Listener | None = None,
    ) -> StartedTools | None:
        """Start the MCP servers ``run``'s tasks may call, beside the run's Python
        callables (``None`` when they call none, or the run only prepares prompts), to hand
        to :meth:`execute`. ``tools``: what the front end added to the run, as given to
        :meth:`plan`; a server is a configured one or one of ``tools.servers``
        (``TOOL_SERVER_UNKNOWN`` otherwise). Raises ``TOOL_SERVER_UNAVAILABLE`` (with the
        tail of the server's stderr) when one does not start and, with ``check``,
        ``TOOL_NOT_FOUND`` / ``TOOL_NOT_ALLOWED`` for a task naming a tool its server (or
        the run's callables) does not offer: before the run is stored, that is bad input,
        not a failed run.

        Each server's start is a ``tool_server.start`` event of the run, told to
        ``observer`` as it happens (numbered from 1: the run, once executing, goes on
        from there), or, with ``listener`` (a run executing already), to that as a
        notice."""
        if run.worker_backend != "provider" or not any(task.tools for task in run.tasks):
            return None
        given = tools or RunTools()
        python = given.python
        needed = set(self.servers_to_start(run, tools=given))
        known = {**self.config.mcp_servers, **given.servers}
        # A follow-up's servers that were started again from its records (as planned).
        known |= recorded_servers(
            run.tool_servers, needed, known=known, run_id=short_run_id(run.id), environ=self.environ
        )
        missing = sorted(needed - known.keys())
        if missing:  # planned with servers this call was not given
            raise ThoughtlineError(
                "TOOL_SERVER_UNKNOWN",
                f"The run names MCP servers it was not given: {', '.join(missing)}.",
            )
        toolbox = Toolbox(
            {name: known[name] for name in sorted(needed)},
            environ=self.environ,
            secrets=self.registry.loaded_secrets(),
            python=python,
            lists=self.tool_lists,
            pool=given.pool,
            # Only servers the process was given: one started again from a run's
            # records (an mcp.json server of a follow-up) lives as long as the run.
            pooled=self.config.mcp_servers.keys() | given.servers.keys(),
        )
        started = await StartedTools.start(
            toolbox, run_id=run.id, observer=observer, listener=listener
        )
        if check:
            try:
                started.check(
                    ((task.name, task.tools) for task in run.tasks),
                    asks=given.approve is not None,
                )
            except BaseException:
                await started.aclose()
                raise
        return started

    # -- execution ---------------------------------------------------------------
    async def run(
        self,
        spec: RunSpec,
        *,
        explicit_mode: str | None = None,
        worker_backend: str | None = None,
        observer: RunObserver | None = None,
        tools: RunTools | None = None,
    ) -> Run:
        run = self.prepare(
            spec, explicit_mode=explicit_mode, worker_backend=worker_backend, tools=tools
        )
        return await self.execute(run, observer=observer, tools=tools)

    def purge_if_due(self) -> dict[TraceLayer, int] | None:
        """Apply ``[trace.retention]`` when no process sharing this store has done so in
        the last day (so retention holds even when nobody runs ``thoughtline purge``)."""
        return retention.purge_if_due(self.store, self.retention)

    def purge_soon(self) -> None:
        """Start :meth:`purge_if_due` in a thread, at most once a minute: the day's purge
        deletes and zeroes whole layers and may wait for another process's lock, and
        this process's runs and clients go on meanwhile. :meth:`aclose` waits for it."""
        now = time.monotonic()
        if self._purging is not None or now - self._purge_asked_at < PURGE_CHECK_EVERY_S:
            return
        self._purge_asked_at = now
        self._purging = asyncio.ensure_future(asyncio.to_thread(self.purge_if_due))
        self._purging.add_done_callback(self._purged)

    def _purged(self, done: asyncio.Future[dict[TraceLayer, int] | None]) -> None:
        self._purging = None
        if done.cancelled():
            return
        if (error := done.exception()) is not None:
            # Retention must never take a run down; the next check tries again.
            logger.error("applying trace retention failed: %s", error)
        elif (removed := done.result()) is not None:
            logger.info("trace retention applied: %s", removed)

    def recover_interrupted(self) -> list[str]:
        """Mark the runs of owners that are gone ``interrupted``, keeping what their
        event logs hold (:mod:`~thoughtline.runtime.policy.recovery`); their ids. It writes, so
        a process serving others calls it in a thread."""
        return recovery.recover_interrupted(self.store)

    def interrupt_all(self) -> list[str]:
        """For a process shutting down: stop every run executing here; they end
        ``interrupted`` (not cancelled, not lost), with what arrived kept."""
        for execution in list(self._executions.values()):
            execution.cancel("interrupted")
        return list(self._executions)

    def cancel(self, run_id: str, error: TaskError | None = None) -> bool:
        """Ask a run executing in this process to stop: running tasks end ``cancelled``
        with what arrived kept (and ``error``, the reason, when given). Returns False if
        the run is not executing here."""
        execution = self._executions.get(run_id)
        if execution is None:
            return False
        execution.cancel(error=error)
        return True

    async def execute(
        self,
        run: Run,
        *,
        observer: RunObserver | None = None,
        tools: RunTools | None = None,
        started: StartedTools | None = None,
    ) -> Run:
        """Execute a prepared run to its end (or cancellation). Always returns the run
        with every task in a final state, written to the store. ``tools``: as given to
        :meth:`prepare`; ``started``: its servers, from :meth:`start_tools` (otherwise it
        starts them); the run stops them."""
        self.purge_soon()
        execution = RunExecution(self.services(), run, observer, tools, started=started)
        self._executions[run.id] = execution
        running = asyncio.ensure_future(execution.go())
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            # Our caller was cancelled (Ctrl-C): stop the run cleanly, then propagate.
            execution.cancel()
            await asyncio.gather(running, return_exceptions=True)
            raise
        finally:
            self._executions.pop(run.id, None)
