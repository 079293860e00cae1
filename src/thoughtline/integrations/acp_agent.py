"""``thoughtline acp``: thoughtline as an Agent Client Protocol (ACP) agent over stdio.

Every ``acp`` import of thoughtline lives in this module (the ``[acp]`` extra). The agent
calls the public runtime API only (``Runtime.prepare`` / ``execute`` / ``cancel``) and
contains no disclosure logic: it forwards the ``reasoning.delta`` events the runtime emits
(only for tasks whose mode displays reasoning) and renders ``task.reasoning_notice``
whenever ``task.reasoning`` is null.

Sessions
    ``session/new`` creates a session whose prompts run with: a ``chain_of_thought`` mode,
    roles (one concurrent task per role, ``engineer`` when none), provider, model and
    effort. Defaults come from ``thoughtline acp``'s flags, then the config file. A client
    sets them per session in three ways:

    * ``_meta.thoughtline`` on ``session/new``: ``{"chain_of_thought": "surface",
      "roles": ["architect", "reviewer"], "provider": "anthropic", "model": "...",
      "effort": "low"}`` (every key optional; unknown keys and bad values are errors);
    * session modes (chosen because ACP has them for exactly this: a per-session
      operating mode the client's UI can offer): ``session/new`` returns ``modes`` with the
      four ``chain_of_thought`` values as mode ids, and ``session/set_mode`` switches;
    * session config options (the newer ACP mechanism that is meant to replace modes; we
      offer both, as the protocol recommends during the transition): ``chain_of_thought``
      (category ``mode``) and ``effort`` (category ``thought_level``), changed with
      ``session/set_config_option``. The two stay in sync: a mode set through one is
      announced through the other (``config_option_update`` / ``current_mode_update``).

    A mode chosen in any of these ways is the run's *explicit* mode. A session where no
    mode was chosen leaves the decision to the config (``chain_of_thought_by_role`` and
    ``orchestration.chain_of_thought``), exactly like ``thoughtline run`` without the flag;
    its ``currentModeId`` shows the configured default. Changes apply to the next prompt.

A prompt turn
    The prompt's text blocks (and resource links, as ``name: uri`` lines) become the run's
    request. A client sees, for a one-task run::

        tool_call            {toolCallId: task id, title: "engineer · deepseek:deepseek-reasoner",
                              kind: "think", status: "in_progress", rawInput: {...}}
        agent_thought_chunk  reasoning text, one per reasoning.delta (display modes only)
        agent_message_chunk  answer text, one per answer.delta
        agent_message_chunk  "ⓘ <reasoning_notice>"   (only when task.reasoning is null)
        agent_message_chunk  "✗ CODE: message"         (only when the task failed)
        tool_call_update     {status: "completed" | "failed", content: [summary text],
                              rawOutput: the task as in the thoughtline.run/v1 snapshot}
        -> session/prompt result {stopReason, _meta: {thoughtline: {run_id, status}}}

    With several tasks their streams interleave, so a heading chunk ``**role · provider:model**``
    is sent whenever the task speaking in a stream (message or thought) changes. A task that
    never started (its dependency failed, or the run was cancelled first) is announced with
    ``tool_call`` status ``pending`` right before its final ``tool_call_update``. Cancelled
    tasks end ``failed`` (ACP has no cancelled tool-call status) with a summary that says so.

    The reasoning notice goes out as an ``agent_message_chunk`` line, not as tool-call
    content: it is a sentence for the person reading the answer, and message chunks are
    what every client renders in the conversation, while tool-call content is often
    collapsed or not shown at all. The tool call's content is a one-line summary
    (status, tokens, duration, error).

Stop reasons
    ``cancelled`` when the client sent ``session/cancel`` during the turn (as the protocol
    requires, even if the run finished meanwhile) or the run ended cancelled/interrupted;
    when every task failed: ``refusal`` if a provider's content filter stopped a task,
    ``max_tokens`` if a model spent its output budget on reasoning
    (``PROVIDER_REASONING_ONLY``); otherwise ``end_turn``. Provider failures (auth, rate
    limits, server errors) end the turn with ``end_turn``: ACP v1 has no error stop reason,
    and a JSON-RPC error would make clients discard what was streamed; the failure is
    visible as a ``failed`` tool call, a ``✗`` line, and ``_meta.thoughtline.status``.

Errors
    Bad requests are JSON-RPC errors, never a crash: unknown session id, unknown mode,
    config option or value, bad ``_meta.thoughtline``, unsupported prompt content, a
    second prompt while one runs, and anything ``Runtime.prepare`` rejects (unknown role
    or provider, missing key) are ``-32602``/``-32600`` with one clear sentence and the
    thoughtline error ``code`` in ``data``; malformed params are ``-32602`` from the schema
    validation; unknown methods ``-32601``.

stdio
    stdout carries only protocol frames: on POSIX the protocol writes to a duplicate of
    file descriptor 1, and descriptor 1 and ``sys.stdout`` are pointed at stderr, so a
    stray print cannot corrupt the stream. Logs go to stderr. When stdin closes (or on
    SIGTERM/SIGINT) running runs end ``interrupted`` and the process exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias, cast

from acp import PROTOCOL_VERSION, RequestError, stdio_streams
from acp.core import AgentSideConnection
from acp.interfaces import Agent, Client
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AgentThoughtChunk,
    AudioContentBlock,
    ClientCapabilities,
    ConfigOptionUpdate,
    ContentToolCallContent,
    CurrentModeUpdate,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    StopReason,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolKind,
)

from thoughtline import __version__
from thoughtline.errors import ThoughtlineError
from thoughtline.records import CHAIN_OF_THOUGHT_MODES, Run, new_id
from thoughtline.requests import EFFORTS
from thoughtline.runtime.disclosure import check_mode
from thoughtline.runtime.plan import spec_from_roles
from thoughtline.runtime.runner import RunEvent, Runtime

__all__ = [
    "SessionSettings",
    "ThoughtlineAcpAgent",
    "TurnRenderer",
    "run_stdio_agent",
    "serve",
    "stop_reason",
    "validate_settings",
]

logger = logging.getLogger(__name__)

SessionUpdate: TypeAlias = (
    AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | CurrentModeUpdate
    | ConfigOptionUpdate
)
PromptBlock: TypeAlias = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
Stream: TypeAlias = Literal["message", "thought"]

SUPPORTED_PROTOCOL_VERSIONS: frozenset[int] = frozenset({PROTOCOL_VERSION})
META_KEY = "thoughtline"
SETTING_KEYS = ("chain_of_thought", "roles", "provider", "model", "effort")
MODE_OPTION = "chain_of_thought"
EFFORT_OPTION = "effort"
STDIO_BUFFER_LIMIT = 50 * 1024 * 1024  # one JSON-RPC frame per line; prompts can be large
SHUTDOWN_GRACE_S = 5.0

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

# What each mode means, for the client's mode picker (a description, not a rendering rule).
MODE_LABELS: Mapping[str, tuple[str, str]] = {
    "hidden": ("Hidden", "Reasoning is not requested from the model."),
    "surface": (
        "Surface",
        "Reasoning is requested and shown here; it is not written to the trace.",
    ),
    "telemetry_only": (
        "Telemetry only",
        "Reasoning is requested and written to the trace only; it is not shown here.",
    ),
    "surface_and_telemetry": (
        "Surface and telemetry",
        "Reasoning is requested, shown here, and written to the trace.",
    ),
}


def _invalid_params(message: str, **data: Any) -> RequestError:
    return RequestError(INVALID_PARAMS, message, data or None)


def _from_thoughtline(exc: ThoughtlineError) -> RequestError:
    return _invalid_params(exc.message, code=exc.code)


# -- session settings ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSettings:
    """What a session's prompts run with. ``chain_of_thought`` is ``None`` until someone
    chooses a mode: then the config decides (per role, then globally), as it does for
    ``thoughtline run`` without ``--chain-of-thought``."""

    chain_of_thought: str | None = None
    roles: tuple[str, ...] = ()
    provider: str | None = None
    model: str | None = None
    effort: str | None = None

    def with_meta(self, meta: object) -> SessionSettings:
        """These settings overridden by a ``_meta.thoughtline`` object (strictly checked)."""
        if meta is None:
            return self
        where = f"_meta.{META_KEY}"
        if not isinstance(meta, Mapping):
            raise _invalid_params(
                f"{where} must be an object with keys {', '.join(SETTING_KEYS)}.",
                code="SESSION_SETTINGS_INVALID",
            )
        unknown = sorted(str(key) for key in meta if key not in SETTING_KEYS)
        if unknown:
            raise _invalid_params(
                f"{where}: unknown key(s) {', '.join(unknown)}. Allowed keys: {', '.join(SETTING_KEYS)}.",
                code="SESSION_SETTINGS_INVALID",
            )
        settings = self
        if "chain_of_thought" in meta:
            settings = replace(settings, chain_of_thought=_mode(meta["chain_of_thought"], where))
        if "roles" in meta:
            roles = meta["roles"]
            if not isinstance(roles, list) or not all(
                isinstance(role, str) and role for role in roles
            ):
                raise _invalid_params(
                    f"{where}.roles must be a list of role names.", code="SESSION_SETTINGS_INVALID"
                )
            settings = replace(settings, roles=tuple(roles))
        if "provider" in meta:
            settings = replace(settings, provider=_name(meta["provider"], f"{where}.provider"))
        if "model" in meta:
            settings = replace(settings, model=_name(meta["model"], f"{where}.model"))
        if "effort" in meta:
            settings = replace(settings, effort=_effort(meta["effort"], f"{where}.effort"))
        return settings


def _name(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _invalid_params(
            f"{where} must be a non-empty string.", code="SESSION_SETTINGS_INVALID"
        )
    return value


def _mode(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise _invalid_params(
            f"{where}: chain_of_thought must be one of {', '.join(CHAIN_OF_THOUGHT_MODES)}.",
            code="CHAIN_OF_THOUGHT_UNKNOWN",
        )
    try:
        return check_mode(value, where)
    except ThoughtlineError as exc:
        raise _from_thoughtline(exc) from None


def _effort(value: object, where: str) -> str:
    if not isinstance(value, str) or value not in EFFORTS:
        raise _invalid_params(
            f"{where}: unknown effort {value!r}. Allowed values: {', '.join(EFFORTS)}.",
            code="EFFORT_UNKNOWN",
        )
    return value


def validate_settings(runtime: Runtime, settings: SessionSettings) -> None:
    """Fail early (``ThoughtlineError``) on a role or provider the runtime does not know,
    so a session cannot be created that every prompt would reject."""
    for role in settings.roles:
        runtime.roles.get(role)
    if settings.provider is not None:
        runtime.registry.resolve(settings.provider)


# -- rendering run events as session updates --------------------------------------------


def _title(task: Mapping[str, Any]) -> str:
    return f"{task['role']} · {task['provider']}:{task['model']}"


def _text_block(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _summary(task: Mapping[str, Any]) -> str:
    """One line for the tool call's content: status, tokens, duration, error."""
    parts = [str(task["status"])]
    usage = task.get("usage") or {}
    tokens = [
        f"{usage[key]} {label}"
        for key, label in (
            ("input_tokens", "input"),
            ("output_tokens", "output"),
            ("reasoning_tokens", "reasoning"),
        )
        if usage.get(key) is not None
    ]
    if tokens:
        parts.append(", ".join(tokens) + " tokens")
    total_ms = (task.get("timings") or {}).get("total_ms")
    if total_ms is not None:
        parts.append(f"{total_ms / 1000:.1f} s")
    if task["status"] in ("cancelled", "interrupted"):
        parts.append("what arrived is kept")
    error = task.get("error")
    if error:
        parts.append(f"{error['code']}: {error['message']}")
    return " · ".join(parts)


