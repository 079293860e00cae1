"""The store contract: persistence only, implemented by SQLite and PostgreSQL.

Every write is durable when the call returns. The runtime does not call them one by
one: it turns each transition into a :class:`PreparedWrite` when it happens and hands
it to its :class:`~thoughtline.runtime.engine.store_writer.StoreWriter`, which writes many in
one transaction (:meth:`Store.write_prepared`). A store decides nothing: which trace rows expire when, when a purge is due,
which runs are orphaned and what their unfinished tasks keep are decided above it, by
the runtime's retention and crash recovery, so every store applies the same policy.

Errors: a store raises :class:`StoreError` when it cannot be used (damaged, full,
locked, unavailable, closed) and :class:`RunNotFoundError` when a run or task to update
does not exist; reads of a missing run return ``None``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from thoughtline.errors import ThoughtlineError
from thoughtline.records import Run, RunEventRecord, Task, TraceEvent, TraceLayer

StoreProblem: TypeAlias = Literal["damaged", "full", "locked", "unavailable", "closed"]


class StoreError(ThoughtlineError):
    """The store cannot be used as it is: its file is damaged, its disk is full, another
    process holds it locked, it cannot be read or written, or it was closed. The message
    names the file (or server) and what to do; ``problem`` says which, for code that
    reacts to it."""

    def __init__(
        self, problem: StoreProblem, message: str, *, held_then_lost: bool = False
    ) -> None:
        super().__init__("STORE_UNAVAILABLE", message, retryable=problem == "locked")
        self.problem = problem
        self.held_then_lost = held_then_lost
        """The writes were held through a server outage past its limits and given up
        (:mod:`thoughtline.runtime.engine.store_writer`): the store may be back later, so the
        run still writes how it ends."""


class RunNotFoundError(ThoughtlineError):
    """A run (or a task of one) to update is not in the store."""

    def __init__(self, message: str) -> None:
        super().__init__("RUN_NOT_FOUND", message)


@dataclass(frozen=True, slots=True)
class Vacuumed:
    """What ``VACUUM`` did to the tables purges deleted from (:meth:`Store.vacuum`):
    their size on disk (tables, TOAST and indexes) before and after."""

    tables: tuple[str, ...]
    bytes_before: int
    bytes_after: int

    @property
    def bytes_freed(self) -> int:
        """Bytes returned to the file system (plain VACUUM gives back only empty pages at
        the end of a table; the rest of the space is reused by new rows)."""
        return max(0, self.bytes_before - self.bytes_after)


@dataclass(frozen=True, slots=True)
class UnfinishedRun:
    """A run still ``planned`` or ``running``, with what its owner left behind: who it
    is (any field may be missing in rows written before owners were recorded) and when
    it last wrote. Recovery decides from this whether the owner is gone."""

    run_id: str
    owner_host: str | None
    owner_pid: int | None
    owner_start_time: int | None
    owner_boot_id: str | None
    heartbeat_at: str | None
    """When the owner last wrote anything for this run (every write refreshes it)."""
    created_at: str
    event_count: int
    """How many events the run's event log holds now (see :meth:`Store.interrupt_run`)."""
    last_event_seq: int
    """The highest event number of the run's log, ``0`` when it is empty."""


RunUpdate: TypeAlias = tuple[str, str | None, str | None, str]
"""What a write of a run changes of its row: ``(status, finished_at,
tool_server_starts_json, id)``."""


