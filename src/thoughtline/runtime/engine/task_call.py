"""One task through its worker backend, with the disclosure gate applied to everything.

A task with the provider backend is a loop around one :meth:`TaskCall.step`: each step is
one model call, streamed through the task's
:class:`~thoughtline.runtime.policy.disclosure.DisclosureGate` (a fresh live stream per call,
the mode decided once per task). Live deltas reach the run's observers only as the gate
lets them through, and the task, the trace layers and telemetry receive only the gate's
cleaned copy of each response. The loop ends when a step's answer needs no further call,
or after ``max_steps`` calls; the task is then completed once, from all of its steps
(:mod:`~thoughtline.runtime.engine.steps`, :mod:`~thoughtline.runtime.engine.task_outcome`).

A task that may call tools offers them on every call. When a step's response calls
tools, they run (:mod:`~thoughtline.runtime.engine.tool_calls`) and the next step's history is
the previous one plus the step's response as the gate handed it on (answer and arguments
cleaned, reasoning carriers byte for byte, held in memory for the loop only, sent back
only to the provider and model that made them) and a user turn with the results:
append-only, so every earlier message is sent with the same bytes. A step that still
calls tools when ``max_steps`` calls were made fails the task (``MAX_STEPS_REACHED``),
keeping what arrived. The inline backend prepares the prompts, records them and calls
nothing.

Under a budget (the task's ``max_cost``, its run's) each call is fitted to what is left,
its output capped when its worst case does not fit, and every call's real cost is counted
as it ends (:mod:`~thoughtline.runtime.engine.task_budget`); a call with no room for the
fewest output tokens fails the task (``BUDGET_EXCEEDED``), keeping what arrived.

A task reaches its run only through a :class:`~thoughtline.runtime.engine.task_sink.TaskSink`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from thoughtline.errors import ThoughtlineError
from thoughtline.model import threads
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.model.threads import TaskThread
from thoughtline.records import Cost, Task, TaskError, now_iso
from thoughtline.runtime.engine import task_outcome
from thoughtline.runtime.engine.clients import CallOverlap
from thoughtline.runtime.engine.live_call import LiveCall
from thoughtline.runtime.engine.raw_exchange import RawRequests, provider_raw
from thoughtline.runtime.engine.steps import Step, Steps
from thoughtline.runtime.engine.task_budget import TaskBudget
from thoughtline.runtime.engine.task_sink import TaskSink
from thoughtline.runtime.engine.task_thread import Prepared, task_thread
from thoughtline.runtime.engine.tool_calls import ToolCalls
from thoughtline.runtime.planning import conversation
from thoughtline.runtime.policy.disclosure import DisclosureGate
from thoughtline.runtime.policy.status import inline_verdict

CANCELLED_UNREPORTED: Final = (
    "cancelled before the provider reported its usage (what it generated may be billed)"
)
"""Why a call stopped mid-way costs unknown: the provider counts what it generated."""

DEFAULT_MAX_STEPS: Final = 8
"""How many model calls one task may make (unless its plan, role or config says)."""


class TaskCall:
    """One task through its worker backend, with the gate applied to everything."""

    def __init__(self, sink: TaskSink, task: Task, *, max_steps: int | None = None) -> None:
        self.sink = sink
        self.task = task
        self.max_steps = task.max_steps if max_steps is None else max_steps
        self.gate = DisclosureGate(task.chain_of_thought, sink.redactor)
        self.tools: tuple[ToolSpec, ...] = ()
        self.tool_calls: ToolCalls | None = None
        self.stopped = False  # cancelled while its tools were running
        self.limit_reached = False
        self.prepared: Prepared | None = None
        self.budget = TaskBudget(sink, task)
        self.budget_error: TaskError | None = None
        self.failure: TaskError | None = None
        """Why the task failed between its steps (a tool server that did not start)."""
        self.raw_requests = RawRequests()
        """The last request written to the provider_raw layer (the next is a delta)."""

    def prepare(self) -> Prepared:
        """The task's role and prompt, as its first step will send them."""
        task = self.task
        if (turns := task.client_turns) is not None:
            # A gateway client's own conversation: sent as it is, its system prompt
            # (none: the role's, which is no prompt for a task with no persona).
            history = list(turns.messages)
            system = turns.system if turns.system is not None else ""
            return Prepared(system=system, prompt=turns.prompt, history=history, own=list(history))
        system = task.system if task.system is not None else self.sink.roles.get(task.role).prompt
        prompt = self.sink.handoff(task)
        asked = Message(role="user", content=prompt)
        return Prepared(system=system, prompt=prompt, history=[asked], own=[asked])

    def with_earlier_turns(self, prepared: Prepared) -> None:
        """Put the conversation's earlier turns before the prompt, by the rules of the
        provider called (:func:`~thoughtline.runtime.planning.conversation.assemble`); raises
        ``CONTEXT_WINDOW_EXCEEDED`` when the turn alone does not fit the model."""
        task = self.task
        client = self.sink.client_for(task.provider)
        capability = client.capabilities.lookup(client.endpoint.capability_key, task.model)
        fixed = sum(
            len(text.encode("utf-8", "surrogatepass"))
            for text in (prepared.system, prepared.prompt, threads.encode_tools(self.tools))
        )
        if not task.earlier:
            conversation.check_fits(
                fixed_bytes=fixed,
                capability=capability,
                max_output_tokens=task.generation.max_output_tokens,
                model=task.model,
            )
            return
        assembled = conversation.assemble(
            task.earlier,
            prepared.own[0],
            endpoint=client.endpoint,
            capability=capability,
            model=task.model,
            system_digest=threads.digest(prepared.system),
            tools_digest=threads.tools_digest(self.tools),
            requests_reasoning=self.gate.requests_reasoning,
            fixed_bytes=fixed,
            max_output_tokens=task.generation.max_output_tokens,
        )
        prepared.history = assembled.messages
        task.history = assembled.history

    def thread(self, prepared: Prepared, steps: Steps) -> TaskThread:
        """What this task adds to its conversation (:func:`task_thread`)."""
        return task_thread(
            prepared, steps, requests_reasoning=self.gate.requests_reasoning, tools=self.tools
        )

    async def go(self) -> None:
        """Run the task to its final status: prepared (inline), or its steps, then
        complete it once. A cancelled step completes the task, then re-raises."""
        task = self.task
        task.status = "running"
        task.timings.started_at = now_iso()
        prepared = self.prepare()
        if self.sink.worker_backend == "inline":
            await self.prepare_only(prepared)
            return
        task.executor = f"provider:{task.provider}:{task.model}"
        if task.client_turns is not None:
            # Offered, never run here: the task ends on the model's tool calls, which go
            # back to the client (next_turn finds no tool calls to run).
            self.tools = task.client_turns.tools
        if task.tools:
            try:
                offered = self.sink.tools_for(task)
            except ThoughtlineError as exc:
                error = TaskError(code=exc.code, message=exc.message, retryable=False)
                await self.sink.finish_task(task, status="failed", error=error)
                return
            self.tools = offered.specs
            self.tool_calls = ToolCalls(
                self.sink, task, offered, timeout_s=self.sink.tool_timeout_s
            )
        try:
            self.with_earlier_turns(prepared)
        except ThoughtlineError as exc:
            error = TaskError(code=exc.code, message=exc.message, retryable=False)
            await self.sink.finish_task(task, status="failed", error=error)
            return
        self.prepared = prepared
        refused = self.budget.priced()
        await self.started()
        if refused is not None:  # before any call is made
            await self.sink.finish_task(task, status="failed", error=refused)
            return
        steps = Steps()
        while True:
            request = self.request(prepared)
            fitted = self.budget.reserve(request, calls=len(steps))
            if isinstance(fitted, TaskError):
                refused = fitted
                if not steps:
                    await self.sink.finish_task(task, status="failed", error=refused)
                    return
                self.budget_error = refused
                break
            held, self.budget.held = self.budget.held, 0.0
            try:
                step = await self.step(prepared, number=len(steps) + 1, request=fitted)
            except BaseException:
                self.sink.budget.release(held)
                raise
            steps.append(step)
            task.steps = len(steps) if task.tool_calls is not None else None
            # Priced once, as the call ends: a run stopped later keeps what was spent.
            # A call the provider refused, or never got, costs nothing (not "unknown").
            cost = (
                self.sink.pricer.price(task.provider, task.model, step.usage())
                if step.billed
                else Cost()
            )
            if step.cancelled and cost.amount is None and cost.source is not None:
                cost = Cost.unknown(CANCELLED_UNREPORTED, source=cost.source)
            task.step_costs.append(cost)
            self.budget.settle(held, cost)
            if step.cancelled:
                break
            if self.tool_calls is not None and step.response.tool_calls:
                # More may follow (its tools, another step): its cost so far, told now.
                self.sink.emit_step_priced(task, step.number)
            self.budget_error = self.budget.overspent(calls=len(steps))
            if self.budget_error is not None:
                break
            try:
                if await self.tools_changed(step) and len(steps) < self.max_steps:
                    continue  # the step is redone with the live list
            except asyncio.CancelledError:
                self.stopped = True
                break
            if self.failure is not None:
                break
            try:
                turn = await self.next_turn(step, last=len(steps) >= self.max_steps)
            except asyncio.CancelledError:
                self.stopped = True
                break
            if turn is None:
                break
            prepared.history.extend(turn)
            prepared.own.extend(turn)
            # Written once per step: a run killed later keeps the calls that completed.
            await self.sink.persist(task=task)
        await self.complete(steps)
        if steps.last.cancelled or self.stopped:
            raise asyncio.CancelledError

    async def tools_changed(self, step: Step) -> bool:
        """Before the task acts on ``step``, made while the servers it offered tools of
        were still starting (with their cached lists): wait for them. True when the
        tools the task is offered changed (the step is redone with them, unless it was
        the last ``max_steps`` allows: the trace says so); a server that did not start
        sets :attr:`failure`."""
        offered = self.tool_calls
        task = self.task
        if offered is None or step.response.error is not None:
            return False
        if not self.sink.tools_pending(task):
            return False
        try:
            fresh = await self.sink.confirm_tools(task, step=step.number, offered=self.tools)
        except ThoughtlineError as exc:
            self.failure = TaskError(code=exc.code, message=exc.message, retryable=False)
            return False
        if fresh is None:
            return False
        self.tools = fresh.specs
        self.tool_calls = ToolCalls(self.sink, task, fresh, timeout_s=self.sink.tool_timeout_s)
        return True

    def step_cost(self, step: Step) -> Cost | None:
        """What ``step`` cost, as priced when it ended."""
        costs = self.task.step_costs
        return costs[step.number - 1] if step.number <= len(costs) else None

    async def next_turn(self, step: Step, *, last: bool) -> list[Message] | None:
        """What the next step appends to the history, or ``None`` when this step's
        answer ends the task: it called no tools, failed, or was the ``last`` allowed
        (then :attr:`limit_reached`). Otherwise its tool calls run first."""
        response = step.response
        if self.tool_calls is None or not response.tool_calls or response.error is not None:
            return None
        if last:
            self.limit_reached = True
            return None
        results = await self.tool_calls.run(step.number, response.tool_calls)
        # The gate's parts: answer and arguments cleaned, carriers byte for byte (held in
        # memory for the loop only), going back only to the provider and model that made
        # them (each wire's history checks their origin).
        return [response.to_message(), Message(role="user", parts=results)]

    async def prepare_only(self, prepared: Prepared) -> None:
        """The inline backend: record the prompts, call nothing."""
        task = self.task
        task.executor = "inline:prepared"
        await self.started()
        self.sink.add_trace(
            "worker.prepared",
            task_id=task.id,
            metadata={"system": prepared.system, "prompt": prepared.prompt, "model": task.model},
        )
        verdict = inline_verdict()
        task.reasoning_status, task.reasoning_notice = verdict.status, verdict.notice
        await self.sink.finish_task(task, status="prepared")

    def request(self, prepared: Prepared) -> ModelRequest:
        """The request of the next step: the whole history so far, and the tools."""
        task = self.task
        generation = task.generation
        return ModelRequest(
            model=task.model,
            system=prepared.system,
            messages=tuple(prepared.history),
            reasoning=ReasoningRequest(
                enabled=self.gate.requests_reasoning,
                effort=task.effort,
            ),
            max_output_tokens=generation.max_output_tokens,
            temperature=generation.temperature,
            tools=self.tools,
            tool_choice=None if task.client_turns is None else task.client_turns.tool_choice,
        )

    async def step(
        self, prepared: Prepared, *, number: int, request: ModelRequest | None = None
    ) -> Step:
        """One model call through the gate: its live deltas shown as the gate releases
        them, its response cleaned, its reasoning and raw exchange traced as the mode
        says. Cancellation ends the call and is returned as a cancelled step."""
        task = self.task
        sink = self.sink
        client = sink.client_for(task.provider)
        call = client.call(self.request(prepared) if request is None else request)
        generation = task.generation
        sink.add_trace(
            "worker.requested",
            task_id=task.id,
            metadata={
                "endpoint": task.provider,
                "wire_api": client.endpoint.wire_api,
                "base_url": client.redactor.url(client.endpoint.base_url),
                "model": task.model,
                "reasoning_requested": self.gate.requests_reasoning,
                "effort": task.effort,
                "max_output_tokens": generation.max_output_tokens,
                "output_cap": call.request.output_cap,
                "temperature": generation.temperature,
                "capability": call.context.capability.describe(),
            },
        )
        # A gateway task's client gets each shown reasoning part's carriers live.
        live = LiveCall(sink, task.id, self.gate.stream(), edges=task.client_turns is not None)
        cancelled = False
        overlap = CallOverlap()
        # Timed here too: a cancelled call never builds its exchange (and its timings).
        live.started = time.perf_counter()
        started_ns = time.time_ns()
        try:
            # Waits here while the endpoint's max_concurrency calls are running.
            async with sink.calling(task.provider) as overlap:
                live.started = time.perf_counter()
                started_ns = time.time_ns()
                async with call:
                    async for batch in call.batches():
                        live.show(batch)
        except asyncio.CancelledError:
            cancelled = True
        ended_ns = time.time_ns()
        live.finish()
        # From here on only the gate's cleaned copy of the response is read.
        captured = self.gate.capture(call.response)
        exchange = call.exchange
        if captured.for_trace:  # recording mode and something arrived
            sink.add_trace(
                "worker.reasoning",
                layer="reasoning",
                task_id=task.id,
                metadata={"reasoning": captured.trace_text, "parts": captured.for_trace},
            )
        if exchange is not None and sink.records_provider_raw:
            event_id = sink.add_trace(
                "provider.exchange",
                layer="provider_raw",
                task_id=task.id,
                metadata=provider_raw(
                    self.gate,
                    client.endpoint,
                    exchange,
                    captured.response,
                    captured.echoed_credential,
                    echoes=len(prepared.history) > 1,
                    requests=self.raw_requests,
                ),
            )
            self.raw_requests.written(event_id)
        if exchange is not None:
            timings = exchange.timings
            first_reasoning, first_answer = timings.first_reasoning_ms, timings.first_text_ms
            total = timings.total_ms
        else:  # cancelled mid-call: keep what this task saw happen
            first_reasoning = live.elapsed_ms(live.first_reasoning_at)
            first_answer = live.elapsed_ms(live.first_answer_at)
            total = live.elapsed_ms(time.perf_counter())
        return Step(
            number=number,
            captured=captured,
            capability=call.context.capability,
            exchange=exchange,
            cancelled=cancelled,
            overlapped=overlap.overlapped,
            started=live.started,
            first_reasoning_ms=first_reasoning,
            first_answer_ms=first_answer,
            total_ms=total,
            started_ns=started_ns,
            ended_ns=ended_ns,
        )

    async def started(self) -> None:
        """The task is running: traced, told live, and written."""
        task = self.task
        self.sink.add_trace(
            "task.started",
            task_id=task.id,
            metadata={
                "role": task.role,
                "executor": task.executor,
                "chain_of_thought": task.chain_of_thought,
                "chain_of_thought_source": task.chain_of_thought_source,
            },
        )
        self.sink.emit_task_started(task)
        await self.sink.persist(task=task)

    async def complete(self, steps: Steps) -> None:
        """Record the task's outcome from its steps, once
        (:func:`~thoughtline.runtime.engine.task_outcome.complete`)."""
        await task_outcome.complete(self, steps)
