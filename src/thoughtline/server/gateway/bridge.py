"""Each gateway call is a run: the client's history is its one task's input, its tools
are offered and never run here, its client's mode is the run's, and the answer goes
back to the client as the disclosure gate handed it on.

:meth:`Bridge.start` checks the client's day budget and calls in flight, puts back the
carriers the gateway kept of the turns the client returns (:mod:`.carriers`), or those
the client sent back itself that the gateway handed it (:mod:`.provenance`), and starts
the run through the daemon (``source: gateway``, ``client: NAME``: the daemon's
``max_active_runs``, store checks and shutdown apply as to any run). Its live deltas
reach :class:`Call.events` as the gate released them; when the run ends,
:meth:`Call.settle` counts its cost against the client's day and keeps the answer's
carriers (whether or not the client is still there; for a client that sees them, their
digests too), and :meth:`Call.outcome` turns a
failed task into the refusal the client gets (a provider's refusal of a turn whose
carriers the gateway no longer held is ``GATEWAY_CARRIERS_GONE``, never the provider's
raw 400).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import cast

from thoughtline.config import thoughtline_home
from thoughtline.config.gateway import GatewayClient, GatewaySettings
from thoughtline.errors import ErrorCode, ThoughtlineError
from thoughtline.gateway.call import GatewayCall, ReasoningAsk
from thoughtline.model.accumulator import ModelResponse
from thoughtline.model.client_turns import ClientTurns
from thoughtline.model.parts import ReasoningPart
from thoughtline.model.requests import ToolChoice
from thoughtline.records import Task, TaskError
from thoughtline.records.run_events import RunEvent, is_terminal
from thoughtline.runtime import ManagedRun, RunOptions, build_spec, shareable_carriers
from thoughtline.server.daemon import Daemon
from thoughtline.server.errors import ApiError, status_for
from thoughtline.server.gateway.carriers import Accepts, CarrierStore
from thoughtline.server.gateway.clients import ClientLedger, day_start, today
from thoughtline.server.gateway.failure import GatewayFailure, from_api_error
from thoughtline.server.gateway.provenance import Provenance
from thoughtline.server.gateway.routing import Route

MODE_HEADER = "thoughtline-chain-of-thought"
"""The response header that says the mode the client's call got."""
RUN_HEADER = "thoughtline-run-id"
"""The response header that names the run the call was."""

SHOWS_REASONING = frozenset({"surface", "surface_and_telemetry"})

_STATUS_OF_TASK_ERROR = {
    "BUDGET_EXCEEDED": 429,
    "PROVIDER_RATE_LIMITED": 429,
    "PROVIDER_OVERLOADED": 503,
    "PROVIDER_TIMEOUT": 504,
    "PROVIDER_UNREACHABLE": 502,
    "PROVIDER_SERVER_ERROR": 502,
    "PROVIDER_AUTH_ERROR": 502,
    "PROVIDER_KEY_MISSING": 502,
    "RUN_INTERRUPTED": 503,
}


def task_error_status(code: str) -> int:
    """The status a client gets for a task (or count) that failed with ``code``."""
    return _STATUS_OF_TASK_ERROR.get(code, 400 if code.startswith("REQUEST") else 502)


def gateway_options(
    client: GatewayClient,
    call: GatewayCall,
    route: Route,
    turns: ClientTurns,
    *,
    left_today: float | None,
) -> RunOptions:
    """The run options of one call (``tests/core/test_run_options_surfaces.py`` holds the
    gateway surface to the options the definition offers it). The run may spend what is
    left of the client's day (``left_today``): a call that could go past it fails
    ``BUDGET_EXCEEDED`` before it is made."""
    return RunOptions(
        # What the run's request shows: the latest user text of the conversation.
        request=turns.prompt or "(tool results)",
        provider=route.endpoint,
        model=route.model,
        chain_of_thought=client.chain_of_thought,
        effort=call.reasoning.effort,
        max_output_tokens=call.max_output_tokens,
        temperature=call.temperature,
        max_cost=left_today,
        client=client.name,
        client_turns=turns,
    )


def described(ask: ReasoningAsk) -> str | None:
    """What a call asked of reasoning, in one line (``effort=high, enabled=true``), for
    the run's ``client_asked``; ``None`` when it said nothing of it."""
    said = [
        f"{name}={str(value).lower() if isinstance(value, bool) else value}"
        for name in ("enabled", "effort", "budget_tokens", "summary", "display")
        if (value := getattr(ask, name)) is not None
    ]
    if ask.include_encrypted:
        said.append("include_encrypted=true")
    return ", ".join(said) or None


