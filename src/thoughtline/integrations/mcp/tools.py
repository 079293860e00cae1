"""The two tools (``orchestration_run``, ``orchestration_status``), the runs they start
on this process's event loop, and their results as text and structured content."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any, Final

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from thoughtline.config.pricing import format_amount
from thoughtline.errors import ThoughtlineError
from thoughtline.integrations.mcp.progress import ProgressTracker
from thoughtline.integrations.mcp.schema import EffortArgument, ModeArgument, option_argument
from thoughtline.records import TERMINAL_RUN_STATUSES, Cost, Run, short_run_id
from thoughtline.records.run_events import RunEvent
from thoughtline.runtime import (
    ManagedRun,
    RunManager,
    RunOptions,
    RunSpec,
    Runtime,
    build_spec,
    spoken_as,
)
from thoughtline.store.base import Store
from thoughtline.store.run_ids import LATEST, find_run

logger = logging.getLogger(__name__)

DEFAULT_STATUS_LIMIT: Final = 10
MAX_STATUS_LIMIT: Final = 100


class ThoughtlineMCP:
    """One Runtime and store shared by every tool call of this server process."""

    def __init__(self, runtime: Runtime, store: Store) -> None:
        self.runtime = runtime
        self.store = store
        self.runs = RunManager(runtime, max_active=runtime.config.max_active_runs)

    # -- tools ----------------------------------------------------------------------
    async def orchestration_run(
        self,
        ctx: Context,
        request: Annotated[str, Field(min_length=1, description="What the specialists should do.")],
        roles: Annotated[Any, option_argument("roles")] = None,
        system: Annotated[Any, option_argument("system")] = None,
        provider: Annotated[Any, option_argument("provider")] = None,
        model: Annotated[Any, option_argument("model")] = None,
        chain_of_thought: ModeArgument = None,
        effort: EffortArgument = None,
        max_output_tokens: Annotated[Any, option_argument("max_output_tokens")] = None,
        temperature: Annotated[Any, option_argument("temperature")] = None,
        tools: Annotated[Any, option_argument("tools")] = None,
        max_steps: Annotated[Any, option_argument("max_steps")] = None,
        max_cost: Annotated[Any, option_argument("max_cost")] = None,
        wait: Annotated[
            bool,
            Field(
                description="true: return the final snapshot; false: return at once and "
                "poll orchestration_status."
            ),
        ] = True,
        timeout_s: Annotated[
            float | None,
            Field(
                gt=0,
                description="With wait, return the current snapshot (status running) after "
                "this many seconds; the run goes on.",
            ),
        ] = None,
        continues: Annotated[
            str | None,
            Field(
                min_length=1,
                description="The ended run to follow up on (its id, short id, a unique "
                "start of either, or latest): this run joins its conversation, runs its tasks again (roles, provider, model and effort "
                "given here win) and sends each the earlier requests and answers.",
            ),
        ] = None,
    ) -> CallToolResult:
        """Run a request through thoughtline specialists and return the run snapshot."""
        listening: list[asyncio.Queue[RunEvent | None]] = []

        def listen(handle: ManagedRun) -> None:  # before the run's first event
            listening.append(handle.subscribe())

        try:
            options = RunOptions(
                request=request,
                roles=() if roles is None else roles,
                system=system,
                provider=provider,
                model=model,
                chain_of_thought=chain_of_thought,  # type: ignore[arg-type]  # checked
                effort=effort,  # type: ignore[arg-type]  # checked by build_spec
                max_output_tokens=max_output_tokens,
                temperature=temperature,
                tools=tools,
                max_steps=max_steps,
                max_cost=max_cost,
                continues=continues,
            )
            with spoken_as("mcp"):
                spec = self.build_spec(options)
                # The run outlives this tool call (wait=false, a timeout): it belongs to
                # the manager, and this call only listens to it.
                handle = await self.runs.start(
                    spec, explicit_mode=options.chain_of_thought, on_start=listen if wait else None
                )
        except ThoughtlineError as exc:
            return tool_error(exc)
        run = handle.run
        if not wait:
            return run_result(run, waiting=False)
        queue = listening[0]
        try:
            await self.follow(ctx, run, queue, timeout_s)
        except asyncio.CancelledError:
            # The client cancelled this request: it no longer wants the run either.
            self.runs.cancel(run.id)
            raise
        finally:
            handle.unsubscribe(queue)
        return run_result(run, waiting=True)

    async def orchestration_status(
        self,
        run_id: Annotated[
            str | None,
            Field(
                description="A run id, its short id, a unique start of either, or "
                "latest (the latest run also when omitted)."
            ),
        ] = None,
        limit: Annotated[
            int,
            Field(
                ge=0,
                le=MAX_STATUS_LIMIT,
                description="How many recent runs to list in `runs` (0 for none).",
            ),
        ] = DEFAULT_STATUS_LIMIT,
    ) -> CallToolResult:
        """Snapshot of a run (the latest when run_id is omitted) and the most recent runs."""
        # Store reads in a thread: runs executing here stream on this loop meanwhile.
        try:
            found, stored = await asyncio.to_thread(self._read_status, run_id, limit)
        except ThoughtlineError as exc:  # RUN_ID_AMBIGUOUS
            return tool_error(exc)
        run = None if found is None else self.live(found)
        if run is None:
            if run_id in (None, LATEST):
                error = ThoughtlineError(
                    "RUN_NOT_FOUND", "No runs yet. Start one with the orchestration_run tool."
                )
            else:
                error = ThoughtlineError("RUN_NOT_FOUND", f"No run {run_id!r} in this store.")
            return tool_error(error)
        runs = [self.live(item) for item in stored]
        structured = {"run": run.snapshot(), "runs": [item.summary() for item in runs]}
        text = summarize(run)
        if runs:
            text += "\n\nRecent runs:\n" + "\n".join(
                f"- {short_run_id(item.id)} {item.status} ({item.created_at})" for item in runs
            )
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=structured
        )

    # -- runs -----------------------------------------------------------------------
    def build_spec(self, options: RunOptions) -> RunSpec:
        """The follow-up's spec, refused before anything is stored. The runtime's hints
        name CLI commands; these name this server's tools instead."""
        try:
            return build_spec(options, "mcp", runtime=self.runtime).spec
        except ThoughtlineError as exc:
            continues = options.continues
            if continues is None:
                raise
            if exc.code == "RUN_NOT_FOUND":
                raise ThoughtlineError(
                    exc.code,
                    f"No run {continues!r} to continue; orchestration_status lists the "
                    "recent runs.",
                ) from exc
            if exc.code == "CONVERSATION_RUN_ACTIVE":
                raise ThoughtlineError(
                    exc.code,
                    f"Run {continues} has not ended; continue it once orchestration_status "
                    "shows it in a final status.",
                ) from exc
            raise

    async def follow(
        self,
        ctx: Context,
        run: Run,
        queue: asyncio.Queue[RunEvent | None],
        timeout_s: float | None,
    ) -> None:
        """Wait for the run's end (or the timeout), reporting progress on the way: task
        starts and completions, the run's end, and streamed characters per task
        (:class:`~thoughtline.integrations.mcp.progress.ProgressTracker`).
        ``report_progress`` does nothing when the client sent no progress token."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        tracker = ProgressTracker(len(run.tasks))
        while True:
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return
            try:
                event = await asyncio.wait_for(queue.get(), remaining)
            except TimeoutError:
                return
            if event is None:
                return
            notice = tracker.update(event)
            if notice is not None:
                await ctx.report_progress(notice[0], tracker.total, notice[1])

    def _read_status(self, run_id: str | None, limit: int) -> tuple[Run | None, list[Run]]:
        """The run asked for (the latest when None) and the ``limit`` most recent runs,
        as stored."""
        run = find_run(self.store, LATEST if run_id is None else run_id)
        return run, self.store.list_runs(limit) if limit else []

    def live(self, run: Run) -> Run:
        """The in-memory run when it is executing here (fresher than the stored row)."""
        handle = self.runs.get(run.id)
        return run if handle is None else handle.run

    async def shutdown(self) -> None:
        """End every run still executing here as ``interrupted`` (what arrived is kept)."""
        await self.runs.shutdown()


def tool_error(error: ThoughtlineError) -> CallToolResult:
    """A tool error (``isError``) whose text starts with the stable code."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"{error.code}: {error.message}")],
        is_error=True,
    )


