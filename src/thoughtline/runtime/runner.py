"""Runs: plan the tasks, execute them (concurrently, with handoffs), record everything.

``Runtime.prepare`` resolves roles, endpoints, models and the disclosure mode of every
task and stores the run; ``Runtime.execute`` runs it. Observers receive live events
(``answer.delta``, and ``reasoning.delta`` only when the task's mode displays reasoning),
already filtered by the disclosure gate, so no surface needs mode logic.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx2

from thoughtline.accumulator import ModelResponse
from thoughtline.config import Config
from thoughtline.errors import ThoughtlineError
from thoughtline.events import Error
from thoughtline.providers.capabilities import CapabilityTable, builtin_capabilities
from thoughtline.providers.client import ProviderCall, ProviderClient, RetryPolicy, Timeouts
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.providers.exchange import Exchange
from thoughtline.providers.redaction import Redactor
from thoughtline.records import (
    Run,
    RunEventRecord,
    RunStatus,
    Task,
    TaskError,
    TaskUsage,
    TraceLayer,
    new_id,
    now_iso,
)
from thoughtline.requests import EFFORTS, Message, ModelRequest, ReasoningRequest
from thoughtline.runtime import retention
from thoughtline.runtime.disclosure import DisclosureGate, resolve_mode
from thoughtline.runtime.plan import RunSpec
from thoughtline.runtime.roles import RoleCatalog
from thoughtline.runtime.status import derive_reasoning_status, inline_verdict
from thoughtline.runtime.telemetry_hooks import (
    CallReport,
    RunTelemetry,
    first_chunk_ms,
    notify,
)
from thoughtline.runtime.trace import TraceWriter, retention_seconds
from thoughtline.store.base import Store, StoreError

logger = logging.getLogger(__name__)

EVENT_FLUSH_INTERVAL_S = 0.1

DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "claude-sonnet-4-6",
    "openai": "gpt-5.5",
    "openrouter": "anthropic/claude-sonnet-4.6",
    "gemini": "gemini-3-pro",
    "deepseek": "deepseek-reasoner",
    "ollama": "qwen3",
}


@dataclass(frozen=True, slots=True)
class RunEvent:
    """A live event for surfaces. ``data`` is JSON-ready; ``seq`` numbers the run's events
    from 1 (the same number the store keeps, and the SSE event id)."""

    type: str
    run_id: str
    task_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    seq: int = 0


RunObserver = Callable[[RunEvent], None]


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
        # Optional telemetry hook (runtime/telemetry_hooks.py), e.g. OTLP export.
        self.telemetry = telemetry
        self._executions: dict[str, _Execution] = {}

    # -- planning ----------------------------------------------------------------
    def prepare(
        self,
        spec: RunSpec,
        *,
        explicit_mode: str | None = None,
        worker_backend: str | None = None,
    ) -> Run:
        """Resolve and store a run (status ``planned``). Raises a clear error for an
        unknown role, provider or mode, or a missing credential, before anything runs."""
        config = self.config
        # Checked first: every surface (CLI, plan files, daemon, MCP, ACP) prepares here,
        # and an oversized run must cost nothing before it is refused.
        if len(spec.tasks) > config.max_tasks_per_run:
            raise ThoughtlineError(
                "RUN_TOO_MANY_TASKS",
                f"This run has {len(spec.tasks)} tasks, more than the limit of "
                f"{config.max_tasks_per_run}; raise orchestration.max_tasks_per_run "
                "(up to 1000) in thoughtline.toml to allow more.",
            )
        configured = (
            config.chain_of_thought if "orchestration.chain_of_thought" in config.sources else None
        )
        run_mode = resolve_mode(
            explicit=explicit_mode,
            run=spec.chain_of_thought,
            role=None,
            by_role={},
            configured=configured,
        )
        backend = worker_backend or spec.worker_backend or config.worker_backend
        if backend not in ("provider", "inline"):
            raise ThoughtlineError(
                "WORKER_BACKEND_UNKNOWN",
                f"Unknown worker backend {backend!r}. Allowed values: provider, inline.",
            )
        run = Run(
            id=new_id("run"),
            # A loaded key's value typed into the request is replaced before the run is
            # stored or sent: nothing thoughtline keeps or forwards may carry a key.
            request=self.redactor.values(spec.request),
            chain_of_thought=run_mode.mode,
            chain_of_thought_source=run_mode.source,
            worker_backend=backend,  # type: ignore[arg-type]
        )
        ids = {task.name: new_id("task") for task in spec.tasks}
        for task_spec in spec.tasks:
            effort = task_spec.effort or config.default_effort
            if effort not in EFFORTS:
                raise ThoughtlineError(
                    "EFFORT_UNKNOWN",
                    f"Unknown effort {effort!r} for task {task_spec.name!r}. "
                    f"Allowed values: {', '.join(EFFORTS)}.",
                )
        for position, task_spec in enumerate(spec.tasks):
            self.roles.get(task_spec.role)
            provider = task_spec.provider or config.default_provider
            endpoint = self.registry.resolve(provider)
            model = task_spec.model or self._default_model(provider)
            if backend == "provider":
                endpoint.require_key()
            mode = resolve_mode(
                explicit=explicit_mode,
                run=spec.chain_of_thought,
                role=task_spec.role,
                by_role=config.chain_of_thought_by_role,
                configured=configured,
            )
            run.tasks.append(
                Task(
                    id=ids[task_spec.name],
                    run_id=run.id,
                    position=position,
                    name=task_spec.name,
                    role=task_spec.role,
                    provider=provider,
                    model=model,
                    chain_of_thought=mode.mode,
                    chain_of_thought_source=mode.source,
                    effort=task_spec.effort or config.default_effort,
                    after=[ids[name] for name in task_spec.after],
                )
            )
        self.store.create_run(run)
        return run

    def _default_model(self, provider: str) -> str:
        if provider == self.config.default_provider:
            return self.config.default_model
        model = DEFAULT_MODELS.get(provider)
        if model is None:
            raise ThoughtlineError(
                "MODEL_MISSING",
                f"No default model for provider {provider!r}: pass --model (or set model in "
                "the plan's task, or [defaults] model in thoughtline.toml).",
            )
        return model

    # -- execution ---------------------------------------------------------------
    async def run(
        self,
        spec: RunSpec,
        *,
        explicit_mode: str | None = None,
        worker_backend: str | None = None,
        observer: RunObserver | None = None,
    ) -> Run:
        run = self.prepare(spec, explicit_mode=explicit_mode, worker_backend=worker_backend)
        return await self.execute(run, observer=observer)

    def purge_if_due(self) -> dict[TraceLayer, int] | None:
        """Apply ``[trace.retention]`` when no process sharing this store has done so in
        the last day (so retention holds even when nobody runs ``thoughtline purge``)."""
        return retention.purge_if_due(self.store, self.retention)

    def interrupt_all(self) -> list[str]:
        """For a process shutting down: stop every run executing here; they end
        ``interrupted`` (not cancelled, not lost), with what arrived kept."""
        for execution in list(self._executions.values()):
            execution.cancel("interrupted")
        return list(self._executions)

    def cancel(self, run_id: str) -> bool:
        """Ask a run executing in this process to stop: running tasks end ``cancelled``
        with what arrived kept. Returns False if the run is not executing here."""
        execution = self._executions.get(run_id)
        if execution is None:
            return False
        execution.cancel()
        return True

    async def execute(self, run: Run, *, observer: RunObserver | None = None) -> Run:
        """Execute a prepared run to its end (or cancellation). Always returns the run
        with every task in a final state, written to the store."""
        self.purge_if_due()
        execution = _Execution(self, run, observer)
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


class _Execution:
    """One run executing: its tasks, their ordering and the shared HTTP resources."""

    def __init__(self, runtime: Runtime, run: Run, observer: RunObserver | None) -> None:
        self.runtime = runtime
        self.run = run
        self.observer = observer
        self.trace = TraceWriter(run.id, runtime.retention)
        self.finished: dict[str, asyncio.Event] = {task.id: asyncio.Event() for task in run.tasks}
        self.semaphore = asyncio.Semaphore(runtime.config.max_concurrency)
        self.clients: dict[str, ProviderClient] = {}
        self.http: httpx2.AsyncClient | None = None
        self.workers: list[asyncio.Future[None]] = []
        self.cancelled = False
        self.stop_status: Literal["cancelled", "interrupted"] = "cancelled"
        self.seq = 0
        self.pending_events: list[RunEventRecord] = []
        self.store_failure: StoreError | None = None

    def cancel(self, status: Literal["cancelled", "interrupted"] = "cancelled") -> None:
        """Stop every task still queued or running (idempotent). ``interrupted`` is for a
        process shutting down: the run did not fail and nobody cancelled it."""
        if not self.cancelled:
            self.stop_status = status
        self.cancelled = True
        for worker in self.workers:
            worker.cancel()

    def store_failed(self, error: StoreError) -> None:
        """A write to the store failed (disk full, damaged file): nothing more can be
        recorded, so the run stops and writes nothing else. What was written stays, and
        the next process that opens the store marks the run interrupted, keeping what
        reached the event log."""
        if self.store_failure is None:
            self.store_failure = error
        self.cancel("interrupted")

    def emit(
        self, type_: str, task_id: str | None = None, data: dict[str, Any] | None = None
    ) -> None:
        """Number the event, queue it for the store's event log, and tell the observer.
        Reasoning deltas only get here when the gate let them through."""
        self.seq += 1
        payload = data or {}
        self.pending_events.append(
            RunEventRecord(
                run_id=self.run.id,
                seq=self.seq,
                type=type_,
                task_id=task_id,
                at=now_iso(),
                data=payload,
            )
        )
        if self.observer is not None:
            self.observer(RunEvent(type_, self.run.id, task_id, payload, self.seq))

    def emit_task(self, type_: str, task: Task) -> None:
        self.emit(type_, task.id, task.to_dict())

    def emit_run(self, type_: str) -> None:
        self.emit(type_, None, self.run.snapshot())

    def flush_events(self) -> None:
        events, self.pending_events = self.pending_events, []
        if events and self.store_failure is None:
            try:
                self.runtime.store.append_run_events(events)
            except StoreError as exc:
                self.store_failed(exc)

    async def flush_periodically(self) -> None:
        """Deltas between task transitions reach the event log within this interval, so
        another process can tail the run."""
        while True:
            await asyncio.sleep(EVENT_FLUSH_INTERVAL_S)
            self.flush_events()

    async def persist(self, *, task: Task | None = None, run: bool = False) -> None:
        """Write a transition durably — the task (or run) row and the trace events it
        produced — before the task moves on.

        The writes run on the event loop on purpose: each is a sub-millisecond SQLite
        transaction, and a writer thread measured twice as slow (it fights the event loop
        for the GIL between every statement)."""
        store = self.runtime.store
        events = self.trace.take()
        if self.store_failure is not None:
            return
        try:
            if run:
                store.update_run(self.run)
            if task is not None:
                store.update_task(task)
            if events:
                store.append_trace(events)
        except StoreError as exc:
            self.store_failed(exc)
            return
        self.flush_events()

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
        self.emit_run("run.started")
        notify(self.runtime.telemetry, lambda hook: hook.run_started(run))
        await self.persist(run=True)
        flusher = asyncio.ensure_future(self.flush_periodically())
        self.workers = [asyncio.ensure_future(self.task_when_ready(task)) for task in run.tasks]
        if self.cancelled:  # cancelled before the workers existed
            self.cancel()
        try:
            # Workers record their own outcome; cancellation ends them, not this coroutine.
            await asyncio.gather(*self.workers, return_exceptions=True)
        finally:
            await self.close_clients()
        run.status = _run_status(run, self.stop_status if self.cancelled else None)
        run.finished_at = now_iso()
        kind = {
            "cancelled": "run.cancelled",
            "failed": "run.failed",
            "interrupted": "run.interrupted",
        }.get(run.status, "run.completed")
        self.trace.add(kind, metadata={"status": run.status})
        notify(self.runtime.telemetry, lambda hook: hook.run_finished(run))
        flusher.cancel()
        self.emit_run(kind)
        await self.persist(run=True)
        if self.store_failure is not None:
            raise StoreError(
                self.store_failure.problem,
                f"{self.store_failure.message} Run {run.id} stopped there; see what it "
                f"kept with: thoughtline status {run.id}",
            ) from self.store_failure
        return run

    async def close_clients(self) -> None:
        if self.http is not None:
            await self.http.aclose()

    def client_for(self, provider: str) -> ProviderClient:
        client = self.clients.get(provider)
        if client is None:
            runtime = self.runtime
            if self.http is None:
                limit = max(runtime.config.max_concurrency * 2, 10)
                self.http = httpx2.AsyncClient(
                    timeout=runtime.timeouts.for_httpx(),
                    limits=httpx2.Limits(max_connections=limit, max_keepalive_connections=limit),
                    transport=runtime.transport,
                )
            client = ProviderClient(
                runtime.registry.resolve(provider),
                http_client=self.http,
                capabilities=runtime.capabilities,
                retry=runtime.retry,
                timeouts=runtime.timeouts,
                redactor=runtime.redactor,
                capture_body=runtime.config.trace_provider_raw,
            )
            self.clients[provider] = client
        return client

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
                await TaskExecution(self, task).go()
        except asyncio.CancelledError:
            if task.status not in ("done", "prepared", "failed", "cancelled", "interrupted"):
                await self.finish_task(task, status=self.stop_status)
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

    async def finish_task(self, task: Task, *, status: str, error: TaskError | None = None) -> None:
        task.status = status  # type: ignore[assignment]
        task.error = error
        task.timings.finished_at = now_iso()
        if task.reasoning_status is None:
            stopped = status in ("cancelled", "interrupted")
            task.reasoning_status = "interrupted" if stopped else "not_applicable"
            task.reasoning_notice = (
                f"The task was {status} before the model answered."
                if stopped
                else "The task did not run, so no model was called."
            )
        self.trace.add(
            "worker.failed" if status == "failed" else f"task.{status}",
            task_id=task.id,
            metadata={"status": status, "error": None if error is None else error.to_dict()},
        )
        self.emit_task("task.completed", task)
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


class TaskExecution:
    """One task through its worker backend, with the gate applied to everything."""

    def __init__(self, execution: _Execution, task: Task) -> None:
        self.execution = execution
        self.task = task
        self.runtime = execution.runtime
        self.gate = DisclosureGate(task.chain_of_thought, self.runtime.redactor)

    async def go(self) -> None:
        task = self.task
        execution = self.execution
        task.status = "running"
        task.timings.started_at = now_iso()
        role = self.runtime.roles.get(task.role)
        prompt = execution.handoff(task)
        if execution.run.worker_backend == "inline":
            task.executor = "inline:prepared"
            await self.started()
            execution.trace.add(
                "worker.prepared",
                task_id=task.id,
                metadata={"system": role.prompt, "prompt": prompt, "model": task.model},
            )
            verdict = inline_verdict()
            task.reasoning_status, task.reasoning_notice = verdict.status, verdict.notice
            await execution.finish_task(task, status="prepared")
            return
        task.executor = f"provider:{task.provider}:{task.model}"
        await self.started()
        client = execution.client_for(task.provider)
        request = ModelRequest(
            model=task.model,
            system=role.prompt,
            messages=(Message(role="user", content=prompt),),
            reasoning=ReasoningRequest(
                enabled=self.gate.requests_reasoning,
                effort=task.effort,  # type: ignore[arg-type]
            ),
        )
        call = client.call(request)
        execution.trace.add(
            "worker.requested",
            task_id=task.id,
            metadata={
                "endpoint": task.provider,
                "wire_api": client.endpoint.wire_api,
                "base_url": client.redactor.url(client.endpoint.base_url),
                "model": task.model,
                "reasoning_requested": self.gate.requests_reasoning,
                "effort": task.effort,
                "capability": call.context.capability.describe(),
            },
        )
        cancelled = False
        try:
            async with call:
                async for event in call:
                    live = self.gate.live(event)
                    if live is not None:
                        execution.emit(live[0], task.id, {"text": live[1]})
        except asyncio.CancelledError:
            cancelled = True
        await self.complete(call, cancelled=cancelled)
        if cancelled:
            raise asyncio.CancelledError

    async def started(self) -> None:
        task = self.task
        self.execution.trace.add(
            "task.started",
            task_id=task.id,
            metadata={
                "role": task.role,
                "executor": task.executor,
                "chain_of_thought": task.chain_of_thought,
                "chain_of_thought_source": task.chain_of_thought_source,
            },
        )
        self.execution.emit_task("task.started", task)
        await self.execution.persist(task=task)

    async def complete(self, call: ProviderCall, *, cancelled: bool) -> None:
        """Route the outcome through the gate, then record it (task, trace layers)."""
        task = self.task
        execution = self.execution
        for type_, text in self.gate.finish():  # tails held back as a possible credential
            execution.emit(type_, task.id, {"text": text})
        client = execution.client_for(task.provider)
        # From here on only the gate's cleaned copy of the response is read.
        captured = self.gate.capture(call.response)
        response = captured.response
        verdict = derive_reasoning_status(
            gate=self.gate,
            response=response,
            endpoint=client.endpoint,
            capability=call.context.capability,
            cancelled=cancelled,
        )
        task.output = captured.output
        task.reasoning = captured.task_text
        task.reasoning_parts = captured.for_task
        task.reasoning_status, task.reasoning_notice = verdict.status, verdict.notice
        task.usage = TaskUsage(
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            reasoning_tokens=response.usage.reasoning_tokens,
        )
        exchange = call.exchange
        if exchange is not None:
            task.timings.first_reasoning_ms = exchange.timings.first_reasoning_ms
            task.timings.first_answer_ms = exchange.timings.first_text_ms
            task.timings.total_ms = exchange.timings.total_ms
        if captured.for_trace:  # recording mode and something arrived
            execution.trace.add(
                "worker.reasoning",
                layer="reasoning",
                task_id=task.id,
                metadata={"reasoning": captured.trace_text, "parts": captured.for_trace},
            )
        if exchange is not None and self.runtime.config.trace_provider_raw:
            execution.trace.add(
                "provider.exchange",
                layer="provider_raw",
                task_id=task.id,
                metadata=self.raw_exchange(exchange, response),
            )
        error = None if cancelled else _task_error(response)
        status = execution.stop_status if cancelled else ("failed" if error else "done")
        task.status = status
        task.error = error
        task.timings.finished_at = now_iso()
        execution.trace.add(
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
                "warnings": [{"code": w.code, "message": w.message} for w in response.warnings],
                "error": None if error is None else error.to_dict(),
                "output_chars": len(response.text),
            },
        )
        # Telemetry hook: reasoning goes to it ONLY as the gate handed it to the trace
        # (captured.for_trace, None unless the mode records reasoning) — never from
        # response.reasoning_parts.
        notify(
            self.runtime.telemetry,
            lambda hook: hook.task_finished(
                execution.run,
                task,
                CallReport(
                    recorded_reasoning=captured.for_trace,
                    response_model=response.model,
                    response_id=response.response_id,
                    finish_reason=None if response.finish is None else response.finish.reason,
                    cached_input_tokens=response.usage.cached_input_tokens,
                    streamed=exchange is not None and exchange.streamed,
                    time_to_first_chunk_ms=first_chunk_ms(exchange),
                ),
            ),
        )
        execution.emit_task("task.completed", task)
        await execution.persist(task=task)

    def raw_exchange(self, exchange: Exchange, response: ModelResponse) -> dict[str, Any]:
        """The exchange for the provider_raw layer, reasoning scrubbed unless recorded."""
        raw = exchange.to_dict()
        if (
            not self.gate.records
            and exchange.response_body is not None
            and (exchange.status is None or exchange.status < 400)
        ):
            from thoughtline.runtime.scrub import scrub_reasoning

            client = self.execution.client_for(self.task.provider)
            scrubbed = scrub_reasoning(
                exchange.response_body,
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


def _task_error(response: ModelResponse) -> TaskError | None:
    error: Error | None = response.error
    if error is not None:
        return TaskError(code=error.code, message=error.message, retryable=error.retryable)
    if response.finish is not None and response.finish.reason == "content_filter":
        return TaskError(
            code="PROVIDER_CONTENT_FILTERED",
            message="The provider's content filter stopped the answer.",
            retryable=False,
        )
    if not response.text and not response.tool_calls:
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


def _run_status(run: Run, stopped: Literal["cancelled", "interrupted"] | None) -> RunStatus:
    statuses = [task.status for task in run.tasks]
    if stopped is not None:
        return stopped
    if "cancelled" in statuses:
        return "cancelled"
    if statuses and all(status == "prepared" for status in statuses):
        return "completed_prepare_only"
    if all(status == "done" for status in statuses):
        return "completed"
    if any(status == "done" for status in statuses):
        return "completed_with_failures"
    return "failed"
