"""Tools a specialist may call: the client side of MCP servers (stdio and Streamable
HTTP), configured by name, and what a server may see of thoughtline's environment.

This package sits below the runtime and beside the providers: it knows nothing of runs,
modes or the store. ``integrations/mcp/`` is the other direction (thoughtline *as* an
MCP server).

- :mod:`thoughtline.tools.settings`: one server's settings, from ``[mcp_servers.NAME]``
  or from an ``mcp.json`` file (``--mcp-config``), with ``${VAR}`` taken from the
  environment;
- :mod:`thoughtline.tools.environment`: the environment a stdio server is started with
  (its own section's variables plus ``PATH``, ``HOME`` and the locale: never a provider
  key);
- :mod:`thoughtline.tools.mcp_client`: a connection to one server (start, list its tools,
  call one with a timeout and a size cap on the result, stop).
"""

from __future__ import annotations

from thoughtline.tools.settings import McpServerSettings, load_mcp_json

__all__ = ["McpServerSettings", "load_mcp_json"]
