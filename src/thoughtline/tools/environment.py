"""The environment a stdio MCP server is started with.

A tool server is another program, often one from a package index: it gets what its own
section names (``env``) plus a minimal base it needs to run (``PATH``, ``HOME``, the
locale, the temporary directory and time zone), never the rest of thoughtline's
environment, where the provider keys live. A section that would hand it the value of a
loaded provider key (``env = { KEY = "${OPENAI_API_KEY}" }``) is refused.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Final

from thoughtline.errors import ConfigError
from thoughtline.tools.settings import McpServerSettings

BASE_VARIABLES: Final = ("PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR")
"""Taken from thoughtline's environment when set, with every ``LC_*`` variable."""


def server_environment(
    settings: McpServerSettings, environ: Mapping[str, str], secrets: Collection[str]
) -> dict[str, str]:
    """The whole environment of the stdio server ``settings`` describes. ``secrets`` are
    the credential values thoughtline loaded; none may reach the server."""
    env = {name: environ[name] for name in BASE_VARIABLES if name in environ}
    env.update({name: value for name, value in environ.items() if name.startswith("LC_")})
    for name, value in settings.expanded_env(environ).items():
        if any(secret and secret in value for secret in secrets):
            raise ConfigError(
                f"{settings.source}: mcp_servers.{settings.name}.env.{name}: would hand a "
                "provider key to the tool server; tool servers never get provider keys. "
                "Give the server a credential of its own."
            )
        env[name] = value
    return env
