"""One task through its worker backend, with the disclosure gate applied to everything.

A task with the provider backend is a loop around one :meth:`TaskCall.step`: each step is
one model call, streamed through the task's
:class:`~thoughtline.runtime.policy.disclosure.DisclosureGate` (a fresh live stream per call,
the mode decided once per task). Live deltas reach the run's observers only as the gate
lets them through, and the task, the trace layers and telemetry receive only the gate's
cleaned copy of each response. The loop ends when a step's answer needs no further call,
or after ``max_steps`` calls; the task is then completed once, from all of its steps
(:mod:`~thoughtline.runtime.engine.steps`).

A task that may call tools offers them on every call. When a step's response calls
tools, they run (:mod:`~thoughtline.runtime.engine.tool_calls`) and the next step's history is
the previous one plus the step's response as it came (its reasoning carriers byte for
byte, held in memory for the loop only, sent back only to the provider and model that
made them) and a user turn with the results: append-only, so every earlier message is
sent with the same bytes. A step that still calls tools when ``max_steps`` calls were
made fails the task (``MAX_STEPS_REACHED``), keeping what arrived. The inline backend
prepares the prompts, records them and calls nothing.

Under a budget (the task's ``max_cost``, its run's) each call is made only if its worst
case fits what is left, and every call's real cost is counted as it ends
(:mod:`~thoughtline.runtime.policy.budget`); a call that does not fit fails the task
(``BUDGET_EXCEEDED``), keeping what arrived.

A task reaches its run only through a :class:`~thoughtline.runtime.engine.task_sink.TaskSink`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from typing import Any, Final

import orjson

from thoughtline.config.pricing import Prices, Unpriced
from thoughtline.errors import ThoughtlineError
from thoughtline.model import threads
from thoughtline.model.accumulator import ModelResponse
from thoughtline.model.events import ReasoningDelta, StreamError, StreamEvent, TextDelta
from thoughtline.model.parts import Part, ReasoningPart, TextPart, ToolCallPart
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.model.threads import TaskThread
from thoughtline.providers.exchange import Exchange
from thoughtline.records import Cost, Task, TaskError, now_iso
from thoughtline.runtime.engine.clients import CallOverlap
from thoughtline.runtime.engine.steps import Step, Steps
from thoughtline.runtime.engine.task_sink import TaskSink
from thoughtline.runtime.engine.telemetry_hooks import CallReport, first_chunk_ms
from thoughtline.runtime.engine.tool_calls import ToolCalls
from thoughtline.runtime.planning import conversation
from thoughtline.runtime.policy import budget
from thoughtline.runtime.policy.disclosure import DisclosureGate, GateStream, LiveStream
from thoughtline.runtime.policy.status import derive_reasoning_status, inline_verdict

DEFAULT_MAX_STEPS: Final = 8
"""How many model calls one task may make (unless its plan, role or config says)."""


@dataclass(slots=True, kw_only=True)
class Prepared:
    """A task ready to call its model: the role's system prompt, the user prompt, and
    the history each step sends (append-only: a step only adds to what came before)."""

    system: str
    prompt: str
    history: list[Message]
    own: list[Message]
    """This turn's messages (from its prompt on), stored as the task's thread."""


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
        self.prices: Prices | None = None
        """The model's prices, when a budget applies to the task (else ``None``)."""
        self.spent = 0.0
        self.held = 0.0
        """The worst case the running call reserved of the run's budget."""
        self.budget_error: TaskError | None = None

    def prepare(self) -> Prepared:
        """The task's role and prompt, as its first step will send them."""
        task = self.task
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
        """What this task adds to its conversation: its prompt, its steps' turns and the
        last answer; with reasoning and carriers only when the mode requested them (a
        part holding a loaded key's value is left out: a carrier cannot be redacted)."""
        messages = list(prepared.own)
        last = steps.last.response.to_message()
        if last.parts:
            messages.append(self._redacted_message(last))
        carriers: tuple[Message, ...] | None = None
        if self.gate.requests_reasoning:
            carriers = tuple(
                Message(role=message.role, parts=kept)
                for message in messages
                if (kept := [part for part in message.parts if not self._holds_secret(part)])
            )
        return TaskThread(
            answer=threads.answer_layer(messages),
            carriers=carriers,
            system_digest=threads.digest(prepared.system),
            tools_digest=threads.tools_digest(self.tools),
        )

    def _holds_secret(self, part: Part) -> bool:
        if not isinstance(part, ReasoningPart) or not self.gate.redactor.has_secrets:
            return False
        values = self.gate.redactor.values
        text = part.text + orjson.dumps(dict(part.provider_metadata)).decode()
        return values(text) != text

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
        refused = self.priced_for_budget()
        await self.started()
        if refused is not None:  # before any call is made
            await self.sink.finish_task(task, status="failed", error=refused)
            return
        steps = Steps()
        while True:
            request = self.request(prepared)
            refused = self.reserve(request, calls=len(steps))
            if refused is not None:
                if not steps:
                    await self.sink.finish_task(task, status="failed", error=refused)
                    return
                self.budget_error = refused
                break
            held, self.held = self.held, 0.0
            try:
                step = await self.step(prepared, number=len(steps) + 1, request=request)
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
            task.step_costs.append(cost)
            self.settle(held, cost)
            if step.cancelled:
                break
            self.budget_error = self.overspent(calls=len(steps))
            if self.budget_error is not None:
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

    def priced_for_budget(self) -> TaskError | None:
        """Under a budget, the model's prices (kept for each call's worst case); the
        refusal when they are unknown: a budget is never run unpriced."""
        task = self.task
        if task.max_cost is None and self.sink.budget.limit is None:
            return None
        found = self.sink.pricer.prices(task.provider, task.model)
        if isinstance(found, Unpriced):
            return budget.budget_error(
                f"A budget is set but the price of {task.model} is unknown ({found.reason}); "
                f'set [prices."{task.provider}/{task.model}"] or remove max_cost. No call '
                "was made."
            )
        self.prices = found
        return None

    def reserve(self, request: ModelRequest, *, calls: int) -> TaskError | None:
        """Before a call: its worst case checked against what the task and the run have
        left, and held from the run's budget until it ends; the refusal if it does not
        fit."""
        if self.prices is None:
            return None
        task = self.task
        client = self.sink.client_for(task.provider)
        capability = client.capabilities.lookup(client.endpoint.capability_key, task.model)
        worst = budget.worst_case(self.prices, request, capability.context_window)
        if worst is None or worst.amount is None:
            return budget.budget_error(
                f"A budget is set but how long an answer {task.model} may give is unknown "
                "(no max_output_tokens and no context window in its capability data); set "
                "max_output_tokens (in [defaults], the plan or --max-output-tokens)."
            )
        amount = worst.amount
        advice = budget.advice(request, capability.context_window, called=calls > 0)
        if task.max_cost is not None and self.spent + amount > task.max_cost:
            message = budget.task_refusal(self.spent, task.max_cost, calls, amount)
            return budget.budget_error(f"Budget exceeded: {message}; {advice}.")
        run_budget = self.sink.budget
        if not run_budget.reserve(amount):
            message = run_budget.refusal(amount, waiting=run_budget.reserved)
            return budget.budget_error(f"Budget exceeded: {message}; {advice}.")
        self.held = amount
        return None

    def settle(self, held: float, cost: Cost) -> None:
        """A call ended: its real cost counted (its worst case, were it unknown)."""
        if self.prices is None:
            return
        self.spent += held if cost.amount is None else cost.amount
        self.sink.budget.settle(held, cost)

    def overspent(self, *, calls: int) -> TaskError | None:
        """After a step: the refusal when the real costs went past a budget."""
        task = self.task
        if task.max_cost is not None and self.spent > task.max_cost:
            message = budget.task_overspent(self.spent, task.max_cost, calls)
            return budget.budget_error(f"Budget exceeded: {message}.")
        if self.prices is not None and self.sink.budget.exceeded:
            return budget.budget_error(f"Budget exceeded: {self.sink.budget.overspent()}.")
        return None

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
        # The parts as they came (the gate cleans the views, never ``parts``): carriers
        # go back byte for byte, and only to the provider and model that made them (each
        # wire's history checks their origin). They live in this history only. A loaded
        # key the model wrote in its text or a call's arguments is not sent back.
        answered = self._redacted_message(response.to_message())
        return [answered, Message(role="user", parts=results)]

    def _redacted_message(self, message: Message) -> Message:
        if not self.gate.redactor.has_secrets:
            return message
        return Message(
            role=message.role, parts=tuple(self._redacted(part) for part in message.parts)
        )

    def _redacted(self, part: Part) -> Part:
        """``part`` with loaded key values removed from its text or arguments (reasoning
        goes back as it came: its carriers are bound to its bytes)."""
        values = self.gate.redactor.values
        if (
            isinstance(part, ToolCallPart)
            and (arguments := values(part.arguments)) != part.arguments
        ):
            return replace(part, arguments=arguments)
        if isinstance(part, TextPart) and (text := values(part.text)) != part.text:
            return replace(part, text=text)
        return part

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
                "temperature": generation.temperature,
                "capability": call.context.capability.describe(),
            },
        )
        live = LiveCall(sink, task.id, self.gate.stream())
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
            sink.add_trace(
                "provider.exchange",
                layer="provider_raw",
                task_id=task.id,
                metadata=self.raw_exchange(
                    exchange,
                    captured.response,
                    captured.echoed_credential,
                    echoes=len(prepared.history) > 1,
                ),
            )
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
        """Record the task's outcome from its steps, once: the last step's answer,
        finish and error; usage, reasoning and timings over all of them."""
        task = self.task
        sink = self.sink
        last = steps.last
        response = last.response
        # Stopped between model calls (while the last step's tool calls ran): every call
        # ended whole, so the reasoning is judged as for a task that ended, and the
        # notice says where the task stopped.
        cancelled = last.cancelled or self.stopped
        between = self.stopped and not last.cancelled and bool(response.tool_calls)
        cut = cancelled and not between  # a model call was stopped: its reasoning is cut
        # Over several steps the status speaks of the task: reasoning that arrived in an
        # earlier step was shown or recorded even when the last step returned none (the
        # notice then accounts for each step). A stopped task speaks of its last step,
        # and names it.
        judged = last
        if not cut:
            judged = next(
                (
                    step
                    for step in reversed(list(steps))
                    if any(part.text for part in step.response.reasoning_parts)
                ),
                last,
            )
        # A task that was not cut speaks of all its calls' reasoning tokens and their
        # cost, as its table and footer do; a cut one of the step it was cut in.
        whole = len(steps) > 1 and not cut
        counted = [
            tokens for step in steps if (tokens := step.response.usage.reasoning_tokens) is not None
        ]
        verdict = derive_reasoning_status(
            gate=self.gate,
            response=judged.response,
            endpoint=sink.client_for(task.provider).endpoint,
            capability=judged.capability,
            cancelled=cut,
            stopped_by=sink.stopped_by(),
            cost=task.cost if whole else self.step_cost(judged),
            step=judged.number if len(steps) > 1 else None,
            reasoning_tokens=sum(counted) if whole and counted else None,
        )
        task.output = last.captured.output
        task.reasoning = steps.task_text()
        task.reasoning_parts = steps.for_task()
        task.reasoning_status, task.reasoning_notice = verdict.status, verdict.notice
        if len(steps) > 1 and task.reasoning_notice is not None:
            task.reasoning_notice += steps.reasoning_account(
                self.gate.displays, task.step_costs, stopped=last.number if cut else None
            )
        if between and task.reasoning_notice is not None:
            lead = sink.stopped_by() or "The task was cancelled"
            task.reasoning_notice += f" {lead} while the tool calls of step {last.number} ran."
        if task.reasoning_notice is not None:
            # Reasoning sent back that the provider left unread is part of the account.
            for step in steps:
                for warning in step.response.warnings:
                    if warning.code == "PROVIDER_THINKING_DROPPED":
                        task.reasoning_notice += f" Step {step.number}: {warning.message}"
                    elif warning.code == "TOOL_TURNS_AS_TEXT":  # the wire's own choice
                        task.reasoning_notice += f" {warning.message}"
        if self.budget_error is not None and task.reasoning_notice is not None:
            # The account of the reasoning says what the budget stopped, and at what spend.
            task.reasoning_notice += f" {self.budget_error.message}"
        note = None if task.history is None else task.history["note"]
        if note and task.reasoning_notice is not None:
            task.reasoning_notice += f" {note}"
        if self.prepared is not None:
            task.thread = self.thread(self.prepared, steps)
        task.usage = steps.usage()
        task.finish_reason = None if response.finish is None else response.finish.reason
        task.timings.first_reasoning_ms = steps.first_reasoning_ms()
        task.timings.first_answer_ms = steps.first_answer_ms()
        task.timings.total_ms = steps.total_ms()
        if not self.gate.requests_reasoning:
            # Hidden: reasoning a provider sent anyway was dropped, and so is when it came.
            task.timings.first_reasoning_ms = None
        error = (
            sink.stop_error
            if cancelled
            else task_error(response, runs_tools=self.tool_calls is not None)
        )
        if error is None and self.budget_error is not None:
            error = self.budget_error
        if error is None and self.limit_reached:
            error = TaskError(
                code="MAX_STEPS_REACHED",
                message=f"The model still called tools after {len(steps)} model calls, the "
                "task's max_steps; what arrived is kept (raise max_steps in the role, the "
                "plan, [orchestration] or --max-steps).",
                retryable=False,
            )
        if error is not None and last.overlapped and error.code in OVERLAP_SENSITIVE:
            error.message += (
                f" Another task called {task.provider} at the same time: a local server that "
                "serves one request at a time drops the stream it was serving when the next "
                f"arrives (set [providers.{task.provider}] max_concurrency = 1)."
            )
        for step in steps:
            answered = step.response
            if answered.model and any(
                w.code == "PROVIDER_MODEL_FALLBACK" for w in answered.warnings
            ):
                task.model = answered.model  # the model that answered, not the one asked for
        status = sink.stop_status if cancelled else ("failed" if error else "done")
        task.status = status
        task.error = error
        task.timings.finished_at = now_iso()
        sink.add_trace(
            "worker.failed" if error else (f"task.{status}" if cancelled else "worker.completed"),
            task_id=task.id,
            metadata={
                "status": status,
                "reasoning_status": task.reasoning_status,
                "reasoning_notice": task.reasoning_notice,
                "usage": task.usage.to_dict(),
                "timings": task.timings.to_dict(),
                "finish": None
                if response.finish is None
                else {"reason": response.finish.reason, "raw": response.finish.raw_reason},
                "warnings": [
                    {"code": w.code, "message": w.message}
                    for step in steps
                    for w in step.response.warnings
                ],
                "error": None if error is None else error.to_dict(),
                "output_chars": len(response.text),
            },
        )
        # Telemetry hook: reasoning goes to it ONLY as the gate handed it to the trace
        # (for_trace, None unless the mode records reasoning) — never from
        # response.reasoning_parts.
        exchange = last.exchange
        sink.report_call(
            task,
            CallReport(
                recorded_reasoning=steps.for_trace(),
                response_model=response.model,
                response_id=response.response_id,
                finish_reason=None if response.finish is None else response.finish.reason,
                cached_input_tokens=response.usage.cached_input_tokens,
                streamed=exchange is not None and exchange.streamed,
                time_to_first_chunk_ms=first_chunk_ms(exchange),
                steps=steps.reports(),
            ),
        )
        sink.emit_task_completed(task)
        await sink.persist(task=task)

    def raw_exchange(
        self,
        exchange: Exchange,
        response: ModelResponse,
        echoed_credential: bool,
        *,
        echoes: bool = False,
    ) -> dict[str, Any]:
        """The exchange for the provider_raw layer, reasoning scrubbed unless recorded:
        the response's, and the request's when it ``echoes`` earlier steps (it carries
        their reasoning back to the provider).

        When the model echoed a loaded key, its pieces cut across the stream's strings are
        removed too (the transport redacted whole values only, as the chunks arrived)."""
        raw = exchange.to_dict()
        if echoes and not self.gate.records:
            from thoughtline.runtime.policy.scrub_requests import scrub_request

            raw["request_body"] = scrub_request(exchange.request_body)
        body = exchange.response_body
        if body is not None and echoed_credential:
            body = self.gate.redactor.split_pieces(body)
            raw["response_body"] = body.decode("utf-8", errors="replace")
        if not self.gate.requests_reasoning:  # hidden: no reasoning-derived timing either
            raw["timings"]["first_reasoning_ms"] = None
        if (
            not self.gate.records
            and body is not None
            and (exchange.status is None or exchange.status < 400)
        ):
            from thoughtline.runtime.policy.scrub import scrub_reasoning

            client = self.sink.client_for(self.task.provider)
            scrubbed = scrub_reasoning(
                body,
                wire_api=exchange.wire_api,
                streamed=exchange.streamed,
                endpoint=client.endpoint,
            )
            raw["response_body"] = scrubbed.decode("utf-8", errors="replace")
            raw["reasoning_scrubbed"] = True
        else:
            raw["reasoning_scrubbed"] = False
        raw["token_diagnostics"] = {
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
            "reasoning_tokens": response.usage.reasoning_tokens,
            "cached_input_tokens": response.usage.cached_input_tokens,
            "total_tokens": response.usage.total_tokens,
        }
        return raw