@dataclass(slots=True)
class PreparedWrite:
    """What one transition of a run writes, already turned into row parameters (each
    store's own, from :meth:`Store.prepare`). The run and task objects go on changing
    after the transition; these rows do not, so they can be written a little later, with
    other transitions, in one transaction."""

    created: list[tuple[tuple[object, ...], list[dict[str, object]]]] = field(default_factory=list)
    """New runs: each run's row and its tasks' rows."""
    events: list[tuple[object, ...]] = field(default_factory=list)
    runs: list[RunUpdate] = field(default_factory=list)
    """Runs' new status, ``finished_at`` and tool server starts (:data:`RunUpdate`)."""
    tasks: list[dict[str, object]] = field(default_factory=list)
    trace: list[tuple[object, ...]] = field(default_factory=list)
    tool_calls: list[tuple[object, ...]] = field(default_factory=list)
    """Tool calls' rows, inserted or replaced (a call is written as it starts and ends)."""
    threads: list[tuple[object, ...]] = field(default_factory=list)
    """Threads of tasks that ended (``task_threads`` rows, written once)."""
    step_costs: list[tuple[object, ...]] = field(default_factory=list)
    """Costs of the calls tasks made since their last write (``task_step_costs`` rows,
    inserted where missing)."""
    run_ids: frozenset[str] = frozenset()
    """Every run this write touches (their heartbeats are refreshed)."""
    replayed: bool = False
    """Written again after a failure that may have come after its commit (a connection
    lost while committing): rows already stored are kept, never stored twice."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFilter:
    """Which runs :meth:`Store.find_runs` lists; every field given must hold (AND).

    ``model`` and ``role`` match a run with at least one task of that model or role;
    ``since`` is a ``created_at`` timestamp in the runtime's format (runs created then
    or later); ``search`` is a case-insensitive substring of the request (case folded
    by the database: ASCII letters in SQLite, the database's locale in PostgreSQL)."""

    status: str | None = None
    model: str | None = None
    role: str | None = None
    since: str | None = None
    search: str | None = None
    client: str | None = None
    """Only the runs that answered this gateway client's calls."""


UsageKey: TypeAlias = Literal["day", "model", "role", "mode", "provider", "client"]
"""What :meth:`Store.usage` groups tasks by (``mode``: the task's disclosure mode;
``client``: the gateway client whose call the task's run answered, ``-`` for none)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageGroup:
    """Token counts summed over the tasks of one group and one model (a group's tasks
    of several models are several of these: each model is priced apart)."""

    key: str
    provider: str
    model: str
    tasks: int
    unreported: int
    """Tasks whose provider reported no usage (not counted as zero tokens)."""
    input_tokens: int
    cached_input_tokens: int
    cache_write_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cost: float
    """USD, the sum of the tasks' costs that are known."""
    unpriced: int
    """Tasks whose cost is unknown (a model without a price, usage not reported, or
    stored before calls were priced): not in ``cost``."""


@dataclass(frozen=True, slots=True)
class StoredThread:
    """A task's stored thread (:mod:`thoughtline.model.threads`), as JSON text."""

    system_digest: str
    tools_digest: str
    answer_json: str
    carriers_json: str | None
    carriers_cleared: bool
    """The reasoning retention removed the carriers it had."""
    at_epoch: float = 0.0
    """When it was written (seconds since the epoch), for retention."""


@dataclass(frozen=True, slots=True)
class ConversationTask:
    """A task of one of a conversation's runs, with what a follow-up reads of it."""

    run_id: str
    continues: str | None
    request: str
    task_id: str
    name: str
    provider: str
    model: str
    chain_of_thought: str
    output: str | None
    thread: StoredThread | None
    """Its stored thread; ``None`` when it kept none or the answer retention removed it."""


@runtime_checkable
class LeasedStore(Protocol):
    """A store whose owners hold a lease on their runs: while a process lives, its store
    refreshes the heartbeat of each unfinished run it created at least every
    ``heartbeat_interval_s``, writing or not, stamped by the clock :meth:`store_time`
    reads. Recovery can then presume a silent owner on another host dead after a few
    missed beats; a store without a lease is judged by a long silence instead."""

    heartbeat_interval_s: float

    def store_time(self) -> float:
        """The clock heartbeats are stamped by, in seconds since the epoch."""
        ...


@runtime_checkable
class OutageBuffered(Protocol):
    """A store on a server that may be unreachable for a while (a restart, a failover):
    the runtime's writer holds what it could not write, in order, up to
    ``outage_buffer_rows`` rows and ``outage_limit_s`` seconds, and writes it once the
    server answers again (see :mod:`thoughtline.runtime.engine.store_writer`)."""

    outage_buffer_rows: int
    outage_limit_s: float

    def reconnect(self) -> bool:
        """Whether the server answers again; when it does, the store's connections are
        renewed so the next write need not wait for them."""
        ...


class Store(Protocol):
    live_flush_s: float
    """How soon a run's live events should reach the event log, which is how other
    processes (and, with a shared store, other machines) follow the run: short where
    they are woken by each append, longer where they poll anyway."""
    writes_wait_on_network: bool
    """True when a write waits for a server (PostgreSQL): the runtime then writes from
    a thread, so the event loop serves streams meanwhile. False for a local file, which
    the runtime writes on its event loop (see :mod:`thoughtline.runtime.engine.store_writer`)."""

    # -- runs and tasks ----------------------------------------------------------
    def create_run(self, run: Run) -> None:
        """Insert the run and all its tasks; this process becomes the run's owner
        (:class:`~thoughtline.store.owner.ProcessIdentity`), its heartbeat now."""
        ...

    def update_run(self, run: Run) -> None:
        """Write the run's status, ``finished_at`` and tool server starts (tasks are
        written separately).
        Raises :class:`RunNotFoundError` when the run is not stored."""
        ...

    def update_task(self, task: Task) -> None:
        """Write every field of one task but its tool calls (each is written as it
        starts and ends: :meth:`write` ``tool_calls``). Raises :class:`RunNotFoundError`
        when the task is not stored."""
        ...

    def write(
        self,
        *,
        events: Sequence[RunEventRecord] = (),
        run: Run | None = None,
        tasks: Sequence[Task] = (),
        trace: Sequence[TraceEvent] = (),
        tool_calls: Sequence[tuple[Task, int]] = (),
    ) -> None:
        """In one transaction: append run events, write the run's status,
        ``finished_at`` and tool server starts, write every field of ``tasks`` (their tool calls apart), append
        trace events, write each ``(task, position)`` tool call's row — what a
        transition of a run writes, all or nothing. Raises :class:`RunNotFoundError`
        (and writes nothing) when the run or a task is not stored."""
        ...

    def prepare(
        self,
        *,
        create: Run | None = None,
        events: Sequence[RunEventRecord] = (),
        run: Run | None = None,
        tasks: Sequence[Task] = (),
        trace: Sequence[TraceEvent] = (),
        tool_calls: Sequence[tuple[Task, int]] = (),
    ) -> PreparedWrite:
        """The rows :meth:`write` would write (``create``: :meth:`create_run`'s), built
        now from the objects as they are now; nothing is written."""
        ...

    def write_prepared(self, writes: Sequence[PreparedWrite], *, wait: bool = True) -> bool:
        """Write every prepared write, in order, in one transaction: all or nothing.
        Raises :class:`RunNotFoundError` (and writes nothing) when a run or task to
        update is not stored. With ``wait=False`` a store that would first wait for
        another process's lock writes nothing and returns False (True: written)."""
        ...

    def get_run(self, run_id: str) -> Run | None:
        """The run with its tasks and their tool calls, or ``None``."""
        ...

    def latest_run(self) -> Run | None:
        """The newest run with its tasks, or ``None`` when there is none."""
        ...

    def list_runs(self, limit: int = 20) -> list[Run]:
        """Newest first, with tasks."""
        ...

    def find_runs(self, where: RunFilter, limit: int = 20) -> list[Run]:
        """The runs ``where`` selects, newest first, with tasks (at most ``limit``)."""
        ...

    def conversation_runs(self, conversation_id: str) -> list[Run]:
        """The runs of a conversation with their tasks, oldest first (empty when none)."""
        ...

    def usage(self, by: UsageKey, since: str | None = None) -> list[UsageGroup]:
        """Tokens of the tasks started at ``since`` or later (every started task when
        None), summed by ``by`` (``day``: the day the task started, UTC) and model in
        one aggregate query over an index, ordered by key."""
        ...

    def conversation_tasks(self, conversation_id: str) -> list[ConversationTask]:
        """Every task of a conversation's runs with its thread, in one query: grouped
        by run (runs in no particular order; follow them by ``continues``), each run's
        tasks in position order."""
        ...

    def task_threads(self, run_ids: Sequence[str]) -> dict[str, StoredThread]:
        """The stored threads of the tasks of ``run_ids``, by task id (a task that kept
        none, or whose thread the answer retention removed, is missing)."""
        ...

    def run_ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Ids of stored runs that start with ``prefix``, at most ``limit``, last in
        byte order first (for ids made before short ids: newest first): for people who
        type the start of an id."""
        ...

    # -- trace and run event log -------------------------------------------------
    def append_trace(self, events: Sequence[TraceEvent]) -> None:
        """Append trace events (one transaction)."""
        ...

    def trace(self, run_id: str, layer: TraceLayer | None = None) -> list[TraceEvent]:
        """Trace events of a run in the order written, optionally of one layer."""
        ...

    def append_run_events(self, events: Sequence[RunEventRecord]) -> None:
        """Append live events of runs (one transaction)."""
        ...

    def run_events(
        self,
        run_id: str,
        after_seq: int = 0,
        limit: int | None = None,
        *,
        types: Collection[str] | None = None,
    ) -> list[RunEventRecord]:
        """A run's live events with ``seq > after_seq``, in order; only those of
        ``types`` when given."""
        ...

    # -- deleting what expired ---------------------------------------------------
    def delete_trace_before(
        self, cutoffs: Mapping[TraceLayer, float], *, dry_run: bool = False
    ) -> dict[TraceLayer, int]:
        """Delete the trace events of each layer in ``cutoffs`` that happened before its
        cutoff (seconds since the epoch); layers not named are untouched. Returns how
        many of each layer of every layer were (or would be) deleted."""
        ...

    def clear_displayed_reasoning(
        self, finished_before: str, notice: str, *, dry_run: bool = False
    ) -> int:
        """Remove the displayed copies of reasoning of tasks that finished before
        ``finished_before`` (ISO timestamp): the task's reasoning and its parts, and in
        the run event log the reasoning deltas and the reasoning inside task and run
        snapshots written before then. Each cleared task's notice gets ``notice``
        appended. Returns how many tasks were (or would be) cleared."""
        ...

    def purge_residue(self) -> str | None:
        """After a deletion: ``None`` when what it removed is gone from every file of the
        store, otherwise why it is still on disk and how to finish (one sentence)."""
        ...

    def vacuum(self) -> Vacuumed | None:
        """Reclaim the space of the rows this store's deletions removed: PostgreSQL runs
        ``VACUUM`` (not ``FULL``: other processes keep reading and writing) on the tables
        they touched. ``None`` where a deletion needs no vacuum (SQLite overwrites what
        it deletes and reuses the free pages)."""
        ...

    deletion_erases: bool
    """True where a deletion can erase the bytes from every file of the store (SQLite:
    ``secure_delete`` and a checkpoint), so a residue means the purge is unfinished and
    the next one completes it; False where deleted bytes stay on disk by design
    (PostgreSQL keeps them until VACUUM), so a residue is a standing note."""

    # -- small shared values (e.g. when the last purge ran) ----------------------
    def get_meta(self, key: str) -> str | None:
        """The value stored under ``key``, or ``None``."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` under ``key``."""
        ...

    def replace_meta(self, key: str, expected: str | None, value: str) -> bool:
        """Store ``value`` under ``key`` only if it still holds ``expected`` (``None``:
        no value); True when it was stored. Of processes racing from the same value,
        exactly one succeeds."""
        ...

    # -- runs whose owner may be gone --------------------------------------------
    def unfinished_runs(self) -> list[UnfinishedRun]:
        """Every ``planned`` or ``running`` run, with its owner and heartbeat."""
        ...

    def interrupt_run(
        self,
        seen: UnfinishedRun,
        *,
        finished_at: str,
        tasks: Sequence[Task],
        event: TraceEvent,
    ) -> bool:
        """In one transaction, and only if nothing was written for the run since
        ``seen`` was read (still unfinished, same heartbeat, same event log): mark it
        ``interrupted`` at ``finished_at``, write ``tasks`` and all their tool calls,
        and append ``event``. False
        (and nothing written) when the run moved on meanwhile."""
        ...

    def close(self) -> None:
        """Release the store; any later call raises :class:`StoreError` (``closed``)."""
        ...