class TurnRenderer:
    """Turns one run's live events into ACP session updates. Pure (no I/O), so the
    mapping is testable on its own; it renders what the events carry and nothing else."""

    def __init__(self) -> None:
        self.titles: dict[str, str] = {}
        self.several = False
        self.kind: ToolKind = "think"
        self.announced: set[str] = set()
        self.speaker: dict[Stream, str | None] = {"message": None, "thought": None}
        self.written: dict[Stream, bool] = {"message": False, "thought": False}

    def render(self, event: RunEvent) -> list[SessionUpdate]:
        data = event.data
        match event.type:
            case "run.started":
                tasks = data.get("tasks", [])
                self.several = len(tasks) > 1
                self.titles = {task["id"]: _title(task) for task in tasks}
                # Inline runs call no model: nothing "thinks".
                self.kind = "think" if data.get("worker_backend") == "provider" else "other"
                return []
            case "task.started":
                return [self._announce(data, "in_progress")]
            case "answer.delta" if event.task_id is not None:
                return self._chunks("message", event.task_id, str(data.get("text", "")))
            case "reasoning.delta" if event.task_id is not None:
                return self._chunks("thought", event.task_id, str(data.get("text", "")))
            case "task.completed":
                return self._completed(data)
            case _:  # run.completed/failed/cancelled/interrupted: the prompt result says it
                return []

    def _announce(self, task: Mapping[str, Any], status: ToolCallStatus) -> ToolCallStart:
        task_id = str(task["id"])
        self.announced.add(task_id)
        self.titles.setdefault(task_id, _title(task))
        return ToolCallStart(
            session_update="tool_call",
            tool_call_id=task_id,
            title=self.titles[task_id],
            kind=self.kind,
            status=status,
            raw_input={
                key: task.get(key)
                for key in ("name", "role", "provider", "model", "effort", "chain_of_thought")
            },
        )

    def _chunks(
        self, stream: Stream, task_id: str, text: str, *, paragraph: bool = False
    ) -> list[SessionUpdate]:
        if not text:
            return []
        updates: list[SessionUpdate] = []
        if self.several and self.speaker[stream] != task_id:
            lead = "\n\n" if self.written[stream] else ""
            title = self.titles.get(task_id, task_id)
            updates.append(self._chunk(stream, f"{lead}**{title}**\n\n"))
        elif paragraph and self.written[stream]:
            text = f"\n\n{text}"
        self.speaker[stream] = task_id
        self.written[stream] = True
        updates.append(self._chunk(stream, text))
        return updates

    @staticmethod
    def _chunk(stream: Stream, text: str) -> AgentMessageChunk | AgentThoughtChunk:
        if stream == "thought":
            return AgentThoughtChunk(
                session_update="agent_thought_chunk", content=_text_block(text)
            )
        return AgentMessageChunk(session_update="agent_message_chunk", content=_text_block(text))

    def _completed(self, task: Mapping[str, Any]) -> list[SessionUpdate]:
        task_id = str(task["id"])
        updates: list[SessionUpdate] = []
        if task_id not in self.announced:
            updates.append(self._announce(task, "pending"))
        notice = task.get("reasoning_notice")
        if task.get("reasoning") is None and notice:
            updates += self._chunks("message", task_id, f"ⓘ {notice}", paragraph=True)
        error = task.get("error")
        if error:
            line = f"✗ {error['code']}: {error['message']}"
            updates += self._chunks("message", task_id, line, paragraph=True)
        status: ToolCallStatus = "completed" if task["status"] in ("done", "prepared") else "failed"
        updates.append(
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=task_id,
                status=status,
                content=[
                    ContentToolCallContent(type="content", content=_text_block(_summary(task)))
                ],
                raw_output=dict(task),
            )
        )
        return updates


