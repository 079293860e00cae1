"""The ACP ``Agent``: sessions as conversations (new and loaded), prompts as runs,
cancellation and shutdown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    ClientCapabilities,
    CloseSessionResponse,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    ToolCallProgress,
    ToolCallUpdate,
)

from thoughtline import __version__
from thoughtline.errors import ThoughtlineError
from thoughtline.integrations.acp.render import (
    SessionUpdate,
    TurnRenderer,
    stop_reason,
    tool_call_id,
    tool_kind,
    tool_title,
)
from thoughtline.integrations.acp.servers import session_servers
from thoughtline.integrations.acp.session import (
    AcpSession,
    PromptBlock,
    loaded_settings,
    request_text,
)
from thoughtline.integrations.acp.settings import (
    EFFORT_OPTION,
    INVALID_REQUEST,
    META_KEY,
    MODE_OPTION,
    SessionSettings,
    config_options,
    from_thoughtline,
    invalid_params,
    mode_state,
    parse_effort,
    parse_mode,
    validate_settings,
)
from thoughtline.integrations.acp.turn import Turn
from thoughtline.records import new_id
from thoughtline.runtime import (
    RunManager,
    RunSpec,
    Runtime,
    RunTools,
    ToolApproval,
    build_spec,
    spoken_as,
)
from thoughtline.store.run_ids import find_conversation
from thoughtline.tools.pool import ServerPool
from thoughtline.tools.settings import McpServerSettings

logger = logging.getLogger(__name__)

SUPPORTED_PROTOCOL_VERSIONS: frozenset[int] = frozenset({PROTOCOL_VERSION})
SHUTDOWN_GRACE_S = 5.0
PERMISSION_TIMEOUT_S = 300.0
"""How long a ``session/request_permission`` waits for the editor's answer before it
counts as a rejection (``thoughtline acp --permission-timeout``)."""
ALLOWING = frozenset({"allow_once", "allow_always"})
NOT_CONTINUABLE = frozenset(
    {"RUN_NOT_FOUND", "CONVERSATION_RUN_ACTIVE", "CONVERSATION_HISTORY_GONE"}
)
"""Why a session's run cannot be continued; the prompt then continues an earlier one."""


