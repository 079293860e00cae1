"""Running the tool calls of one step: in parallel (bounded), each with the tool timeout,
each recorded on the task, traced and told live, and each answered to the model.

Nothing a tool does stops the loop: a tool's error, a JSON-RPC error its server answered
(``TOOL_CALL_FAILED``), a timeout, a result over the cap (cut and marked), a server that
died, a tool the task may not call (``TOOL_NOT_ALLOWED``), a
destructive call the run's approver turned down (``TOOL_NOT_ALLOWED``; see
:mod:`~thoughtline.runtime.planning.run_tools`) and one nobody offered (``TOOL_NOT_FOUND``) each go
back to the model as an error result. The approver is asked before the call takes one
of the step's running slots, so a call waiting for a person holds up no other call.
Loaded credential values are removed from arguments and results before anything records,
shows or sends them. Cancellation stops the calls in flight; they end ``cancelled``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, Final

from thoughtline.model.accumulator import ToolCall
from thoughtline.model.parts import ToolResultPart
from thoughtline.providers.redaction import Redactor
from thoughtline.records import Task, ToolCallRecord, ToolCallStatus, now_iso
from thoughtline.runtime.engine.task_sink import TaskSink
from thoughtline.runtime.planning.run_tools import ToolApproval
from thoughtline.runtime.planning.toolbox import OfferedTool, TaskTools
from thoughtline.tools.mcp_client import ToolOutcome

logger = logging.getLogger(__name__)

PREVIEW_CHARS: Final = 2_000
"""How much of a result the task's record keeps (the model gets up to the cap)."""
CALLS_AT_ONCE: Final = 4
"""Tool calls of one step running at the same time."""

_STATUS_OF_CODE: Final[dict[str, ToolCallStatus]] = {
    "TOOL_TIMEOUT": "timed_out",
    "TOOL_NOT_ALLOWED": "denied",
    "TOOL_NOT_FOUND": "denied",
}