def stop_reason(run: Run, *, cancel_requested: bool) -> StopReason:
    """The ACP stop reason for a finished run (see the module docstring for why)."""
    if cancel_requested or run.status in ("cancelled", "interrupted"):
        return "cancelled"
    if run.status == "failed":
        codes = {task.error.code for task in run.tasks if task.error is not None}
        if "PROVIDER_CONTENT_FILTERED" in codes:
            return "refusal"
        if "PROVIDER_REASONING_ONLY" in codes:
            return "max_tokens"
    return "end_turn"


# -- the agent -------------------------------------------------------------------------


class _Turn:
    """One prompt's run: renders its events and sends them, in order, on the connection."""

    def __init__(self, client: Client | None, session_id: str, run: Run) -> None:
        self.client = client
        self.session_id = session_id
        self.run_id = run.id
        self.cancel_requested = False
        self.handler = asyncio.current_task()
        self.renderer = TurnRenderer()
        self._queue: asyncio.Queue[SessionUpdate | None] = asyncio.Queue()
        self._sender = asyncio.ensure_future(self._send_all())

    def observe(self, event: RunEvent) -> None:
        """The runtime's observer (synchronous, on the event loop): queue, never block."""
        for update in self.renderer.render(event):
            self._queue.put_nowait(update)

    async def _send_all(self) -> None:
        connected = self.client is not None
        while (update := await self._queue.get()) is not None:
            if not connected or self.client is None:
                continue
            try:
                await self.client.session_update(session_id=self.session_id, update=update)
            except OSError as exc:  # the client went away; the run still ends and is stored
                logger.warning("session %s: cannot send updates (%s)", self.session_id, exc)
                connected = False

    async def finish(self) -> None:
        """Send everything queued; the prompt's result must come after its updates."""
        self._queue.put_nowait(None)
        await self._sender

    def abort(self) -> None:
        self._sender.cancel()


