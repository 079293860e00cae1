"""One ACP session as the agent keeps it: its settings, the editor's MCP servers and the
sessions of those servers kept open across its prompts, its runs; and what a prompt's
blocks and a loaded session's latest run give it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
)

from thoughtline.integrations.acp.settings import SessionSettings, invalid_params
from thoughtline.integrations.acp.turn import Turn
from thoughtline.records import Run
from thoughtline.tools.pool import ServerPool
from thoughtline.tools.settings import McpServerSettings

PromptBlock: TypeAlias = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


@dataclass(slots=True)
class AcpSession:
    id: str
    cwd: str
    settings: SessionSettings
    tool_servers: ServerPool
    """The sessions of the MCP servers its prompts use (the editor's and configured
    ones), kept open from one prompt to the next and closed with the session
    (``session/close``, a ``session/load`` that replaces it, the agent's exit) or after
    a server's ``idle_s`` unused."""
    servers: dict[str, McpServerSettings] = field(default_factory=dict)
    """The editor's MCP servers (``session/new`` ``mcpServers``), offered to every task."""
    always_allowed: set[str] = field(default_factory=set)
    """Destructive tools (``SERVER.TOOL``) the user allowed for the rest of the session."""
    runs: list[str] = field(default_factory=list)
    """The ids of the session's runs, oldest first (its conversation's, when loaded)."""
    turn: Turn | None = None
    conversation_id: str = ""
    """The conversation of its runs: the session id, unless ``session/load`` named it by
    one of its runs (a short id, say)."""


def loaded_settings(latest: Run) -> SessionSettings:
    """The settings of a session this process does not know, from its latest run: its
    mode when one was chosen for it (a mode the config gave is left to the config, as
    before), and its tasks' effort when they share one. Roles, endpoints and models are
    left unset: a follow-up runs the latest run's tasks again."""
    chosen = latest.chain_of_thought_source in ("explicit", "run")
    efforts = {task.effort for task in latest.tasks}
    return SessionSettings(
        chain_of_thought=latest.chain_of_thought if chosen else None,
        effort=efforts.pop() if len(efforts) == 1 else None,
    )


def request_text(blocks: Sequence[PromptBlock]) -> str:
    """The run's request: text blocks, and resource links as ``name: uri`` lines."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"{block.name}: {block.uri}")
        else:
            raise invalid_params(
                f"This agent accepts text and resource links only, not {block.type!r} content.",
                code="PROMPT_CONTENT_UNSUPPORTED",
            )
    text = "\n\n".join(part for part in parts if part.strip())
    if not text:
        raise invalid_params("The prompt has no text to run.", code="PROMPT_EMPTY")
    return text
