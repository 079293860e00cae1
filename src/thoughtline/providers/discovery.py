"""Capability discovery: refresh the capability table from the provider's model API.

The wire's unit reads the model API (``Wire.list_models``; Anthropic's, in
``providers/anthropic/_models.py``): Anthropic's ``GET /v1/models/{id}`` says which thinking types and efforts a model
accepts (``supported: false`` exactly when sending it is a 400). ``thoughtline providers
--refresh`` stores what it reports in ``$THOUGHTLINE_HOME/capabilities.json``; look-ups
then prefer a cached entry for that exact model over the built-in family table. Reading
the cache never fails a run: a missing or broken file means the built-in table.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2

from thoughtline._private_files import make_private_dir, write_private_text
from thoughtline._user_files import MIB, read_text_file
from thoughtline.errors import ConfigError
from thoughtline.model.requests import EFFORTS, Effort
from thoughtline.providers.capabilities import (
    THINKING_CONTROLS,
    CapabilityTable,
    ModelCapability,
    builtin_capabilities,
)
from thoughtline.providers.endpoints import Endpoint

logger = logging.getLogger(__name__)

CACHE_FILE = "capabilities.json"
MAX_CACHE_BYTES = 4 * MIB
"""A cache larger than this (far more models than any endpoint lists) is ignored."""
_EFFORT_NAMES: tuple[Effort, ...] = ("low", "medium", "high", "xhigh", "max")


async def refresh_models(endpoint: Endpoint, http: httpx2.AsyncClient) -> dict[str, dict[str, Any]]:
    """Every model ``endpoint``'s key can see, as cache entries, from the model API of
    the wire API it speaks (its unit's ``list_models``); ``CONFIG_INVALID`` for a wire
    API whose model API thoughtline does not read."""
    from thoughtline.providers.registry import wire_for

    list_models = wire_for(endpoint.wire_api).list_models
    if list_models is None:
        raise ConfigError(
            f"Provider {endpoint.name!r} speaks {endpoint.wire_api}, whose model API "
            "thoughtline does not read; only Anthropic's is. Leave its wire_api as it is "
            "built in to refresh it."
        )
    return await list_models(endpoint, http)


def write_cache(home: Path, endpoint_name: str, entries: dict[str, dict[str, Any]]) -> Path:
    path = home / CACHE_FILE
    make_private_dir(home)  # the home holds private files (0700 when created here)
    try:
        cache = (
            json.loads(read_text_file(path, "capability cache", limit=MAX_CACHE_BYTES))
            if path.exists()
            else {}
        )
    except (ConfigError, ValueError):
        cache = {}
    cache[endpoint_name] = {"fetched_at": datetime.now(UTC).isoformat(), "models": entries}
    temporary = path.with_suffix(".tmp")
    write_private_text(temporary, json.dumps(cache, indent=2))  # 0600, like the database
    temporary.replace(path)  # atomic: a reader never sees half a file
    return path


def _checked(entry: dict[str, Any]) -> dict[str, Any]:
    control = entry["thinking_control"]
    efforts = list(entry["efforts"])
    if control not in THINKING_CONTROLS or any(effort not in EFFORTS for effort in efforts):
        raise ValueError(f"bad entry {entry!r}")
    return {"thinking_control": control, "efforts": efforts}


class CachedCapabilityTable(CapabilityTable):
    """The built-in table, with exact-model entries from the discovery cache on top."""

    def __init__(self, base: CapabilityTable, cached: dict[str, dict[str, dict[str, Any]]]) -> None:
        super().__init__(base.families)
        self.cached = cached

    def lookup(self, endpoint: str, model: str) -> ModelCapability:
        family = super().lookup(endpoint, model)
        entry = self.cached.get(endpoint, {}).get(model)
        if entry is None:
            return family
        return replace(
            family,
            thinking_control=entry["thinking_control"],
            efforts=tuple(entry["efforts"]),
            source="cache",
        )

    def model_ids(self, endpoint: str) -> list[str]:
        """The built-in ids, then the ones the provider's model API listed."""
        cached = self.cached.get(endpoint, {})
        return list(dict.fromkeys([*super().model_ids(endpoint), *cached]))


def load_capabilities(home: Path) -> CapabilityTable:
    """The table every call uses: built-in, plus the discovery cache when there is one."""
    base = builtin_capabilities()
    path = home / CACHE_FILE
    if not path.exists():
        return base
    try:
        raw = json.loads(read_text_file(path, "capability cache", limit=MAX_CACHE_BYTES))
        cached = {
            endpoint: {model: _checked(entry) for model, entry in section["models"].items()}
            for endpoint, section in raw.items()
        }
    except (ConfigError, ValueError, KeyError, TypeError, AttributeError) as exc:
        logger.warning("ignoring the capability cache %s (%s); using the built-in table", path, exc)
        return base
    return CachedCapabilityTable(base, cached)
