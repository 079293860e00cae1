"""Wire API name → its unit (:class:`~thoughtline.providers.wire.Wire`).

The only module besides the wire packages that names a wire API. Each built-in unit is
imported on first use (``thoughtline`` starts without loading five protocols).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from thoughtline.errors import ConfigError

if TYPE_CHECKING:
    from thoughtline.providers.wire import Wire

WireApi: TypeAlias = Literal[
    "anthropic-messages", "openai-responses", "openai-chat", "gemini", "ollama"
]
_PACKAGES: Final[dict[WireApi, str]] = {
    "anthropic-messages": "thoughtline.providers.anthropic",
    "openai-responses": "thoughtline.providers.openai_responses",
    "openai-chat": "thoughtline.providers.openai_chat",
    "gemini": "thoughtline.providers.gemini",
    "ollama": "thoughtline.providers.ollama",
}
WIRE_APIS: Final[tuple[WireApi, ...]] = tuple(_PACKAGES)
"""Every wire API, in the order documentation and error messages list them."""
DEFAULT_WIRE_API: Final[WireApi] = "openai-chat"
"""What a user-defined endpoint speaks unless it names a ``wire_api``."""

_cache: dict[str, Wire] = {}


def known_wire(wire_api: str) -> Wire | None:
    """The unit for a wire API name; ``None`` for a name that is not one."""
    cached = _cache.get(wire_api)
    if cached is not None:
        return cached
    package = _PACKAGES.get(wire_api)  # type: ignore[call-overload]
    if package is None:
        return None
    wire: Wire = import_module(package).WIRE
    _cache[wire_api] = wire
    return wire


def wire_for(wire_api: str) -> Wire:
    """The unit for a wire API name; a clear error for an unknown one."""
    wire = known_wire(wire_api)
    if wire is None:
        raise ConfigError(f"Unknown wire_api {wire_api!r}. Allowed values: {', '.join(WIRE_APIS)}.")
    return wire