@dataclass(slots=True)
class Call:
    """One client call as a run in flight."""

    bridge: Bridge
    client: GatewayClient
    route: Route
    handle: ManagedRun
    missing_carriers: int
    refused_carriers: int
    """Reasoning parts the client sent back that the gateway did not hand it for this
    endpoint and model (forged, altered, or another model's): not forwarded."""
    events: asyncio.Queue[RunEvent] = field(default_factory=asyncio.Queue)
    """A stream's live events not yet written (``[gateway] stream_backlog_max`` at most)."""
    hang_up: Callable[[], None] | None = None
    """Closes the client's connection at once (set by the stream's route)."""
    stalled: bool = False
    settled: bool = False

    @property
    def mode(self) -> str:
        return self.client.chain_of_thought

    @property
    def shows_reasoning(self) -> bool:
        return self.mode in SHOWS_REASONING

    @property
    def headers(self) -> dict[str, str]:
        return {MODE_HEADER: self.mode, RUN_HEADER: self.handle.run_id}

    async def until_end(self) -> Task:
        """Wait for the run's end (its events stay queued for a stream), then
        :meth:`outcome`. A client that goes away meanwhile cancels the run."""
        try:
            await asyncio.wait({self.handle.task})
        except asyncio.CancelledError:
            self.bridge.daemon.runs.cancel(self.handle.run_id)
            raise
        return self.outcome()

    def settle(self) -> None:
        """When the run ended, whether or not the client is still there: the call leaves
        its client's count, its cost is counted, its answer's carriers kept. Once."""
        if self.settled:
            return
        self.settled = True
        task = self.handle.run.tasks[0]
        self.bridge.ledger.leave(self.client)
        self.bridge.ledger.spend(self.client, task.cost.amount)
        turns = task.client_turns
        provenance = self.bridge.provenance
        if task.reply is not None and provenance is not None and self.shows_reasoning:
            # What the client is handed, it may send back itself (for this model only).
            provenance.vouch(
                self.client.name,
                self.route.endpoint,
                self.route.model,
                task.reply.reasoning_parts,
            )
        if task.reply is not None and turns is not None:
            self.bridge.carriers.keep(
                self.client.name,
                turns.messages,
                task.reply.to_message(),
                endpoint=self.route.endpoint,
                model=self.route.model,
            )

    def fell_behind(self) -> None:
        """The client let ``[gateway] stream_backlog_max`` live events pile up unread (it
        stopped reading, or its connection is half-open): the run is cancelled with
        ``GATEWAY_CLIENT_STALLED``, what was queued is dropped and the connection closed,
        so one client never holds the daemon's memory for an answer it does not read."""
        while not self.events.empty():
            self.events.get_nowait()  # the run's last events still fit
        if self.stalled:
            return
        self.stalled = True
        error = TaskError(
            code="GATEWAY_CLIENT_STALLED",
            message=f"The gateway's client {self.client.name} stopped reading the streamed "
            f"answer ({self.events.maxsize} live events waited unread), so the call was "
            "stopped and its connection closed; what arrived is kept. Read a stream as it "
            "comes, or ask without stream.",
            retryable=False,
        )
        self.bridge.daemon.runs.cancel(self.handle.run_id, error)
        if self.hang_up is not None:
            self.hang_up()

    def reply(self, task: Task) -> ModelResponse:
        """The task's answer as its client may get it: a reasoning part the gate held
        back (``withheld``) without carriers that hold a loaded credential value, as a
        streamed answer carries it (``shareable_carriers``)."""
        reply = task.reply
        assert reply is not None
        redactor = self.bridge.daemon.runtime.redactor
        parts = tuple(
            replace(part, provider_metadata=shareable_carriers(redactor, part.provider_metadata))
            if isinstance(part, ReasoningPart) and part.withheld is not None
            else part
            for part in reply.parts
        )
        return replace(reply, parts=parts)

    def outcome(self) -> Task:
        """The ended task, or the refusal the client gets for a task that failed."""
        self.settle()
        run = self.handle.run
        task = run.tasks[0]
        if task.status == "done" and task.reply is not None:
            return task
        if task.error is None:
            # Stopped from outside: the daemon shut down, or the run was cancelled.
            raise GatewayFailure(
                503,
                "RUN_INTERRUPTED",
                f"The call's run {run.id} ended {run.status} before it answered; send it again.",
                headers={**self.headers, "Retry-After": "1"},
            )
        code, message = cast("ErrorCode", task.error.code), task.error.message
        if self.missing_carriers and code == "PROVIDER_BAD_REQUEST":
            if self.refused_carriers:
                cause = (
                    f"the gateway did not forward {self.refused_carriers} reasoning part(s) "
                    "the client sent back, since it did not hand them to this client for "
                    f"{self.route.endpoint}/{self.route.model} (made by another model, "
                    "altered or forged), and holds none of its own for them"
                )
            else:
                cause = (
                    "the gateway no longer holds them (it keeps them in memory only: the "
                    "daemon restarted or they expired)"
                )
            raise GatewayFailure(
                409,
                "GATEWAY_CARRIERS_GONE",
                f"{self.route.endpoint} refused the conversation: {self.missing_carriers} "
                "assistant turn(s) with tool calls came back without the reasoning "
                f"carriers the provider needs, and {cause}; start the tool loop again "
                "from the user's message.",
                headers=self.headers,
            )
        if code == "BUDGET_EXCEEDED" and self.client.max_cost is not None:
            # The run's budget is what was left of the client's day.
            raise self.bridge.ledger.day_spent(self.client, message, self.headers)
        headers = self.headers
        if task.error.retry_after_s is not None:
            # The provider's wait, as its client's SDK reads it (whole seconds, rounded up).
            headers["Retry-After"] = str(math.ceil(task.error.retry_after_s))
        raise GatewayFailure(task_error_status(code), code, message, headers=headers)