class ThoughtlineAcpAgent:
    """The ACP ``Agent``: sessions, prompts as runs, cancellation. One per connection; all
    sessions share one ``Runtime`` (one per process)."""

    def __init__(
        self,
        runtime: Runtime,
        defaults: SessionSettings | None = None,
        *,
        permission_timeout_s: float = PERMISSION_TIMEOUT_S,
    ) -> None:
        self.runtime = runtime
        self.permission_timeout_s = permission_timeout_s
        self.runs = RunManager(runtime)
        self.defaults = defaults or SessionSettings()
        self.client: Client | None = None
        self.sessions: dict[str, AcpSession] = {}

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
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=False
                ),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(close=SessionCloseCapabilities()),
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
        settings = self._checked(self.defaults.with_meta(kwargs.get(META_KEY)))
        servers = self._servers(mcp_servers, cwd, "session/new")
        # The session id is also the conversation id of its runs (see ``_spec``).
        session = AcpSession(
            id=new_id("sess"),
            cwd=cwd,
            settings=settings,
            tool_servers=self._pool(),
            servers=servers,
        )
        self.sessions[session.id] = session
        return NewSessionResponse(
            session_id=session.id,
            modes=self._modes(session),
            config_options=self._config_options(session),
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Sequence[object] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        """A session from the store, in this process or after a restart: its runs
        (``Store.conversation_runs``) are replayed as session updates, in order, before
        the answer; later prompts continue it. Settings carry over from this process's
        copy of the session, else from its latest run (see ``loaded_settings``).
        ``session_id`` may also name one of the conversation's runs, in any form a run id
        takes (``find_conversation``); the session keeps the id it was loaded by."""
        known = self.sessions.get(session_id)
        if known is not None and known.turn is not None:
            raise _busy(session_id)
        try:
            runs = find_conversation(self.runtime.store, session_id) or []
        except ThoughtlineError as exc:  # RUN_ID_AMBIGUOUS
            raise from_thoughtline(exc) from None
        if not runs and known is None:
            raise invalid_params(
                f"Unknown session {session_id!r}: nothing of it is stored here; "
                "create one with session/new.",
                code="SESSION_UNKNOWN",
                sessionId=session_id,
            )
        base = known.settings if known is not None else loaded_settings(runs[-1])
        settings = self._checked(base.with_meta(kwargs.get(META_KEY)))
        servers = self._servers(mcp_servers, cwd, "session/load")
        session = AcpSession(
            id=session_id,
            cwd=cwd,
            settings=settings,
            tool_servers=self._pool(),
            servers=servers,
            runs=[run.id for run in runs],
            conversation_id=(runs[0].conversation_id or runs[0].id) if runs else "",
        )
        for run in runs:  # the answer must come after the whole history
            for update in TurnRenderer().replay(run.snapshot()):
                await self._notify(session_id, update)
        self.sessions[session_id] = session
        if known is not None:  # replaced, perhaps with other servers: its own stop
            await known.tool_servers.aclose()
        return LoadSessionResponse(
            modes=self._modes(session), config_options=self._config_options(session)
        )

    def _checked(self, settings: SessionSettings) -> SessionSettings:
        try:
            validate_settings(self.runtime, settings)
        except ThoughtlineError as exc:
            raise from_thoughtline(exc) from None
        return settings

    def _servers(
        self, mcp_servers: Sequence[object] | None, cwd: str, source: str
    ) -> dict[str, McpServerSettings]:
        runtime = self.runtime
        return session_servers(
            mcp_servers or (),
            cwd=cwd,
            configured=runtime.config.mcp_servers,
            environ=runtime.environ,
            secrets=runtime.registry.loaded_secrets(),
            source=source,
        )

    def _pool(self) -> ServerPool:
        runtime = self.runtime
        return ServerPool(environ=runtime.environ, secrets=runtime.registry.loaded_secrets())

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise invalid_params(
                f"Unknown session {session_id!r}: create one with session/new.",
                code="SESSION_UNKNOWN",
                sessionId=session_id,
            )
        return session

    def _current_mode(self, session: AcpSession) -> str:
        return session.settings.chain_of_thought or self.runtime.config.chain_of_thought

    def _current_effort(self, session: AcpSession) -> str:
        return session.settings.effort or self.runtime.config.default_effort

    def _modes(self, session: AcpSession) -> SessionModeState:
        return mode_state(self._current_mode(session))

    def _config_options(
        self, session: AcpSession
    ) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        return config_options(self._current_mode(session), self._current_effort(session))

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        session = self._session(session_id)
        mode = parse_mode(mode_id, "session/set_mode modeId")
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
            mode = parse_mode(value, where)
            session.settings = replace(session.settings, chain_of_thought=mode)
            await self._notify(
                session.id,
                CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode),
            )
        elif config_id == EFFORT_OPTION:
            session.settings = replace(session.settings, effort=parse_effort(value, where))
        else:
            raise invalid_params(
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
            raise _busy(session_id)
        request = request_text(prompt)
        # The session is busy from here on: preparing the run awaits.
        turn = Turn(self.client, session.id)
        session.turn = turn
        try:
            tools = RunTools(
                servers=session.servers,
                approve=partial(self._approve, session, turn),
                pool=session.tool_servers,
            )
            try:
                with spoken_as("acp"):
                    handle = await self.runs.start(
                        self._spec(session, request),
                        explicit_mode=session.settings.chain_of_thought,
                        observer=turn.observe,
                        tools=tools,
                    )
            except ThoughtlineError as exc:
                raise from_thoughtline(exc) from None
            turn.run_id = handle.run_id
            session.runs.append(handle.run_id)
            if turn.cancel_requested:  # session/cancel arrived while it was being prepared
                self.runs.cancel(handle.run_id)
            try:
                final = await handle.wait()
            except asyncio.CancelledError:
                self.runs.cancel(handle.run_id)  # nobody waits for this prompt any more
                raise
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

    def _spec(self, session: AcpSession, request: str) -> RunSpec:
        """A prompt's run: a follow-up of the session's latest run that can be continued
        (one cancelled before any task ran leaves nothing to continue from; a failed one
        keeps its request), with the session's settings; else the first run of the
        conversation named by the session id."""
        settings = session.settings
        for run_id in reversed(session.runs):
            options = settings.options(request, continues=run_id, servers=session.servers)
            try:
                return build_spec(options, "acp", runtime=self.runtime).spec
            except ThoughtlineError as exc:
                if exc.code not in NOT_CONTINUABLE:
                    raise
        conversation = session.conversation_id or session.id
        return build_spec(settings.options(request, conversation_id=conversation), "acp").spec

    async def _approve(self, session: AcpSession, turn: Turn, request: ToolApproval) -> bool:
        """Whether a destructive tool call may run: the editor's user answers through
        ``session/request_permission`` (unless they allowed the tool for the session);
        a rejection, a cancelled request or no answer within ``permission_timeout_s``
        is a no."""
        spec = request.tool.spec
        if spec in session.always_allowed:
            return True
        if self.client is None:
            return False
        call = request.call
        update_id = tool_call_id(request.task_id, call)
        await turn.sent()  # the editor knows the tool call before it is asked about it
        asking = self.client.request_permission(
            session_id=session.id,
            tool_call=ToolCallUpdate(
                tool_call_id=update_id,
                title=tool_title(call),
                kind=tool_kind(call),
                status="pending",
                raw_input={"arguments": call["arguments"]},
            ),
            options=[
                PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
                PermissionOption(
                    option_id="allow_always",
                    name=f"Always allow {spec} in this session",
                    kind="allow_always",
                ),
                PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
            ],
        )
        try:
            response = await asyncio.wait_for(asking, timeout=self.permission_timeout_s)
        except TimeoutError:
            logger.warning(
                "session/request_permission for %s got no answer in %g s: rejected",
                spec,
                self.permission_timeout_s,
            )
            return False
        outcome = response.outcome
        if not isinstance(outcome, AllowedOutcome) or outcome.option_id not in ALLOWING:
            return False  # rejected, or the request was cancelled
        if outcome.option_id == "allow_always":
            session.always_allowed.add(spec)
        turn.send(
            ToolCallProgress(
                session_update="tool_call_update", tool_call_id=update_id, status="in_progress"
            )
        )
        return True

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
        if turn.run_id is not None:
            self.runs.cancel(turn.run_id)

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """``session/close``: the session's prompt in flight is cancelled (its run ends
        ``cancelled``, kept), its MCP servers stop, and it is forgotten here (its runs stay
        stored: ``session/load`` brings it back)."""
        session = self._session(session_id)
        turn = session.turn
        if turn is not None:
            turn.cancel_requested = True
            if turn.run_id is not None:
                self.runs.cancel(turn.run_id)
            if turn.handler is not None:
                await asyncio.wait({turn.handler}, timeout=SHUTDOWN_GRACE_S)
        self.sessions.pop(session_id, None)
        await session.tool_servers.aclose()
        return CloseSessionResponse()

    # -- shutdown ----------------------------------------------------------------------
    async def shutdown(self) -> None:
        """The process is ending: running runs end ``interrupted`` (kept, not lost) and
        their prompts get their results, within a bounded wait."""
        self.runs.interrupt_all()
        handlers = [
            session.turn.handler
            for session in self.sessions.values()
            if session.turn is not None and session.turn.handler is not None
        ]
        if handlers:
            await asyncio.wait(handlers, timeout=SHUTDOWN_GRACE_S)
        await self.runs.shutdown(SHUTDOWN_GRACE_S)
        await asyncio.gather(*(session.tool_servers.aclose() for session in self.sessions.values()))


def _busy(session_id: str) -> RequestError:
    return RequestError(
        INVALID_REQUEST,
        f"Session {session_id!r} is already running a prompt; wait for its result "
        "or send session/cancel.",
        {"code": "SESSION_BUSY", "sessionId": session_id},
    )
