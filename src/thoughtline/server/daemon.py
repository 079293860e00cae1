"""The daemon's state: one runtime and store, the runs it executes (through a
:class:`~thoughtline.runtime.engine.background.RunManager` on its loop), the live event hub,
periodic retention and graceful shutdown.

**A damaged store.** SQLite reports damage only when it reads a damaged page, and may
still append to the WAL of a file whose pages are garbage. So the first damage the store
reports (:meth:`Daemon.note_store_error`, fed by the error handlers and the daemon's own
background work) latches: from then on the daemon writes nothing (no new run, no cancel,
no retention, no recovery of other processes' runs) and says why with a 503, until it
is restarted on a sound file."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from thoughtline.errors import ThoughtlineError
from thoughtline.records import TERMINAL_RUN_STATUSES, Run, RunSnapshot, TraceEvent, TraceLayer
from thoughtline.records.raw_requests import with_request_bodies
from thoughtline.records.run_events import RunEvent, TaskReasoningDelta
from thoughtline.runtime import (
    RETRY_AFTER_S,
    ManagedRun,
    RunManager,
    RunManagerClosed,
    RunManagerFull,
    RunObserver,
    RunOptions,
    RunSpec,
    Runtime,
    RunTools,
    build_spec,
    spoken_as,
)
from thoughtline.server.announcements import Announcements
from thoughtline.server.errors import ApiError
from thoughtline.server.events import (
    DEFAULT_RETAIN_S,
    DEFAULT_SUBSCRIBER_QUEUE,
    EventHub,
    RunChannel,
)
from thoughtline.server.schemas import RunCreate
from thoughtline.server.stored_runs import StoredRunFolds
from thoughtline.store.base import Store, StoreError
from thoughtline.store.run_ids import find_conversation, resolve_run_id
from thoughtline.tools.pool import ServerPool

logger = logging.getLogger(__name__)

BODY_OVERHEAD_BYTES = 64 * 1024
"""Room in a request body for the fields besides the request text."""


def body_limit(max_request_bytes: int) -> int:
    """The largest ``POST`` body the daemon reads for a request text of up to
    ``max_request_bytes`` (``[orchestration] max_request_bytes``): JSON may escape each
    byte of UTF-8 text into up to three (``\\ud83d\\ude00`` for a 4-byte emoji), and the
    other fields need a little room. The request text itself is held to the key by the
    runtime, with the same error the command line gives."""
    return 3 * max_request_bytes + BODY_OVERHEAD_BYTES


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSettings:
    """How the daemon serves; the defaults are what ``thoughtline serve`` uses."""

    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    operator_token: str | None = None
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    """Host names answered besides localhost, loopback addresses and ``host``
    (``--allowed-host``); see :mod:`thoughtline.server.guard`."""
    max_body_bytes: int | None = None
    """Request bodies over this are refused; ``None``: :func:`body_limit` of the config's
    ``max_request_bytes``."""
    keepalive_s: float = 15.0
    """Idle SSE streams get a ``: keep-alive`` comment this often."""
    poll_s: float = 0.1
    """How often a stream of a run executing in another process polls the store."""
    subscriber_queue: int = DEFAULT_SUBSCRIBER_QUEUE
    purge_interval_s: float = 3600.0
    shutdown_timeout_s: float = 30.0
    """How long shutdown waits for interrupted runs to record their end."""
    recover_interval_s: float = 5.0
    """While tailing another process's run, how often to check its owner is alive."""


