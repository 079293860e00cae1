"""What thoughtline hands a tool server: a stdio server's environment, an HTTP server's
headers.

A tool server is another program, often one from a package index: a stdio server gets
what its own section names (``env``) plus a minimal base it needs to run
(:data:`BASE_VARIABLES`: ``PATH``, ``HOME``, the user's name, the locale, the temporary
directory and time zone), never the rest of thoughtline's environment, where the provider
keys live. An HTTP server gets the ``headers`` its section names. One rule covers both,
for every way a server is defined (``[mcp_servers.NAME]``, ``mcp.json``, an ACP editor's
``session/new``): a value holding a loaded provider key, whole or inside a longer value
(``Bearer ${OPENAI_API_KEY}``), is refused, before the server is started or reached.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Final, Literal

from thoughtline.errors import ConfigError
from thoughtline.tools.settings import McpServerSettings

BASE_VARIABLES: Final = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR")
"""Taken from thoughtline's environment when set, with every ``LC_*`` variable: what a
program needs to find others, its files and its user, and to read and write text and
times. Not ``TERM`` (a server talks over pipes, never to a terminal; a terminal type
invites colour codes into its output) nor ``SHELL`` (a server that runs commands and
wants the user's shell is given it: ``env = { SHELL = "${SHELL}" }``)."""


def server_environment(
    settings: McpServerSettings, environ: Mapping[str, str], secrets: Collection[str]
) -> dict[str, str]:
    """The whole environment of the stdio server ``settings`` describes. ``secrets`` are
    the credential values thoughtline loaded; none may reach the server."""
    env = {name: environ[name] for name in BASE_VARIABLES if name in environ}
    env.update({name: value for name, value in environ.items() if name.startswith("LC_")})
    own = settings.expanded_env(environ)
    refuse_provider_keys(settings, "env", own, secrets)
    env.update(own)
    return env


def server_headers(
    settings: McpServerSettings, environ: Mapping[str, str], secrets: Collection[str]
) -> dict[str, str]:
    """The headers sent to the HTTP server ``settings`` describes, ``${VAR}`` filled in;
    none may hold one of ``secrets``."""
    headers = settings.expanded_headers(environ)
    refuse_provider_keys(settings, "headers", headers, secrets)
    return headers


def refuse_provider_keys(
    settings: McpServerSettings,
    key: Literal["env", "headers"],
    values: Mapping[str, str],
    secrets: Collection[str],
) -> None:
    """A :class:`ConfigError` naming the first of ``values`` (``settings``' ``key``
    table, as it will be sent) that holds one of ``secrets``."""
    for name, value in values.items():
        if any(secret and secret in value for secret in secrets):
            raise ConfigError(
                f"{settings.source}: mcp_servers.{settings.name}.{key}.{name}: would hand a "
                "provider key to the tool server; tool servers never get provider keys. "
                "Give the server a credential of its own."
            )


__all__ = ["BASE_VARIABLES", "refuse_provider_keys", "server_environment", "server_headers"]