@dataclass(slots=True)
class _Session:
    id: str
    cwd: str
    settings: SessionSettings
    turn: _Turn | None = None


class ThoughtlineAcpAgent:
    """The ACP ``Agent``: sessions, prompts as runs, cancellation. One per connection; all
    sessions share one ``Runtime`` (one per process)."""

    def __init__(self, runtime: Runtime, defaults: SessionSettings | None = None) -> None:
        self.runtime = runtime
        self.defaults = defaults or SessionSettings()
        self.client: Client | None = None
        self.sessions: dict[str, _Session] = {}

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    # -- initialization ----------------------------------------------------------------
    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        # The client's version when we speak it, else the latest we do (the client then
        # decides whether to continue).
        version = (
            protocol_version
            if protocol_version in SUPPORTED_PROTOCOL_VERSIONS
            else max(SUPPORTED_PROTOCOL_VERSIONS)
        )
        return InitializeResponse(
            protocol_version=version,
            agent_capabilities=AgentCapabilities(
                load_session=False,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=False
                ),
            ),
            auth_methods=[],
            agent_info=Implementation(name="thoughtline", title="thoughtline", version=__version__),
        )

    # -- sessions ----------------------------------------------------------------------
    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: Sequence[object] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        settings = self.defaults.with_meta(kwargs.get(META_KEY))
        try:
            validate_settings(self.runtime, settings)
        except ThoughtlineError as exc:
            raise _from_thoughtline(exc) from None
        if mcp_servers:
            logger.info(
                "ignoring %d MCP server(s): thoughtline tasks use no tools", len(mcp_servers)
            )
        session = _Session(id=new_id("sess"), cwd=cwd, settings=settings)
        self.sessions[session.id] = session
        return NewSessionResponse(
            session_id=session.id,
            modes=self._modes(session),
            config_options=self._config_options(session),
        )

    def _session(self, session_id: str) -> _Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise _invalid_params(
                f"Unknown session {session_id!r}: create one with session/new.",
                code="SESSION_UNKNOWN",
                sessionId=session_id,
            )
        return session

    def _current_mode(self, session: _Session) -> str:
        return session.settings.chain_of_thought or self.runtime.config.chain_of_thought

    def _current_effort(self, session: _Session) -> str:
        return session.settings.effort or self.runtime.config.default_effort

    def _modes(self, session: _Session) -> SessionModeState:
        return SessionModeState(
            current_mode_id=self._current_mode(session),
            available_modes=[
                SessionMode(id=mode, name=MODE_LABELS[mode][0], description=MODE_LABELS[mode][1])
                for mode in CHAIN_OF_THOUGHT_MODES
            ],
        )

    def _config_options(
        self, session: _Session
    ) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        return [
            SessionConfigOptionSelect(
                type="select",
                id=MODE_OPTION,
                name="Chain of thought",
                description="What happens to the model's reasoning.",
                category="mode",
                current_value=self._current_mode(session),
                options=[
                    SessionConfigSelectOption(
                        value=mode, name=MODE_LABELS[mode][0], description=MODE_LABELS[mode][1]
                    )
                    for mode in CHAIN_OF_THOUGHT_MODES
                ],
            ),
            SessionConfigOptionSelect(
                type="select",
                id=EFFORT_OPTION,
                name="Effort",
                description="How hard the model should think (separate from disclosure).",
                category="thought_level",
                current_value=self._current_effort(session),
                options=[
                    SessionConfigSelectOption(value=effort, name=effort) for effort in EFFORTS
                ],
            ),
        ]

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        session = self._session(session_id)
        mode = _mode(mode_id, "session/set_mode modeId")
        session.settings = replace(session.settings, chain_of_thought=mode)
        await self._notify(
            session.id,
            ConfigOptionUpdate(
                session_update="config_option_update",
                config_options=self._config_options(session),
            ),
        )
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        where = f"session/set_config_option {config_id}"
        if config_id == MODE_OPTION:
            mode = _mode(value, where)
            session.settings = replace(session.settings, chain_of_thought=mode)
            await self._notify(
                session.id,
                CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode),
            )
        elif config_id == EFFORT_OPTION:
            session.settings = replace(session.settings, effort=_effort(value, where))
        else:
            raise _invalid_params(
                f"Unknown config option {config_id!r}. Options: {MODE_OPTION}, {EFFORT_OPTION}.",
                code="CONFIG_OPTION_UNKNOWN",
            )
        return SetSessionConfigOptionResponse(config_options=self._config_options(session))

    async def _notify(self, session_id: str, update: SessionUpdate) -> None:
        if self.client is not None:
            await self.client.session_update(session_id=session_id, update=update)

    # -- prompts -----------------------------------------------------------------------
    async def prompt(
        self, prompt: list[PromptBlock], session_id: str, **kwargs: Any
    ) -> PromptResponse:
        session = self._session(session_id)
        if session.turn is not None:
            raise RequestError(
                INVALID_REQUEST,
                f"Session {session_id!r} is already running a prompt; wait for its result "
                "or send session/cancel.",
                {"code": "SESSION_BUSY", "sessionId": session_id},
            )
        settings = session.settings
        spec = spec_from_roles(
            _request_text(prompt),
            list(settings.roles),
            provider=settings.provider,
            model=settings.model,
            effort=settings.effort,
        )
        try:
            run = self.runtime.prepare(spec, explicit_mode=settings.chain_of_thought)
        except ThoughtlineError as exc:
            raise _from_thoughtline(exc) from None
        turn = _Turn(self.client, session.id, run)
        session.turn = turn
        try:
            # execute() registers the run before its first await, so a session/cancel
            # handled from here on always finds it.
            final = await self.runtime.execute(run, observer=turn.observe)
        except BaseException:
            turn.abort()
            raise
        finally:
            session.turn = None
        await turn.finish()
        return PromptResponse(
            stop_reason=stop_reason(final, cancel_requested=turn.cancel_requested),
            field_meta={META_KEY: {"run_id": final.id, "status": final.status}},
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """``session/cancel`` is a notification: nothing to answer, so problems are logged."""
        session = self.sessions.get(session_id)
        if session is None:
            logger.warning("session/cancel for unknown session %r ignored", session_id)
            return
        turn = session.turn
        if turn is None:
            return
        turn.cancel_requested = True
        self.runtime.cancel(turn.run_id)

    # -- shutdown ----------------------------------------------------------------------
    async def shutdown(self) -> None:
        """The process is ending: running runs end ``interrupted`` (kept, not lost) and
        their prompts get their results, within a bounded wait."""
        self.runtime.interrupt_all()
        handlers = [
            session.turn.handler
            for session in self.sessions.values()
            if session.turn is not None and session.turn.handler is not None
        ]
        if handlers:
            await asyncio.wait(handlers, timeout=SHUTDOWN_GRACE_S)


def _request_text(blocks: Sequence[PromptBlock]) -> str:
    """The run's request: text blocks, and resource links as ``name: uri`` lines."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"{block.name}: {block.uri}")
        else:
            raise _invalid_params(
                f"This agent accepts text and resource links only, not {block.type!r} content.",
                code="PROMPT_CONTENT_UNSUPPORTED",
            )
    text = "\n\n".join(part for part in parts if part.strip())
    if not text:
        raise _invalid_params("The prompt has no text to run.", code="PROMPT_EMPTY")
    return text


# -- stdio -----------------------------------------------------------------------------


async def serve(
    runtime: Runtime,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    defaults: SessionSettings | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve one client on the given streams until it disconnects or ``stop`` is set."""
    agent = ThoughtlineAcpAgent(runtime, defaults)
    # The agent implements the methods it supports; the router answers -32601 for the
    # rest (session/load, session/list, ...), which the capabilities do not advertise.
    connection = AgentSideConnection(cast(Agent, agent), writer, reader, listening=False)
    listening = asyncio.ensure_future(connection.listen())
    stopping = asyncio.ensure_future((stop or asyncio.Event()).wait())
    try:
        await asyncio.wait({listening, stopping}, return_when=asyncio.FIRST_COMPLETED)
        await agent.shutdown()
    finally:
        stopping.cancel()
        listening.cancel()
        await asyncio.gather(listening, stopping, return_exceptions=True)
        await connection.close()


async def _protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """stdin/stdout as asyncio streams, with stdout reserved for protocol frames."""
    if os.name == "nt":  # no pipe transports for the console there: the package's helper
        return await stdio_streams(limit=STDIO_BUFFER_LIMIT)
    loop = asyncio.get_running_loop()
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray writes to fd 1 reach stderr
    sys.stdout = sys.stderr
    reader = asyncio.StreamReader(limit=STDIO_BUFFER_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, protocol_out
    )
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def _serve_stdio(runtime: Runtime, defaults: SessionSettings | None) -> None:
    reader, writer = await _protocol_streams()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # no signal support
            loop.add_signal_handler(signum, stop.set)
    await serve(runtime, reader, writer, defaults=defaults, stop=stop)


def run_stdio_agent(runtime: Runtime, defaults: SessionSettings | None = None) -> None:
    """Run the agent on this process's stdin/stdout until the client disconnects. Takes
    over the process's stdout (see the module docstring)."""
    asyncio.run(_serve_stdio(runtime, defaults))