@dataclass(slots=True)
class Daemon:
    """Runs and their live events for one ``thoughtline serve`` process."""

    runtime: Runtime
    store: Store
    settings: ServerSettings = field(default_factory=ServerSettings)
    hub: EventHub = field(init=False)
    closing: asyncio.Event = field(init=False)
    runs: RunManager = field(init=False)
    announcements: Announcements = field(init=False)
    folds: StoredRunFolds = field(init=False)
    """Runs executing in other processes, folded from the store (stored_runs.py)."""
    store_damage: StoreError | None = field(init=False, default=None)
    """The damage the store reported first; once set, nothing is written to it."""
    tool_servers: ServerPool = field(init=False)
    """The configured MCP servers' sessions, kept open across runs (tools/pool.py),
    stopped on shutdown."""
    _purger: asyncio.Task[None] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        # A finished run's frames hold its displayed reasoning: never kept in memory
        # longer than the reasoning retention keeps it in the store.
        keep_reasoning = self.runtime.retention.get("reasoning")
        retain_s = (
            DEFAULT_RETAIN_S if keep_reasoning is None else min(DEFAULT_RETAIN_S, keep_reasoning)
        )
        self.hub = EventHub(self.settings.subscriber_queue, retain_s=retain_s)
        self.closing = asyncio.Event()
        self.runs = RunManager(self.runtime, max_active=self.runtime.config.max_active_runs)
        self.announcements = Announcements(self.store)
        self.folds = StoredRunFolds(self.store, max_age_s=keep_reasoning)
        self.tool_servers = ServerPool(
            environ=self.runtime.environ, secrets=self.runtime.registry.loaded_secrets()
        )

    # -- lifecycle -------------------------------------------------------------------
    async def startup(self) -> None:
        self.announcements.start()
        await self._purge()
        self._purger = asyncio.create_task(self._purge_periodically())

    async def _purge(self) -> None:
        # In a thread: a purge deletes (and zeroes) whole layers and may wait for another
        # process's write lock, and clients must be answered meanwhile.
        if self.store_damage is not None:
            return
        try:
            purged = await asyncio.to_thread(self.runtime.purge_if_due)
        except Exception as exc:  # retention must never take the daemon down
            self.note_store_error(exc)
            logger.exception("applying trace retention failed")
            return
        if purged:
            self.folds.clear()
            logger.info("trace retention applied: %s", purged)

    async def _purge_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.settings.purge_interval_s)
            await self._purge()

    def begin_shutdown(self) -> None:
        """Stop accepting work, interrupt every run executing here (they end
        ``interrupted``) and end streams that tail the store. Idempotent, synchronous."""
        if self.closing.is_set():
            return
        self.closing.set()
        interrupted = self.runs.interrupt_all()
        if interrupted:
            logger.info("interrupting %d run(s) for shutdown", len(interrupted))

    async def shutdown(self) -> None:
        """Interrupt, wait until every run recorded its end, then close the store."""
        self.begin_shutdown()
        if self._purger is not None:
            self._purger.cancel()
        await self.runs.shutdown(self.settings.shutdown_timeout_s)
        await self.tool_servers.aclose()  # no server outlives the daemon
        await asyncio.to_thread(self.announcements.stop)
        self.store.close()

    # -- a damaged store --------------------------------------------------------------
    def note_store_error(self, error: BaseException) -> None:
        """Latch the first damage the store reports (other store errors pass: a full
        disk or a lock can clear, damage does not)."""
        if self.store_damage is not None:
            return
        if isinstance(error, StoreError) and error.problem == "damaged":
            self.store_damage = error
            logger.error("the store is damaged; writing nothing more to it: %s", error.message)

    async def store_problem(self, wait_s: float) -> str | None:
        """Why the store cannot be used now (one sentence), or ``None``: damage already
        found, or a read that fails or takes longer than ``wait_s``."""
        if self.store_damage is not None:
            return self.store_damage.message
        if (outage := self.runtime.writer.outage) is not None:
            return outage.error.message
        try:
            await asyncio.wait_for(asyncio.to_thread(self.store.get_meta, "health"), wait_s)
        except TimeoutError:
            return f"The store did not answer a read within {wait_s:g} s."
        except ThoughtlineError as exc:
            return exc.message
        return None

    def refuse_writes_if_damaged(self) -> None:
        """503 ``STORE_UNAVAILABLE`` once the store was found damaged."""
        if self.store_damage is not None:
            raise ApiError(
                503,
                "STORE_UNAVAILABLE",
                "This daemon found its database damaged and writes nothing more to it; "
                "restart it on a sound file. "
                f"{self.store_damage.message}",
            )

    # -- runs ------------------------------------------------------------------------
    async def start_run(self, body: RunCreate, *, respond_async: bool = False) -> Run:
        """Prepare (raising ThoughtlineError for bad input) and start executing; with
        ``respond_async`` (the request's ``Prefer: respond-async``) the run is stored
        before its tool servers start, and starts them itself, so it can be followed
        meanwhile."""
        self.refuse_new_runs()
        # The body's fields are the run options' names (the table test holds them to it).
        given = {name: value for name, value in body.model_dump().items() if value is not None}
        options = RunOptions(**given)
        with spoken_as("http"):
            # In a thread when it continues a run: the conversation is read from the
            # store (RUN_NOT_FOUND, CONVERSATION_RUN_ACTIVE, CONVERSATION_HISTORY_GONE
            # before anything is stored).
            if options.continues is None:
                built = build_spec(options, "http")
            else:
                built = await asyncio.to_thread(build_spec, options, "http", runtime=self.runtime)
            handle = await self.launch(
                built.spec,
                explicit_mode=options.chain_of_thought,
                worker_backend=options.worker_backend,
                wait_for_tools=not respond_async,
            )
        return handle.run

    def refuse_new_runs(self) -> None:
        """503 while shutting down, on a damaged or unreachable store; 429 at
        ``max_active_runs``: before a request is read further."""
        if self.closing.is_set():
            raise ApiError(503, "DAEMON_SHUTTING_DOWN", "The daemon is shutting down.")
        self.refuse_writes_if_damaged()
        if (outage := self.runtime.writer.outage) is not None:
            # Refused at once: the run could not be recorded, and the runs in flight
            # hold their writes until the store is back (runtime/engine/store_writer.py).
            raise ApiError(
                503,
                "STORE_UNAVAILABLE",
                f"The store cannot be reached now, so no run is started; try again later. "
                f"{outage.error.message}",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        if self.runs.full:  # refused before the request is read further
            assert self.runs.max_active is not None
            raise at_capacity(RunManagerFull(self.runs.max_active))

    async def launch(
        self,
        spec: RunSpec,
        *,
        explicit_mode: str | None,
        worker_backend: str | None = None,
        observer: RunObserver | None = None,
        wait_for_tools: bool = True,
    ) -> ManagedRun:
        """Start executing ``spec`` here, its events to the hub (the page, SSE) and to
        ``observer`` (the gateway's answer); ``wait_for_tools``: as for
        :meth:`~thoughtline.runtime.engine.background.RunManager.start`."""
        observe = self.hub.observe
        if observer is not None:
            hub, own = self.hub.observe, observer

            def observe(event: RunEvent) -> None:
                # A reasoning part's edge (its carriers) is the gateway's alone: never
                # to the page or the event streams.
                if type(event) is not TaskReasoningDelta or event.edge is None:
                    hub(event)
                own(event)

        try:
            handle = await self.runs.start(
                spec,
                explicit_mode=explicit_mode,
                worker_backend=worker_backend,
                observer=observe,
                on_start=self._started,
                on_finish=self._finished,
                # A request names configured servers only (never a command): their
                # sessions stay open for the next run.
                tools=RunTools(pool=self.tool_servers),
                wait_for_tools=wait_for_tools,
            )
        except RunManagerClosed:
            raise ApiError(503, "DAEMON_SHUTTING_DOWN", "The daemon is shutting down.") from None
        except RunManagerFull as full:  # the last place went while this one was planned
            raise at_capacity(full) from None
        handle.task.add_done_callback(self._ended)
        return handle

    def _ended(self, task: asyncio.Task[Run]) -> None:
        # A run that stopped on a store error (RunManager logs it) tells about damage too.
        if not task.cancelled() and (error := task.exception()) is not None:
            self.note_store_error(error)

    def _started(self, handle: ManagedRun) -> None:
        self.hub.open(handle.run_id, handle.run.snapshot())

    def _finished(self, handle: ManagedRun) -> None:
        # Everything the run emitted is in the store once it has finished.
        self.hub.close(handle.run_id)

    def channel(self, run_id: str) -> RunChannel | None:
        return self.hub.get(run_id)

    # Store reads run in a thread: a PostgreSQL query waits on the network, a run's whole
    # event log or trace can be large, and the event loop serves every live stream.

    async def full_id(self, run_id: str) -> str:
        """The id of the run ``run_id`` names: a full id, a short id, a unique start
        of either (``RUN_ID_AMBIGUOUS`` when several runs match) or ``latest``;
        unchanged when no run matches, for the caller's own 404."""
        # A run executing here or lately finished, or a whole id: no store read here.
        if (
            self.hub.get(run_id) is not None
            or self.hub.retained.get(run_id) is not None
            or len(run_id) >= WHOLE_RUN_ID_LENGTH
        ):
            return run_id
        found = await asyncio.to_thread(resolve_run_id, self.store, run_id)
        return run_id if found is None else found

    async def snapshot(self, run_id: str) -> RunSnapshot:
        """The live (folded) snapshot for runs executing here, the stored one otherwise."""
        channel = self.hub.get(run_id)
        if channel is not None:
            return channel.folder.snapshot()
        snapshot = await asyncio.to_thread(self._stored_snapshot_of, run_id)
        if snapshot is None:
            raise run_not_found(run_id)
        return snapshot

    def _stored_snapshot_of(self, run_id: str) -> RunSnapshot | None:
        run = self.store.get_run(run_id)
        return None if run is None else self._stored_snapshot(run)

    def _stored_snapshot(self, run: Run) -> RunSnapshot:
        """A stored run; one still executing in another process is folded with its
        event log, so partial outputs show there too."""
        return self.folds.snapshot(run)[0]

    async def list_runs(self, limit: int) -> list[RunSnapshot]:
        return await self._snapshots(await asyncio.to_thread(self.store.list_runs, limit))

    async def conversation(self, key: str, limit: int | None = None) -> list[RunSnapshot]:
        """The runs of the conversation ``key`` names (its id, or any form of the id of
        one of its runs: :func:`~thoughtline.store.run_ids.find_conversation`), oldest
        first; with ``limit``, its latest ``limit`` runs."""
        stored = await asyncio.to_thread(find_conversation, self.store, key)
        if stored is None:
            shown = key if len(key) <= 80 else f"{key[:80]}..."
            raise ApiError(
                404,
                "CONVERSATION_NOT_FOUND",
                f"No conversation or run {shown!r} in this daemon's store.",
            )
        return await self._snapshots(stored if limit is None else stored[-limit:])

    async def _snapshots(self, stored: list[Run]) -> list[RunSnapshot]:
        live = {run.id: channel for run in stored if (channel := self.hub.get(run.id))}
        # Runs executing here are shown live; the others, folded in the thread.
        others = await asyncio.to_thread(
            lambda: {run.id: self._stored_snapshot(run) for run in stored if run.id not in live}
        )
        return [
            live[run.id].folder.snapshot() if run.id in live else others[run.id] for run in stored
        ]

    async def cancel(self, run_id: str) -> None:
        self.refuse_writes_if_damaged()
        channel = self.hub.get(run_id)
        if channel is not None:
            if channel.finished:
                raise run_finished(run_id, channel.folder.status())
            for _ in range(100):  # the run's task may not have reached the runtime yet
                if self.runs.cancel(run_id):
                    return
                await asyncio.sleep(0)
            if self.hub.get(run_id) is None:
                raise run_finished(run_id, (await self.snapshot(run_id))["status"])
            raise ApiError(409, "RUN_NOT_CANCELLABLE", f"Run {run_id} cannot be cancelled now.")
        run = await asyncio.to_thread(self.store.get_run, run_id)
        if run is None:
            raise run_not_found(run_id)
        if run.status in TERMINAL_RUN_STATUSES:
            raise run_finished(run_id, run.status)
        raise ApiError(
            409,
            "RUN_IN_OTHER_PROCESS",
            f"Run {run_id} is executing in another thoughtline process, not in this daemon; "
            "cancel it there (Ctrl-C in its terminal).",
        )

    async def trace(self, run_id: str, layer: TraceLayer | None) -> list[TraceEvent]:
        known = self.hub.get(run_id) is not None

        def read() -> list[TraceEvent] | None:
            if not known and self.store.get_run(run_id) is None:
                return None
            # The provider_raw layer stores a request as what changed since the last:
            # rebuilt whole here, in the thread.
            return with_request_bodies(self.store.trace(run_id, layer))

        events = await asyncio.to_thread(read)
        if events is None:
            raise run_not_found(run_id)
        return events

    async def exists(self, run_id: str) -> bool:
        # A run executing here, or one that finished lately (subscribers arriving just
        # after the end, many at once): known without a thread hop and a store read.
        if self.hub.get(run_id) is not None or self.hub.retained.get(run_id) is not None:
            return True
        return await asyncio.to_thread(self.store.get_run, run_id) is not None


WHOLE_RUN_ID_LENGTH = 32  # run_ + 28 characters, in both forms of run ids
"""Ids this long are whole: looked up as they are, never as the start of another."""


def run_not_found(run_id: str) -> ApiError:
    shown = run_id if len(run_id) <= 80 else f"{run_id[:80]}..."  # the path can be long
    return ApiError(404, "RUN_NOT_FOUND", f"No run {shown!r} in this daemon's store.")


def at_capacity(full: RunManagerFull) -> ApiError:
    """429 ``SERVER_AT_CAPACITY`` with ``Retry-After``: a load balancer or client sends the
    run again later, or to another daemon."""
    return ApiError(429, full.code, full.message, headers={"Retry-After": str(full.retry_after_s)})


def run_finished(run_id: str, status: str) -> ApiError:
    return ApiError(409, "RUN_FINISHED", f"Run {run_id} already finished ({status}).")
