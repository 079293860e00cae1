"""thoughtline: run LLM specialist tasks and decide, once, what happens to their reasoning.

Run specialists (the run layer)::

    import thoughtline

    run = thoughtline.run("Design a rate limiter", roles=["architect", "reviewer"],
                          chain_of_thought="surface")
    for task in run.tasks:
        print(task.role, task.output, task.reasoning, task.reasoning_notice)
    print(run.answer)       # the last task's answer, a str (raises if it has none)

Stream a run's live events in synchronous code (a script, a notebook)::

    with thoughtline.stream("Design a cache", chain_of_thought="surface") as events:
        for event in events:
            if isinstance(event, thoughtline.TaskAnswerDelta):
                print(event.text, end="", flush=True)
    print(events.run.answer)

Watch a run's live events (a closed union; match them, ending with ``assert_never``)::

    async with thoughtline.Orchestrator.open() as orchestrator:
        handle = orchestrator.start("Design a cache", roles=["architect"])
        async for event in handle:
            match event:
                case thoughtline.TaskAnswerDelta(text=text):
                    print(text, end="")
                case _:
                    pass
        run = await handle

Hold a conversation (each request continues the run before it)::

    with thoughtline.Conversation() as chat:
        first = chat.send("Design a rate limiter", roles=["architect"])
        second = chat.send("Now make it shorter")   # sent turn 1 too

Call one model (the provider layer)::

    from thoughtline import EndpointRegistry, ModelRequest, ProviderClient, ReasoningRequest

    endpoint = EndpointRegistry().resolve("anthropic")
    async with ProviderClient(endpoint) as client:
        request = ModelRequest.simple("claude-sonnet-4-6", "Why is the sky blue?",
                                      reasoning=ReasoningRequest(enabled=True, effort="low"))
        async with client.call(request) as call:
            async for event in call:          # a StreamEvent
                ...
        call.response.reasoning_parts         # kinds, text, signatures kept byte-for-byte
        call.exchange                         # redacted request/response + timings

Public names (everything else lives in its module and may change):

Runs
    run                   run a request to its end, synchronously, and return the Run
                          (works in a Jupyter cell too); run.answer is the answer as str
    stream                start a run and iterate its live events synchronously (a
                          RunStream: for event in stream, then stream.run)
    Orchestrator          config + store + runtime: start, status, runs, trace, purge
    RunHandle             one run executing: await it, iterate its events, cancel it
    RunStream             one run's live events for a plain for loop, then .run
    Conversation          runs that follow one another, synchronously: send() -> Run
    AsyncConversation     the same on the event loop (Orchestrator.conversation())
    RunEvent              one live event of a run: the closed union listed below
    PurgeReport           what Orchestrator.purge removed, per trace layer
    RunSpec               a request and its tasks (what a plan file holds)
    TaskSpec              one task of a RunSpec: role, endpoint, model, effort, after
    load_plan             read and validate a TOML plan file into a RunSpec
    Run                   a run as stored: status, mode and its source, tasks
    Task                  one task: output, reasoning (when shown), status and notice
    TaskError             why a task failed: stable code, message, retryable
    TaskUsage             token counts of a task (None: not reported)
    TaskTimings           when a task started and finished, first reasoning/answer times
    ReasoningPartView     one displayed part of reasoning: kind and text
    TraceEvent            one record of the layered trace (answer/reasoning/provider_raw)
    RunSnapshot           the thoughtline.run/v1 JSON of a run (a typed dict), as printed
    TaskSnapshot          one task inside a RunSnapshot (a typed dict)
    ChainOfThought        the disclosure modes: hidden, surface, telemetry_only, ...
    WorkerBackend         provider (calls the model) or inline (prepares prompts only)
    RunStatus             planned, running, completed, ..., cancelled, interrupted
    TaskStatus            queued, running, done, prepared, failed, cancelled, interrupted
    ReasoningStatus       shown, recorded, not_requested, not_returned, ...
    TraceLayer            answer, reasoning, provider_raw
    tool                  mark a Python function as a tool (name, description, destructive);
                          any function may go in tools=[...] of run / Orchestrator.start

Run events (the closed union a RunHandle yields; match them, ending with assert_never)
    RunStarted            the run began executing (the planned snapshot)
    TaskStarted           a task began (the task as in the snapshot)
    TaskAnswerDelta       answer text of one task arrived
    TaskReasoningDelta    reasoning text of one task arrived (only when its mode shows it)
    TaskToolCallStarted    a task's model called a tool (server, tool, arguments)
    TaskToolCallCompleted  the tool call ended (status, result preview)
    TaskStepPriced        a running task's step was priced (the task's cost so far)
    ToolServerStart       an MCP server the run needs is starting, ready or failed
    TaskCompleted         a task ended, in its final state
    RunCompleted          the run ended completed (with failures, or prepare-only)
    RunFailed             the run ended failed
    RunCancelled          the run was cancelled; what arrived is kept
    RunInterrupted        the run was interrupted (shutdown, or its process died)

Configuration
    Config                the validated thoughtline.toml
    load_config           find, read and validate the config file

Errors
    ThoughtlineError      base of every error thoughtline raises: code, message, retryable
    ConfigError           a config or plan file, key or value is wrong (CONFIG_INVALID)
    ProviderError         a provider call failed (status, request id, retry-after)
    UnknownEndpointError  no endpoint with that name (ENDPOINT_UNKNOWN)
    ErrorCode             every stable error code

Providers
    ProviderClient        calls one endpoint: streaming, retries, timeouts, redaction
    ProviderCall          one call: iterate its events, then read response and exchange
    EndpointRegistry      the built-in and configured endpoints, resolved by name
    Endpoint              one resolved endpoint: base URL, credential, wire API
    EndpointSettings      a [providers.NAME] table: overrides for an endpoint
    RetryPolicy           how retryable failures are retried (attempts, backoff)
    Timeouts              connect, read (silence between bytes), total per call
    ModelCapability       what a model supports and how reasoning is requested
    builtin_capabilities  the built-in model capability table
    Exchange              a call's redacted request and response, with timings
    ModelRequest          what is sent: model, system, messages, reasoning, tools
    ReasoningRequest      whether reasoning is asked for, and the effort
    Effort                provider-default, none, minimal, low, medium, high, xhigh, max
    Message               one message of a request: its role and ordered parts
    ToolSpec              a tool the model may call
    ModelResponse         the accumulated result of a call: text, reasoning, usage, finish
    Part                  any part of a message: text, reasoning, tool call, tool result
    TextPart              text written by the user or the model
    ReasoningPart         one part of reasoning as it arrived, signatures byte-for-byte
    ToolCall              one tool call the model made (a ToolCallPart)
    ToolCallPart          a tool call as a part of a message
    ToolResultPart        what a tool call returned, sent back to the model

Stream events (the closed union a provider call yields)
    StreamEvent           the union of the events below
    ResponseStarted       the provider accepted the call (response id, model)
    ReasoningStart        a reasoning part begins (its kind)
    ReasoningDelta        reasoning text arrived
    ReasoningEnd          a reasoning part ended (signature kept byte-for-byte)
    ReasoningKind         summary, raw, redacted, encrypted
    TextStart             an answer part begins
    TextDelta             answer text arrived
    TextEnd               an answer part ended
    ToolCallStart         a tool call begins (id, name)
    ToolCallDelta         tool-call arguments arrived
    ToolCallEnd           a tool call ended
    Usage                 token counts (None: not reported, never 0)
    Finish                the normalized finish reason
    StreamWarning         something unsupported or unexpected, reported not dropped
    StreamError           the call ended with an error (stable code, retryable)
"""