class LiveCall:
    """The live side of one model call: the gate's stream for the call, and when its
    first reasoning and answer text arrived (kept for a call cancelled before it built
    its exchange)."""

    __slots__ = ("first_answer_at", "first_reasoning_at", "sink", "started", "stream", "task_id")

    def __init__(self, sink: TaskSink, task_id: str, stream: GateStream) -> None:
        self.sink = sink
        self.task_id = task_id
        self.stream = stream
        self.started = 0.0
        self.first_reasoning_at: float | None = None
        self.first_answer_at: float | None = None

    def saw(self, event: object) -> None:
        """Note when the first reasoning and the first answer text arrived."""
        kind = type(event)
        if kind is TextDelta:
            if self.first_answer_at is None:
                self.first_answer_at = time.perf_counter()
        elif kind is ReasoningDelta and self.first_reasoning_at is None:
            self.first_reasoning_at = time.perf_counter()

    def elapsed_ms(self, at: float | None) -> float | None:
        return None if at is None else round((at - self.started) * 1000.0, 3)

    def show(self, batch: list[StreamEvent]) -> None:
        """Hand what the gate releases of one network chunk to the live surfaces: one
        delta per stream per chunk, as text that arrived together is shown together (a
        fast or buffered stream brings hundreds of deltas at once, and each live event
        costs every surface, the event log and every subscriber)."""
        sink, task_id = self.sink, self.task_id
        stream: LiveStream = "answer"
        pieces: list[str] = []
        for event in batch:
            if self.first_answer_at is None:
                self.saw(event)
            live = self.stream.live(event)
            if live is None:
                continue
            if pieces and live[0] != stream:
                sink.emit_text(task_id, stream, "".join(pieces))
                pieces.clear()
            stream = live[0]
            pieces.append(live[1])
        if pieces:
            sink.emit_text(task_id, stream, "".join(pieces))

    def finish(self) -> None:
        """Show the tails the gate held back as a possible credential."""
        for stream, text in self.stream.finish():
            self.sink.emit_text(self.task_id, stream, text)


