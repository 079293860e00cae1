"""Anthropic's Models API: which models the key can see and what each accepts.

``GET /v1/models`` (paginated), then ``GET /v1/models/{id}`` per model, whose
``capabilities`` say which thinking types and efforts the model accepts (``supported:
false`` exactly when sending it is a 400). :mod:`thoughtline.providers.discovery`
caches the answer for ``thoughtline providers --refresh``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx2

from thoughtline.errors import ProviderError
from thoughtline.model.requests import Effort
from thoughtline.providers.anthropic._errors import parse_error
from thoughtline.providers.anthropic._request import ANTHROPIC_VERSION
from thoughtline.providers.capabilities import ThinkingControl
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.redaction import shown_url

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


async def list_models(endpoint: Endpoint, http: httpx2.AsyncClient) -> dict[str, dict[str, Any]]:
    """Every model the key can see, with what it accepts (paginated list, then one
    ``GET /v1/models/{id}`` per model)."""
    headers = {"anthropic-version": ANTHROPIC_VERSION}
    key = endpoint.require_key()
    if key:
        headers["x-api-key"] = key
    ids: list[str] = []
    after: str | None = None
    while True:
        params = {"limit": "100", **({"after_id": after} if after else {})}
        page = await _get_json(http, f"{endpoint.base_url}/v1/models", headers, params)
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
        info = await _get_json(http, url, headers, {})
        entries[model_id] = capability_from_model_info(info)
    return entries


async def _get_json(
    http: httpx2.AsyncClient,
    url: str,
    headers: dict[str, str],
    params: dict[str, str],
) -> dict[str, Any]:
    """The JSON object at ``url``; an error response is read as the Messages API's (the
    Models API answers errors alike)."""
    try:
        response = await http.get(url, headers=headers, params=params)
    except httpx2.TransportError as exc:
        raise ProviderError(
            "PROVIDER_UNREACHABLE",
            shown_url(f"Cannot reach {url} ({exc}). Check the base URL."),
            retryable=True,
        ) from exc
    if response.status_code >= 400:
        raise parse_error(response.status_code, response.headers, response.content)
    data = response.json()
    if not isinstance(data, dict):
        raise ProviderError(
            "PROVIDER_MALFORMED_RESPONSE", f"{shown_url(url)} did not return a JSON object."
        )
    return data