class ToolCalls:
    """The tool calls of one task, step after step."""

    def __init__(self, sink: TaskSink, task: Task, tools: TaskTools, *, timeout_s: float) -> None:
        self.sink = sink
        self.task = task
        self.tools = tools
        self.timeout_s = timeout_s
        self.redactor: Redactor = sink.redactor
        self._gate = asyncio.Semaphore(CALLS_AT_ONCE)

    async def run(self, step: int, calls: tuple[ToolCall, ...]) -> list[ToolResultPart]:
        """Run ``calls`` (made by model call ``step``) and return what goes back to the
        model, in the order the model made them. Cancelled: the calls in flight end
        ``cancelled`` and the cancellation goes on."""
        records = [self._record(step, call) for call in calls]
        if len(calls) == 1:
            # Most steps make one call: awaited in place, it needs no task of its own
            # (cancelled, it ends ``cancelled`` the same way).
            return [await self._one(calls[0], records[0])]
        running = [
            asyncio.ensure_future(self._one(call, record))
            for call, record in zip(calls, records, strict=True)
        ]
        try:
            return list(await asyncio.gather(*running))
        except asyncio.CancelledError:
            for future in running:
                future.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            raise

    def _record(self, step: int, call: ToolCall) -> ToolCallRecord:
        offered = self.tools.get(call.name)
        record = ToolCallRecord(
            id=call.tool_call_id,
            step=step,
            server=None if offered is None else offered.tool.server,
            name=call.name if offered is None else offered.tool.name,
            arguments=self.redactor.values(call.arguments),
            started_at=now_iso(),
            read_only=offered is not None and offered.tool.read_only,
            destructive=offered is not None and offered.tool.destructive,
        )
        assert self.task.tool_calls is not None  # a task offered tools keeps its calls
        self.task.tool_calls.append(record)
        return record

    async def _one(self, call: ToolCall, record: ToolCallRecord) -> ToolResultPart:
        sink, task = self.sink, self.task
        sink.add_trace(
            "tool.called",
            task_id=task.id,
            metadata={
                "id": record.id,
                "step": record.step,
                "server": record.server,
                "tool": record.name,
                "arguments": record.arguments,
            },
        )
        sink.emit_tool_call(task, record)
        started = time.perf_counter()
        try:
            checked = await self._checked(call, record)
            if isinstance(checked, ToolOutcome):
                outcome = checked
            else:
                started = time.perf_counter()  # the tool's own time, not a person's answer
                outcome = await self._called(*checked)
        except asyncio.CancelledError:
            outcome = ToolOutcome(
                text="The run was stopped before the tool answered.",
                is_error=True,
                error_code="TOOL_CANCELLED",
            )
            self._finish(record, outcome, started, status="cancelled")
            raise
        status: ToolCallStatus = "done"
        if outcome.error_code is not None:
            status = _STATUS_OF_CODE.get(outcome.error_code, "failed")
        elif outcome.is_error:
            status = "failed"
        text = self._finish(record, outcome, started, status=status)
        return ToolResultPart(
            tool_call_id=call.tool_call_id, name=call.name, content=text, is_error=record.is_error
        )

    async def _checked(
        self, call: ToolCall, record: ToolCallRecord
    ) -> ToolOutcome | tuple[OfferedTool, dict[str, Any]]:
        """Why the call may not run (an error outcome for the model), or the tool and
        arguments to call it with; a destructive call asks the run's approver first."""
        offered = self.tools.get(call.name)
        if offered is None:
            return ToolOutcome(
                text=f"There is no tool named {call.name!r} here.",
                is_error=True,
                error_code="TOOL_NOT_FOUND",
            )
        if not offered.runs:
            return ToolOutcome(
                text=f"The tool {offered.tool.spec} is destructive and its server does not "
                "allow destructive tools (allow_destructive).",
                is_error=True,
                error_code="TOOL_NOT_ALLOWED",
            )
        try:
            arguments = json.loads(record.arguments or "{}")
        except json.JSONDecodeError:
            arguments = None
        if not isinstance(arguments, dict):
            return ToolOutcome(
                text="The arguments were not a JSON object.", is_error=True, error_code=None
            )
        if offered.asks and not await self._approved(offered, record):
            return ToolOutcome(
                text=f"The user did not allow this call to {offered.tool.spec}, a destructive "
                "tool; it did not run.",
                is_error=True,
                error_code="TOOL_NOT_ALLOWED",
            )
        return offered, arguments

    async def _called(self, offered: OfferedTool, arguments: dict[str, Any]) -> ToolOutcome:
        """The tool's outcome, once one of the step's running slots is free."""
        connection = self.sink.toolbox_connection(offered.tool.server)
        async with self._gate:
            return await connection.call(offered.tool.name, arguments, timeout_s=self.timeout_s)

    async def _approved(self, offered: OfferedTool, record: ToolCallRecord) -> bool:
        """The run's approver's answer for one destructive call, traced; an approver that
        fails (the editor went away) is a no."""
        approve = self.sink.approver
        approved = False
        if approve is not None:
            request = ToolApproval(task_id=self.task.id, call=record.to_dict(), tool=offered.tool)
            try:
                approved = await approve(request)
            except Exception as exc:  # whatever the approver's transport raised: not allowed
                logger.warning("asking to run %s failed: %s", offered.tool.spec, exc)
        self.sink.add_trace(
            "tool.approval",
            task_id=self.task.id,
            metadata={
                "id": record.id,
                "server": record.server,
                "tool": record.name,
                "approved": approved,
            },
        )
        return approved

    def _finish(
        self,
        record: ToolCallRecord,
        outcome: ToolOutcome,
        started: float,
        *,
        status: ToolCallStatus,
    ) -> str:
        """Record the outcome, trace it and tell it live; the text the model gets."""
        text = self.redactor.values(outcome.text)
        record.status = status
        record.is_error = outcome.is_error
        record.error = outcome.error_code
        record.result = text[:PREVIEW_CHARS]
        record.result_truncated = outcome.truncated or len(text) > PREVIEW_CHARS
        record.duration_ms = round((time.perf_counter() - started) * 1000.0, 3)
        self.sink.add_trace(
            "tool.completed",
            task_id=self.task.id,
            metadata={
                "id": record.id,
                "step": record.step,
                "server": record.server,
                "tool": record.name,
                "status": status,
                "is_error": record.is_error,
                "error": record.error,
                "result": record.result,
                "result_truncated": record.result_truncated,
                "duration_ms": record.duration_ms,
            },
        )
        self.sink.emit_tool_call(self.task, record)
        return text
