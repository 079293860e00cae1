"""Capability discovery: refresh the capability table from the provider's model API.

Anthropic's ``GET /v1/models/{id}`` says which thinking types and efforts a model
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
from urllib.parse import quote

import httpx2

from thoughtline._private_files import make_private_dir, write_private_text
from thoughtline._user_files import MIB, read_text_file
from thoughtline.errors import ConfigError, ProviderError
from thoughtline.providers.capabilities import (
    THINKING_CONTROLS,
    CapabilityTable,
    ModelCapability,
    ThinkingControl,
    builtin_capabilities,
)
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.redaction import shown_url
from thoughtline.requests import EFFORTS, Effort

logger = logging.getLogger(__name__)

CACHE_FILE = "capabilities.json"
MAX_CACHE_BYTES = 4 * MIB
"""A cache larger than this (far more models than any endpoint lists) is ignored."""
_EFFORT_NAMES: tuple[Effort, ...] = ("low", "medium", "high", "xhigh", "max")


def capability_from_model_info(info: dict[str, Any]) -> dict[str, Any]:
    """What one ``GET /v1/models/{id}`` answer says, as a cache entry."""
    capabilities = info.get("capabilities") or {}
    types = (capabilities.get("thinking") or {}).get("types") or {}
    efforts = capabilities.get("effort") or {}

    def supported(table: dict[str, Any], key: str) -> bool:
        entry = table.get(key)
        return isinstance(entry, dict) and entry.get("supported") is True

    control: ThinkingControl
    if supported(types, "adaptive"):
        control = "adaptive"
    elif supported(types, "enabled"):
        control = "budget"
    else:
        control = "none"
    return {
        "thinking_control": control,
        "efforts": [name for name in _EFFORT_NAMES if supported(efforts, name)],
        "display_name": info.get("display_name"),
    }


async def refresh_anthropic(
    endpoint: Endpoint, http: httpx2.AsyncClient
) -> dict[str, dict[str, Any]]:
    """Every model the key can see, with what it accepts (paginated list, then one
    ``GET /v1/models/{id}`` per model)."""
    headers = {"anthropic-version": "2023-06-01"}
    key = endpoint.require_key()
    if key:
        headers["x-api-key"] = key
    ids: list[str] = []
    after: str | None = None
    while True:
        params = {"limit": "100", **({"after_id": after} if after else {})}
        page = await _get_json(http, endpoint, f"{endpoint.base_url}/v1/models", headers, params)
        ids += [
            str(item["id"])
            for item in page.get("data", [])
            if isinstance(item, dict) and "id" in item
        ]
        if not page.get("has_more") or not page.get("last_id"):
            break
        after = str(page["last_id"])
    entries = {}
    for model_id in ids:
        # The id is the provider's, yet one path segment: encoded, it cannot leave /v1/models/.
        url = f"{endpoint.base_url}/v1/models/{quote(model_id, safe='')}"
        info = await _get_json(http, endpoint, url, headers, {})
        entries[model_id] = capability_from_model_info(info)
    return entries


async def _get_json(
    http: httpx2.AsyncClient,
    endpoint: Endpoint,
    url: str,
    headers: dict[str, str],
    params: dict[str, str],
) -> dict[str, Any]:
    """The JSON object at ``url``; an error response is read as ``endpoint``'s wire API
    reads one (the Models API answers errors as the Messages API does)."""
    try:
        response = await http.get(url, headers=headers, params=params)
    except httpx2.TransportError as exc:
        raise ProviderError(
            "PROVIDER_UNREACHABLE",
            shown_url(f"Cannot reach {url} ({exc}). Check the base URL."),
            retryable=True,
        ) from exc
    if response.status_code >= 400:
        from thoughtline.providers.registry import wire_for

        raise wire_for(endpoint.wire_api).parse_error(
            response.status_code, response.headers, response.content
        )
    data = response.json()
    if not isinstance(data, dict):
        raise ProviderError(
            "PROVIDER_MALFORMED_RESPONSE", f"{shown_url(url)} did not return a JSON object."
        )
    return data


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
