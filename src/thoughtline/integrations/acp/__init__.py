"""``thoughtline acp``: thoughtline as an Agent Client Protocol (ACP) agent over stdio.

Every ``acp`` import of thoughtline lives in this package (the ``[acp]`` extra):
``settings`` (session settings, modes and config options), ``servers`` (the editor's MCP
servers), ``render`` (run events as session updates), ``agent`` (the ``Agent``) and
``stdio`` (serving it). The agent
starts runs through the runtime's background-run manager (``RunManager``) and
contains no disclosure logic: it forwards the ``reasoning.delta`` events the runtime emits
(only for tasks whose mode displays reasoning) and renders ``task.reasoning_notice``
whenever ``task.reasoning`` is null.

Sessions
    ``session/new`` creates a session whose prompts run with: a ``chain_of_thought`` mode,
    roles (one concurrent task per role; with none, ``[defaults] role``, else no persona),
    provider, model, effort and budget. Defaults come from ``thoughtline acp``'s flags,
    then the config file. A client sets them per session in three ways:

    * ``_meta.thoughtline`` on ``session/new``: ``{"chain_of_thought": "surface",
      "roles": ["architect", "reviewer"], "provider": "anthropic", "model": "...",
      "effort": "low", "max_cost": 0.5}`` (every key optional; unknown keys and bad
      values are errors; ``max_cost`` is the USD budget of each prompt's run, over
      ``thoughtline acp --max-cost``);
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

Sessions are conversations
    A session id is also the conversation id of the session's runs: the first prompt's
    run starts the conversation (``RunSpec.conversation_id``), and every later prompt
    continues the session's latest run (``Runtime.continuation_spec``: its tasks again,
    or one per session role, with the session's mode, provider, model and effort), so
    each prompt carries the earlier turns, by each provider's rules for earlier turns'
    reasoning. A failed turn goes on (its request, without an answer); a run with
    nothing to continue from (a prompt cancelled before any task ran) is passed over for
    the one before it.

    ``initialize`` advertises ``loadSession``. Sessions live in the store, so
    ``session/load`` (``sessionId``, ``cwd``, ``mcpServers``) works in any later agent
    process with the same store: before its answer it replays every run of the
    conversation as session updates, oldest first: a ``user_message_chunk`` with the
    request, then each task as its prompt showed it (tool call, ``agent_thought_chunk``
    only where the stored task carries reasoning, i.e. its mode displays it; the task's
    tool calls; the answer; the notice or error line; the final ``tool_call_update``),
    task after task. The trace is never read. The loaded session keeps this process's
    settings for it, or else takes its latest run's mode (when one was chosen) and effort,
    and its tasks; ``_meta.thoughtline`` on ``session/load`` overrides them, and the
    ``mcpServers`` given are its tools from now on. An id with no stored run (and not a
    session of this process) is ``SESSION_UNKNOWN``; loading a session while it runs a
    prompt is ``SESSION_BUSY``.

A prompt turn
    The prompt's text blocks (and resource links, as ``name: uri`` lines) become the run's
    request. A client sees, for a one-task run::

        tool_call            {toolCallId: task id, title: "assistant · deepseek:deepseek-reasoner",
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

Tools
    ``initialize`` advertises ``mcpCapabilities`` ``{http: true, sse: false}``. The MCP
    servers in ``session/new`` ``mcpServers`` (stdio ``{name, command, args, env}``, and
    ``{type: "http", name, url, headers}``) are the session's tools: every task of every
    prompt may call them whole, beside the tools its role names. The editor is the
    user's own, so its servers are started as it describes them (a daemon or MCP
    request may only name configured servers), under the rules every tool server
    follows: a stdio server's environment is its own ``env`` plus ``PATH``, ``HOME``
    and the locale, values are taken as sent (no ``${VAR}``), and it starts in the
    session's ``cwd``. A server whose ``env`` would hand it a loaded provider key, an
    SSE or ACP-transport server, a name that is not ``[A-Za-z0-9][A-Za-z0-9_-]*``, used
    twice, or also a configured server's, is refused (``SESSION_MCP_SERVER_INVALID``).
    Servers start when a prompt's run first needs them and stay open for the
    session's later prompts; they stop with the session (``session/close``, which
    ``initialize`` advertises in ``sessionCapabilities``, a ``session/load`` that
    replaces it, the agent's exit) or after their ``idle_s`` unused.

    Before a tool whose annotations call it destructive runs, the agent asks the editor
    with ``session/request_permission`` (options ``allow_once``, ``allow_always``: for
    the rest of the session, ``reject_once``), after the call's ``tool_call`` update was
    sent; ``allow_destructive`` is not read. A rejected or cancelled request, or one
    unanswered after ``--permission-timeout`` (300 s), sends the model a
    ``TOOL_NOT_ALLOWED`` error result, the call ends ``denied``
    (``tool_call_update`` ``failed``), and the loop goes on.

    Each tool call is a ``tool_call`` (id ``TASK_ID/CALL_ID``, title ``SERVER.TOOL``,
    ``rawInput`` its arguments) and a final ``tool_call_update``. Its kind comes from
    the tool's annotations: ``read`` for a read-only tool, ``delete`` for a destructive
    one (it may destroy or overwrite data), ``other`` otherwise.

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

from thoughtline.integrations.acp.agent import ThoughtlineAcpAgent
from thoughtline.integrations.acp.render import TurnRenderer, stop_reason
from thoughtline.integrations.acp.settings import SessionSettings, validate_settings
from thoughtline.integrations.acp.stdio import run_stdio_agent, serve

__all__ = [
    "SessionSettings",
    "ThoughtlineAcpAgent",
    "TurnRenderer",
    "run_stdio_agent",
    "serve",
    "stop_reason",
    "validate_settings",
]
