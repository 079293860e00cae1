"""The public JSON contracts as pydantic models, for the surfaces that publish a schema.

``thoughtline.schema.run`` defines the ``thoughtline.run/v1`` snapshot once; the daemon's
OpenAPI document and the MCP tools' output schemas are both generated from it. The core
package does not import this package: it needs pydantic, which the ``server`` and ``mcp``
extras bring.
"""

from __future__ import annotations

try:
    import pydantic  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "thoughtline.schema needs pydantic: install thoughtline[server] or thoughtline[mcp]."
    ) from exc
