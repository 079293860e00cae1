"""How a task names the tools it may call: ``SERVER`` (every tool the server allows) or
``SERVER.TOOL`` (one of them), in ``[roles.NAME] tools``, plan tasks, ``--tool`` and the
library API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from thoughtline.tools.settings import SERVER_NAME, SERVER_NAME_RULE

PYTHON_SERVER: Final = "python"
"""The server the library API's Python callables are offered under (``python.NAME``)."""
DEFAULT_MAX_STEPS: Final = 8
"""Model calls one task may make unless its role, plan, run or config says otherwise."""
MAX_STEPS_CEILING: Final = 1000
"""The most model calls a task may be allowed."""
DEFAULT_TOOL_TIMEOUT_S: Final = 60.0
"""``[timeouts] tool`` unless set: one tool call."""


@dataclass(frozen=True, slots=True)
class ToolSpecName:
    """``server`` and, for one tool, its ``tool`` name (``None``: the whole server)."""

    server: str
    tool: str | None

    def __str__(self) -> str:
        return self.server if self.tool is None else f"{self.server}.{self.tool}"


def tool_spec_problem(spec: str) -> str | None:
    """What is wrong with ``spec`` as a tool name, or ``None``."""
    server, _, tool = spec.partition(".")
    if not SERVER_NAME.match(server):
        return f"{spec!r} does not start with a server name: {SERVER_NAME_RULE}"
    if "." in spec and not tool:
        return f"{spec!r} names no tool after the dot (use SERVER or SERVER.TOOL)"
    return None


def parse_tool_spec(spec: str) -> ToolSpecName:
    """``spec`` split into its server and tool (already checked by :func:`tool_spec_problem`)."""
    server, dot, tool = spec.partition(".")
    return ToolSpecName(server, tool if dot else None)