def run_result(run: Run, *, waiting: bool) -> CallToolResult:
    text = summarize(run)
    if run.status not in TERMINAL_RUN_STATUSES:
        how = "The wait timed out; the" if waiting else "The"
        text += (
            f"\n{how} run goes on: call orchestration_status with "
            f"run_id={short_run_id(run.id)} "
            "until its status is final."
        )
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=run.snapshot()
    )


def summarize(run: Run) -> str:
    """A short text for the model: each task's status, reasoning notice and answer.

    Reasoning text stays in the structured snapshot (present only when displayed)."""
    count = len(run.tasks)
    lines = [
        f"Run {short_run_id(run.id)}: {run.status} (chain_of_thought {run.chain_of_thought} from "
        f"{run.chain_of_thought_source}; {count} task{'s' if count != 1 else ''})."
    ]
    if run.continues is not None:
        lines.append(
            f"It continues run {short_run_id(run.continues)} (conversation {run.conversation_id})."
        )
    for task in run.tasks:
        where = task.executor or f"{task.provider}:{task.model}"
        lines.append(f"- {task.name} [{task.status}] {where}")
        if task.reasoning_status is not None:
            notice = f" - {task.reasoning_notice}" if task.reasoning_notice else ""
            lines.append(f"  reasoning: {task.reasoning_status}{notice}")
        if task.error is not None:
            lines.append(f"  error: {task.error.code}: {task.error.message}")
        if task.executor.startswith("provider:"):
            lines.append(f"  cost: {cost_text(task.cost)}")
        if task.output:
            lines.append(f"  answer: {task.output}")
    lines.append(f"Cost: {cost_text(run.cost)}.")
    return "\n".join(lines)


def cost_text(cost: Cost) -> str:
    """``$0.0198 (genai-prices 0.2.3)``, ``unknown: WHY``, or ``$0.0031 + step 2
    unknown: WHY`` when some of its calls' costs are known."""
    if cost.amount is None:
        if cost.known_amount is None:
            return f"unknown: {cost.unknown_reason}"
        part = cost.unknown_part or "the rest"
        return f"{format_amount(cost.known_amount)} + {part} unknown: {cost.unknown_reason}"
    if cost.amount == 0 and not cost.source:  # no call priced: none made, or none billed
        return "$0 (nothing billed)"
    source = f" ({cost.source})" if cost.source else ""
    return f"{format_amount(cost.amount)}{source}"
