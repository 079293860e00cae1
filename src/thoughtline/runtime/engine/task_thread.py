"""What a task sends and what it adds to its conversation: :class:`Prepared` (its system
prompt, prompt and the history each step sends) and :func:`task_thread` (its turns as the
gate let them through, the thread stored when it ends)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from thoughtline.model import threads
from thoughtline.model.parts import unstorable
from thoughtline.model.requests import Message, ToolSpec
from thoughtline.model.threads import TaskThread
from thoughtline.runtime.engine.steps import Steps


@dataclass(slots=True, kw_only=True)
class Prepared:
    """A task ready to call its model: the role's system prompt, the user prompt, and
    the history each step sends (append-only: a step only adds to what came before)."""

    system: str
    prompt: str
    history: list[Message]
    own: list[Message]
    """This turn's messages (from its prompt on), stored as the task's thread."""


def task_thread(
    prepared: Prepared, steps: Steps, *, requests_reasoning: bool, tools: Sequence[ToolSpec]
) -> TaskThread:
    """What a task adds to its conversation: its prompt, its steps' turns and the last
    answer, all as the gate let them through; with reasoning and carriers only when the
    mode requested them (a part the gate could not clean stays in memory: a carrier
    cannot be redacted)."""
    messages = list(prepared.own)
    last = steps.last.response.to_message()
    if last.parts:
        messages.append(last)
    carriers: tuple[Message, ...] | None = None
    if requests_reasoning:
        carriers = tuple(
            Message(role=message.role, parts=kept)
            for message in messages
            if (kept := [part for part in message.parts if not unstorable(part)])
        )
    return TaskThread(
        answer=threads.answer_layer(messages),
        carriers=carriers,
        system_digest=threads.digest(prepared.system),
        tools_digest=threads.tools_digest(tools),
    )