class Bridge:
    """The gateway's state in one daemon: the carriers it keeps and each client's day."""

    def __init__(self, daemon: Daemon, settings: GatewaySettings) -> None:
        self.daemon = daemon
        self.settings = settings
        self.carriers = CarrierStore(settings.carriers_max, settings.carriers_ttl_s)
        self.ledger = ClientLedger()
        # Made only when a client may see (and so send back) carriers.
        self.provenance = (
            Provenance(
                thoughtline_home(daemon.runtime.environ),
                max_digests=4 * settings.carriers_max,
            )
            if any(
                client.chain_of_thought in SHOWS_REASONING for client in settings.clients.values()
            )
            else None
        )

    async def start(self, client: GatewayClient, call: GatewayCall, route: Route) -> Call:
        """The call's run, started; refusals as :class:`GatewayFailure`."""
        try:
            self.daemon.refuse_new_runs()
        except ApiError as exc:
            raise from_api_error(exc.status, exc.code, exc.message, exc.headers) from None
        if client.max_cost is not None and self.ledger.seeded != (day := today()):
            # Once a UTC day: what the clients' runs spent today, from the store.
            groups = await asyncio.to_thread(self.daemon.store.usage, "client", day_start(day))
            spent: dict[str, float] = {}
            for group in groups:
                spent[group.key] = spent.get(group.key, 0.0) + group.cost
            self.ledger.seed(day, spent)
        left = self.ledger.left_today(client)
        restored = self.carriers.restore(
            client.name,
            call.messages,
            endpoint=route.endpoint,
            model=route.model,
            accepts=self.accepts_for(client),
        )
        choice = call.tool_choice
        turns = ClientTurns(
            system=call.system,
            messages=restored.messages,
            tools=call.tools,
            tool_choice=None if choice is None else ToolChoice(mode=choice.mode, name=choice.name),
            asked=described(call.reasoning),
        )
        options = gateway_options(client, call, route, turns, left_today=left)
        self.ledger.enter(client)
        # Only a stream reads the live events; an answer sent whole is the task's reply.
        forward = _Forward() if call.stream else None
        try:
            built = build_spec(options, "gateway")
            handle = await self.daemon.launch(
                built.spec, explicit_mode=client.chain_of_thought, observer=forward
            )
        except ThoughtlineError as exc:
            self.ledger.leave(client)
            raise GatewayFailure(status_for(exc), exc.code, exc.message) from None
        except ApiError as exc:
            self.ledger.leave(client)
            raise from_api_error(exc.status, exc.code, exc.message, exc.headers) from None
        except BaseException:
            self.ledger.leave(client)
            raise
        started = Call(
            self,
            client,
            route,
            handle,
            restored.missing,
            restored.refused,
            events=asyncio.Queue(self.settings.stream_backlog_max),
        )
        if forward is not None:
            forward.to(started)
        handle.task.add_done_callback(lambda _: started.settle())
        return started

    def accepts_for(self, client: GatewayClient) -> Accepts | None:
        """Whether a reasoning part ``client`` sent back is one the gateway handed it for
        the endpoint and model (:mod:`.provenance`); ``None``: it was handed none."""
        provenance = self.provenance
        if provenance is None or client.chain_of_thought not in SHOWS_REASONING:
            return None
        return partial(provenance.accepts, client.name)


class _Forward:
    """A stream's run observer: events held until the call's queue exists, then put in
    it; a queue its client left full stops the call (:meth:`Call.fell_behind`)."""

    def __init__(self) -> None:
        self.held: list[RunEvent] = []
        self.queue: asyncio.Queue[RunEvent] | None = None
        self.call: Call | None = None

    def __call__(self, event: RunEvent) -> None:
        if self.queue is None:
            self.held.append(event)
            return
        try:
            self.queue.put_nowait(event)  # the queue's own bound check, nothing added
        except asyncio.QueueFull:
            assert self.call is not None
            self.call.fell_behind()
            self.queue.put_nowait(event)

    def to(self, call: Call) -> None:
        self.call, self.queue = call, call.events
        held, self.held = self.held, []
        for event in held:
            self(event)


__all__ = ["MODE_HEADER", "RUN_HEADER", "Bridge", "Call", "is_terminal"]