from typing import TYPE_CHECKING

from thoughtline.errors import (
    ConfigError,
    ErrorCode,
    ProviderError,
    ThoughtlineError,
    UnknownEndpointError,
)

# Light modules (dataclasses and Literals only) are imported eagerly; everything that
# pulls in the HTTP client, asyncio or the runtime is imported on first use.
from thoughtline.model.accumulator import ModelResponse, ReasoningPart, ToolCall
from thoughtline.model.events import (
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningKind,
    ReasoningStart,
    ResponseStarted,
    StreamError,
    StreamEvent,
    StreamWarning,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from thoughtline.model.parts import Part, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Effort, Message, ModelRequest, ReasoningRequest, ToolSpec
from thoughtline.records import (
    ChainOfThought,
    ReasoningPartView,
    ReasoningStatus,
    Run,
    RunSnapshot,
    RunStatus,
    Task,
    TaskError,
    TaskSnapshot,
    TaskStatus,
    TaskTimings,
    TaskUsage,
    TraceEvent,
    TraceLayer,
    WorkerBackend,
)
from thoughtline.records.run_events import (
    RunCancelled,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunInterrupted,
    RunStarted,
    TaskAnswerDelta,
    TaskCompleted,
    TaskReasoningDelta,
    TaskStarted,
    TaskStepPriced,
    TaskToolCallCompleted,
    TaskToolCallStarted,
    ToolServerStart,
)

if TYPE_CHECKING:
    from thoughtline.api.chat import AsyncConversation, Conversation
    from thoughtline.api.orchestrator import Orchestrator, PurgeReport, RunHandle, run
    from thoughtline.api.run_stream import RunStream, stream
    from thoughtline.config import Config, load_config
    from thoughtline.providers.capabilities import ModelCapability, builtin_capabilities
    from thoughtline.providers.client import ProviderCall, ProviderClient, RetryPolicy, Timeouts
    from thoughtline.providers.endpoints import Endpoint, EndpointRegistry, EndpointSettings
    from thoughtline.providers.exchange import Exchange
    from thoughtline.runtime.planning.plan import RunSpec, TaskSpec, load_plan
    from thoughtline.tools.python_tools import tool

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "AsyncConversation": "thoughtline.api.chat",
    "Conversation": "thoughtline.api.chat",
    "Config": "thoughtline.config",
    "load_config": "thoughtline.config",
    "Orchestrator": "thoughtline.api.orchestrator",
    "PurgeReport": "thoughtline.api.orchestrator",
    "RunHandle": "thoughtline.api.orchestrator",
    "run": "thoughtline.api.orchestrator",
    "RunStream": "thoughtline.api.run_stream",
    "stream": "thoughtline.api.run_stream",
    "ModelCapability": "thoughtline.providers.capabilities",
    "builtin_capabilities": "thoughtline.providers.capabilities",
    "ProviderCall": "thoughtline.providers.client",
    "ProviderClient": "thoughtline.providers.client",
    "RetryPolicy": "thoughtline.providers.client",
    "Timeouts": "thoughtline.providers.client",
    "Endpoint": "thoughtline.providers.endpoints",
    "EndpointRegistry": "thoughtline.providers.endpoints",
    "EndpointSettings": "thoughtline.providers.endpoints",
    "Exchange": "thoughtline.providers.exchange",
    "RunSpec": "thoughtline.runtime.planning.plan",
    "TaskSpec": "thoughtline.runtime.planning.plan",
    "load_plan": "thoughtline.runtime.planning.plan",
    "tool": "thoughtline.tools.python_tools",
}


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'thoughtline' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module_name), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "AsyncConversation",
    "ChainOfThought",
    "Config",
    "ConfigError",
    "Conversation",
    "Effort",
    "Endpoint",
    "EndpointRegistry",
    "EndpointSettings",
    "ErrorCode",
    "Exchange",
    "Finish",
    "Message",
    "ModelCapability",
    "ModelRequest",
    "ModelResponse",
    "Orchestrator",
    "Part",
    "ProviderCall",
    "ProviderClient",
    "ProviderError",
    "PurgeReport",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningKind",
    "ReasoningPart",
    "ReasoningPartView",
    "ReasoningRequest",
    "ReasoningStart",
    "ReasoningStatus",
    "ResponseStarted",
    "RetryPolicy",
    "Run",
    "RunCancelled",
    "RunCompleted",
    "RunEvent",
    "RunFailed",
    "RunHandle",
    "RunInterrupted",
    "RunSnapshot",
    "RunSpec",
    "RunStarted",
    "RunStatus",
    "RunStream",
    "StreamError",
    "StreamEvent",
    "StreamWarning",
    "Task",
    "TaskAnswerDelta",
    "TaskCompleted",
    "TaskError",
    "TaskReasoningDelta",
    "TaskSnapshot",
    "TaskSpec",
    "TaskStarted",
    "TaskStatus",
    "TaskStepPriced",
    "TaskTimings",
    "TaskToolCallCompleted",
    "TaskToolCallStarted",
    "TaskUsage",
    "TextDelta",
    "TextEnd",
    "TextPart",
    "TextStart",
    "ThoughtlineError",
    "Timeouts",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallPart",
    "ToolCallStart",
    "ToolResultPart",
    "ToolServerStart",
    "ToolSpec",
    "TraceEvent",
    "TraceLayer",
    "UnknownEndpointError",
    "Usage",
    "WorkerBackend",
    "builtin_capabilities",
    "load_config",
    "load_plan",
    "run",
    "stream",
    "tool",
]
