"""A caller's own conversation, for a run that answers one turn of it: the gateway's
clients send their whole history and their tools on every call.

The history is the task's input, sent as it is (by the wire's own history rules); the
tools are offered to the model but never run by thoughtline: the task ends on the
model's tool calls, which go back to the caller, who runs them and sends the results in
its next call.
"""

from __future__ import annotations

from dataclasses import dataclass

from thoughtline.model.requests import Message, ToolChoice, ToolSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientTurns:
    """The caller's system prompt, its turns (the last one the user's: a message or tool
    results) and the tools it runs itself."""

    system: str | None
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    """Which of its tools the model may or must call (``None``: the API's default)."""
    asked: str | None = None
    """What the caller's request asked of reasoning, as it said it
    (``reasoning_effort=high``), recorded with the run beside the mode it got."""

    @property
    def prompt(self) -> str:
        """The latest user text of the conversation: its prompt, as the task's trace and
        size check see it (empty when no user turn holds text)."""
        for message in reversed(self.messages):
            if message.role == "user" and message.content.strip():
                return message.content
        return ""
