"""Turning one run's live events into ACP session updates, a stored run into the updates
that replay it (``session/load``), and a finished run into the prompt's stop reason. Pure
(no I/O), so the mapping is testable on its own."""

from __future__ import annotations

from typing import Literal, TypeAlias, assert_never

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ConfigOptionUpdate,
    ContentToolCallContent,
    CurrentModeUpdate,
    StopReason,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolKind,
    UserMessageChunk,
)

from thoughtline.records import Run, RunSnapshot, TaskSnapshot, ToolCallSnapshot
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

SessionUpdate: TypeAlias = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | CurrentModeUpdate
    | ConfigOptionUpdate
)
Stream: TypeAlias = Literal["message", "thought"]


def _title(task: TaskSnapshot) -> str:
    return f"{task['role']} · {task['provider']}:{task['model']}"


def tool_kind(call: ToolCallSnapshot) -> ToolKind:
    """The ACP kind of a tool call, from its tool's MCP annotations: ``read`` for a
    read-only tool, ``delete`` for a destructive one (MCP's ``destructiveHint``: it may
    destroy or overwrite data, the warning a person should see before allowing it),
    ``other`` for the rest (no annotations, or additive updates)."""
    if call.get("read_only"):
        return "read"
    if call.get("destructive"):
        return "delete"
    return "other"


def tool_call_id(task_id: str, call: ToolCallSnapshot) -> str:
    """The ACP tool call id of one of a task's tool calls (the task is a tool call too)."""
    return f"{task_id}/{call['id']}"


def tool_title(call: ToolCallSnapshot) -> str:
    """``SERVER.TOOL``, or the name the model used for a tool the task does not have."""
    server = call["server"]
    return call["name"] if server is None else f"{server}.{call['name']}"


def _text_block(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _summary(task: TaskSnapshot) -> str:
    """One line for the tool call's content: status, tokens, duration, error."""
    parts: list[str] = [task["status"]]
    usage = task["usage"]
    tokens = [
        f"{count} {label}"
        for count, label in (
            (usage["input_tokens"], "input"),
            (usage["output_tokens"], "output"),
            (usage["reasoning_tokens"], "reasoning"),
        )
        if count is not None
    ]
    if tokens:
        parts.append(", ".join(tokens) + " tokens")
    total_ms = task["timings"]["total_ms"]
    if total_ms is not None:
        parts.append(f"{total_ms / 1000:.1f} s")
    if task["status"] in ("cancelled", "interrupted"):
        parts.append("what arrived is kept")
    error = task["error"]
    if error is not None:
        parts.append(f"{error['code']}: {error['message']}")
    return " · ".join(parts)


def _tool_call_started(task_id: str, call: ToolCallSnapshot) -> ToolCallStart:
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=tool_call_id(task_id, call),
        title=tool_title(call),
        kind=tool_kind(call),
        status="in_progress",
        raw_input={"arguments": call["arguments"]},
    )


def _tool_call_completed(task_id: str, call: ToolCallSnapshot) -> ToolCallProgress:
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=tool_call_id(task_id, call),
        status="failed" if call["is_error"] else "completed",
        content=[ContentToolCallContent(type="content", content=_text_block(call["result"] or ""))],
        raw_output=dict(call),
    )


class TurnRenderer:
    """Turns one run's live events (or, once, a stored run) into ACP session updates.
    Pure (no I/O), so the mapping is testable on its own; it renders what the events or
    the snapshot carry and nothing else."""

    def __init__(self) -> None:
        self.titles: dict[str, str] = {}
        self.several = False
        self.kind: ToolKind = "think"
        self.announced: set[str] = set()
        self.speaker: dict[Stream, str | None] = {"message": None, "thought": None}
        self.written: dict[Stream, bool] = {"message": False, "thought": False}

    def render(self, event: RunEvent) -> list[SessionUpdate]:
        match event:
            case RunStarted(snapshot=snapshot):
                self._begin(snapshot)
                return []
            case TaskStarted(task=task):
                return [self._announce(task, "in_progress")]
            case TaskAnswerDelta(task_id=task_id, text=text):
                return self._chunks("message", task_id, text)
            case TaskReasoningDelta(task_id=task_id, text=text):
                return self._chunks("thought", task_id, text)
            case TaskToolCallStarted(task_id=task_id, call=call):
                return [_tool_call_started(task_id, call)]
            case TaskToolCallCompleted(task_id=task_id, call=call):
                return [_tool_call_completed(task_id, call)]
            case TaskStepPriced():
                return []  # the prompt result carries the cost
            case ToolServerStart():
                return []  # the session's servers are the editor's: it shows their start
            case TaskCompleted(task=task):
                return self._completed(task)
            case RunCompleted() | RunFailed() | RunCancelled() | RunInterrupted():
                return []  # the prompt result says how the run ended
            case _:
                assert_never(event)

    def replay(self, run: RunSnapshot) -> list[SessionUpdate]:
        """A stored run as ``session/load`` replays it: the user's request, then each task
        as its prompt showed it live (its tool call, thoughts, tool calls, answer, notice
        or error line, final update), one task after another. Thoughts come only from the
        snapshot's ``reasoning``, which is null unless the task's mode displays it."""
        self._begin(run)
        updates: list[SessionUpdate] = [
            UserMessageChunk(
                session_update="user_message_chunk", content=_text_block(run["request"])
            )
        ]
        for task in run["tasks"]:
            task_id = task["id"]
            if task["timings"]["started_at"] is not None:  # else announced ``pending`` below
                updates.append(self._announce(task, "in_progress"))
            updates += self._chunks("thought", task_id, task["reasoning"] or "")
            for call in task.get("tool_calls", []):
                updates += [_tool_call_started(task_id, call), _tool_call_completed(task_id, call)]
            updates += self._chunks("message", task_id, task["output"] or "")
            updates += self._completed(task)
        return updates

    def _begin(self, run: RunSnapshot) -> None:
        tasks = run.get("tasks", [])
        self.several = len(tasks) > 1
        self.titles = {task["id"]: _title(task) for task in tasks}
        # Inline runs call no model: nothing "thinks".
        self.kind = "think" if run.get("worker_backend") == "provider" else "other"

    def _announce(self, task: TaskSnapshot, status: ToolCallStatus) -> ToolCallStart:
        task_id = task["id"]
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

    def _completed(self, task: TaskSnapshot) -> list[SessionUpdate]:
        task_id = task["id"]
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
