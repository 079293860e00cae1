"""The tool servers a run used, as it records them, and how a follow-up finds them again.

A run records each server its tasks may call (:class:`RecordedServer`): where it was
defined (``origin``), and how it is reached (command and args, or the URL with its
credentials masked), with the *names* of its environment variables and headers and never
their values. A follow-up that names a server neither configured nor given by its front
end starts it again from that record (:func:`resolve_recorded`), or refuses in one
sentence with ``TOOL_SERVER_GONE`` before anything is stored:

- ``config``: ``[mcp_servers.NAME]`` resolves from the current config; removed since,
  it is gone.
- ``mcp.json``: the file is read again (its ``${VAR}`` values come from the environment
  as they did); a file that is gone or no longer defines the server, or a variable it
  uses that is no longer set, is refused.
- ``editor``: an ACP editor's server comes with its values from the editor's
  ``session/new`` alone; not given again, it is gone.
- ``python``: the library API's callables, by name; they must be passed again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from thoughtline.errors import ConfigError, ThoughtlineError
from thoughtline.providers.redaction import shown_url
from thoughtline.tools.settings import McpServerSettings, ServerOrigin, load_mcp_json

ORIGINS: tuple[str, ...] = get_args(ServerOrigin)
_REQUIRED_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedServer:
    """One tool server a run used, without a secret: ``env`` and ``headers`` are names
    only; ``url`` has its credentials masked; ``args`` had every loaded key removed."""

    name: str
    origin: ServerOrigin
    command: str | None = None
    args: tuple[str, ...] = ()
    url: str | None = None
    env: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    file: str | None = None
    """The file that defined it (``config``, ``mcp.json``)."""
    tools: tuple[str, ...] = ()
    """The callables' names (``python``)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "origin": self.origin}
        for key in ("command", "url", "file"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        for key in ("args", "env", "headers", "tools"):
            value = getattr(self, key)
            if value:
                out[key] = list(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordedServer:
        origin = data.get("origin")
        return cls(
            name=str(data["name"]),
            origin=origin if origin in ORIGINS else "config",
            command=data.get("command"),
            args=tuple(data.get("args", ())),
            url=data.get("url"),
            env=tuple(data.get("env", ())),
            headers=tuple(data.get("headers", ())),
            file=data.get("file"),
            tools=tuple(data.get("tools", ())),
        )


def record_server(settings: McpServerSettings, *, scrub: Callable[[str], str]) -> RecordedServer:
    """The record of one MCP server a run uses; ``scrub`` removes loaded keys from text."""
    origin: ServerOrigin = "editor" if settings.literal else settings.origin
    return RecordedServer(
        name=settings.name,
        origin=origin,
        command=None if settings.command is None else scrub(settings.command),
        args=tuple(scrub(arg) for arg in settings.args),
        url=None if settings.url is None else scrub(shown_url(settings.url)),
        env=tuple(sorted(settings.env)),
        headers=tuple(sorted(settings.headers)),
        file=_defined_in(settings.source, origin),
    )


def _defined_in(source: str, origin: ServerOrigin) -> str | None:
    if origin == "mcp.json":
        return os.path.abspath(source)  # a follow-up may run in another directory
    return source if origin == "config" else None


def record_python(name: str, tools: Collection[str]) -> RecordedServer:
    """The record of the library API's callables offered under ``name``."""
    return RecordedServer(name=name, origin="python", tools=tuple(sorted(tools)))


def resolve_recorded(
    record: RecordedServer, *, run_id: str, environ: Mapping[str, str]
) -> McpServerSettings:
    """The settings to start ``record``'s server again with, for a follow-up of run
    ``run_id`` that has it neither configured nor given (module doc); else
    ``TOOL_SERVER_GONE`` in one sentence."""
    name = record.name
    lead = f"Run {run_id} used the MCP server {name!r}"
    if record.origin == "python":
        listed = ", ".join(record.tools) or "its callables"
        raise ThoughtlineError(
            "TOOL_SERVER_GONE",
            f"Run {run_id} called the Python callables {listed}; pass them again "
            f"(tools=[{listed}], through the library API) to continue it.",
        )
    if record.origin == "editor":
        raise ThoughtlineError(
            "TOOL_SERVER_GONE",
            f"{lead}, which its editor defined; the editor gave no server by that name "
            "this time (session/new mcpServers), so the conversation cannot go on with "
            "its tools.",
        )
    if record.origin == "config":
        raise ThoughtlineError(
            "TOOL_SERVER_GONE",
            f"{lead} from [mcp_servers.{name}] ({record.file or 'the config'}), which the "
            f"config no longer defines; add [mcp_servers.{name}] again to continue it.",
        )
    path = Path(record.file or "")
    try:
        found = load_mcp_json(path).get(name)
    except ConfigError as exc:
        raise ThoughtlineError(
            "TOOL_SERVER_GONE",
            f"{lead} from {path}, which no longer reads ({exc.message.rstrip('.')}); "
            f"restore it, or define {name!r} in the config, to continue it.",
        ) from None
    if found is None:
        raise ThoughtlineError(
            "TOOL_SERVER_GONE",
            f"{lead} from {path}, which no longer defines it; define it there again, "
            "or in the config, to continue it.",
        )
    for key, value in (*found.env.items(), *found.headers.items()):
        for variable in _REQUIRED_VARIABLE.findall(value):
            if variable not in environ:
                raise ThoughtlineError(
                    "TOOL_SERVER_GONE",
                    f"{lead} from {path}, whose {key} takes ${{{variable}}}, which is no "
                    f"longer set; set {variable} to continue it.",
                )
    return found


def recorded_servers(
    records: Collection[RecordedServer],
    needed: Collection[str],
    *,
    known: Collection[str],
    run_id: str,
    environ: Mapping[str, str],
) -> dict[str, McpServerSettings]:
    """The settings of each MCP server in ``needed`` that is not ``known`` (configured or
    given) but was recorded, started again from its record (``TOOL_SERVER_GONE`` when
    it cannot be); servers neither known nor recorded are left to the caller."""
    by_name = {record.name: record for record in records}
    found: dict[str, McpServerSettings] = {}
    for name in sorted(needed):
        record = by_name.get(name)
        if name in known or record is None or record.origin == "python":
            continue
        found[name] = resolve_recorded(record, run_id=run_id, environ=environ)
    return found