OVERLAP_SENSITIVE = frozenset(
    {"PROVIDER_STREAM_INTERRUPTED", "PROVIDER_UNREACHABLE", "PROVIDER_SERVER_ERROR"}
)
"""Errors a server that serves one request at a time gives the call it drops."""


def task_error(response: ModelResponse, *, runs_tools: bool) -> TaskError | None:
    """The task's error for a response that ended without a usable answer, else None.
    Tool calls are an answer only for a task that ``runs_tools``: a model that calls a
    tool its turn does not offer (as models do after earlier tool turns) answered
    nothing."""
    error: StreamError | None = response.error
    if error is not None:
        return TaskError(code=error.code, message=error.message, retryable=error.retryable)
    if response.finish is not None and response.finish.reason == "content_filter":
        return TaskError(
            code="PROVIDER_CONTENT_FILTERED",
            message="The provider's content filter stopped the answer.",
            retryable=False,
        )
    if response.text.strip():
        return None
    if response.tool_calls and not runs_tools:
        names = ", ".join(sorted({call.name for call in response.tool_calls}))
        return TaskError(
            code="PROVIDER_EMPTY_CONTENT",
            message=f"The model called {names}, which this turn does not offer, and gave "
            "no answer; give the task its tools again or ask again.",
            retryable=True,
        )
    if not response.tool_calls:
        if any(part.text for part in response.reasoning_parts):
            return TaskError(
                code="PROVIDER_REASONING_ONLY",
                message="The model reasoned but gave no answer (often the output token "
                "limit was spent on reasoning). Raise max tokens or lower the effort.",
                retryable=True,
            )
        return TaskError(
            code="PROVIDER_EMPTY_CONTENT",
            message="The provider returned an empty answer.",
            retryable=True,
        )
    return None
