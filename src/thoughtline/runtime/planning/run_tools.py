"""What a front end trusted to define tool servers adds to one run: the ACP agent passes
the MCP servers its editor named in ``session/new``, and asks the editor before a
destructive tool runs.

A request to the daemon or the MCP tool may only name configured servers; the editor
that starts ``thoughtline acp`` is the user's own, so its servers may be started as it
describes them (under the same environment rules as configured ones:
:mod:`thoughtline.tools.environment`).

An :data:`Approver` replaces ``allow_destructive`` for the run: every tool whose
annotations call it destructive is offered, and each call to one waits for the
approver's answer before it runs. ``False`` (or an approver that fails) sends the model
a ``TOOL_NOT_ALLOWED`` error result and the call ends ``denied``; the loop goes on. The
runtime knows nothing of how the answer is obtained.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from thoughtline.records import ToolCallSnapshot
from thoughtline.tools.mcp_client import ToolInfo
from thoughtline.tools.pool import ServerPool
from thoughtline.tools.settings import McpServerSettings

if TYPE_CHECKING:
    from thoughtline.runtime.planning.toolbox import ToolServer


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolApproval:
    """A call to a destructive tool, waiting for a yes or no. ``call`` is the call as the
    snapshot shows it (credential values removed from its arguments)."""

    task_id: str
    call: ToolCallSnapshot
    tool: ToolInfo


Approver: TypeAlias = Callable[[ToolApproval], Awaitable[bool]]
"""Answers whether one destructive tool call may run (awaited before it starts; a
cancelled run cancels the wait)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunTools:
    """Tools one run gets beyond the config: ``servers`` are offered whole to every task
    (besides the tools its role or plan names), and ``approve``, when set, is asked
    before each destructive call instead of reading ``allow_destructive``."""

    servers: Mapping[str, McpServerSettings] = field(default_factory=dict)
    approve: Approver | None = None
    python: ToolServer | None = None
    """The library API's Python callables (``python.NAME``): only the library has any."""
    pool: ServerPool | None = None
    """Where the run takes its configured servers and ``servers`` from, kept open across
    runs (the daemon's pool, an ACP session's), instead of starting them for the run; a
    follow-up's server started again from its records is still started for the run."""
