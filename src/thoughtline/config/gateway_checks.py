"""``[gateway]`` checked key by key like every other section: a mistake names the file
and the key."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from thoughtline.config import describe_value
from thoughtline.config.checks import KeyChecks
from thoughtline.config.gateway import (
    CLIENT_KEYS,
    CLIENT_NAME,
    CLIENT_NAME_RULE,
    GATEWAY_KEYS,
    TOKEN_SHA256,
    GatewayClient,
    GatewaySettings,
)
from thoughtline.model.requests import model_id_problem
from thoughtline.records import CHAIN_OF_THOUGHT_MODES

_ENDPOINT_NAME: Final = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_ALIAS: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@~-]{0,127}$")


class GatewayChecks(KeyChecks):
    """Checks ``[gateway]`` and its tables."""

    def gateway(self, data: Mapping[str, Any]) -> GatewaySettings:
        table = self.table(data, "gateway", GATEWAY_KEYS)
        base = GatewaySettings()
        clients_raw = table.get("clients", {})
        if not isinstance(clients_raw, dict):
            raise self.fail(
                "gateway.clients",
                "wrong type: must be a table of [gateway.clients.NAME] sections, "
                f"got {describe_value(clients_raw)}",
            )
        clients = {name: self._client(name, value) for name, value in clients_raw.items()}
        return GatewaySettings(
            enabled=self.boolean(table, "gateway.enabled", base.enabled),
            clients=clients,
            models=self._aliases(table.get("models", {})),
            carriers_max=self.bounded_int(
                table, "gateway.carriers_max", base.carriers_max, maximum=10_000_000
            ),
            carriers_ttl_s=self.seconds_between(
                table, "gateway.carriers_ttl_s", base.carriers_ttl_s, lowest=1, highest=604_800
            ),
            stream_backlog_max=self.bounded_int(
                table, "gateway.stream_backlog_max", base.stream_backlog_max, maximum=1_000_000
            ),
        )

    def _client(self, name: str, value: object) -> GatewayClient:
        key = f"gateway.clients.{name}"
        if not CLIENT_NAME.match(name):
            raise self.fail(key, f"client names {CLIENT_NAME_RULE}")
        table = self.table({name: value}, key, CLIENT_KEYS)
        digest = self.string(table, f"{key}.token_sha256", None)
        if digest is None:
            raise self.fail(
                f"{key}.token_sha256",
                "missing: a client needs its token's SHA-256; make one with "
                f"`thoughtline gateway add-client {name}`",
            )
        if not TOKEN_SHA256.match(digest):
            raise self.fail(
                f"{key}.token_sha256",
                "must be 64 lowercase hexadecimal digits (the SHA-256 of the client's token, "
                "as `thoughtline gateway add-client` writes it)",
            )
        return GatewayClient(
            name=name,
            token_sha256=digest,
            chain_of_thought=self.choice(
                table, f"{key}.chain_of_thought", CHAIN_OF_THOUGHT_MODES, "hidden"
            ),
            endpoints=self._names(table, f"{key}.endpoints", self._endpoint_problem),
            models=self._names(table, f"{key}.models", self._model_problem),
            max_cost=self.max_cost(table, f"{key}.max_cost"),
            max_active=(
                self.bounded_int(table, f"{key}.max_active", 1, maximum=100_000)
                if "max_active" in table
                else None
            ),
        )

    def _names(
        self,
        table: Mapping[str, object],
        key: str,
        problem: Callable[[str], str | None],
    ) -> tuple[str, ...] | None:
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return None
        value = table[name]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(
                key, f"wrong type: must be an array of strings, got {describe_value(value)}"
            )
        for item in value:
            if (found := problem(item)) is not None:
                raise self.fail(key, f"{item!r} {found}")
        self.sources[key] = str(self.path)
        return tuple(value)

    @staticmethod
    def _endpoint_problem(item: str) -> str | None:
        if _ENDPOINT_NAME.match(item):
            return None
        return "is not an endpoint name (lowercase letters, digits, '-', '_' and '.')"

    @staticmethod
    def _model_problem(item: str) -> str | None:
        endpoint, slash, model = item.partition("/")
        if not slash:
            return None if _ALIAS.match(item) else "is neither ENDPOINT/MODEL nor an alias"
        if not _ENDPOINT_NAME.match(endpoint):
            return "names no endpoint before its '/'"
        if model == "*":
            return None
        problem = model_id_problem(model)
        return None if problem is None else f"has a bad model id: {problem}"

    def _aliases(self, value: object) -> dict[str, str]:
        if not isinstance(value, dict):
            raise self.fail(
                "gateway.models",
                'wrong type: must be a table of aliases (name = "ENDPOINT/MODEL"), '
                f"got {describe_value(value)}",
            )
        aliases: dict[str, str] = {}
        for alias, target in value.items():
            key = f"gateway.models.{alias}"
            if not _ALIAS.match(alias):
                raise self.fail(
                    key,
                    "an alias uses letters, digits and '_ . : @ ~ -' (up to 128), no '/'",
                )
            if not isinstance(target, str):
                raise self.fail(
                    key, f'wrong type: must be "ENDPOINT/MODEL", got {describe_value(target)}'
                )
            endpoint, slash, model = target.partition("/")
            problem = model_id_problem(model) if model else "empty"
            if not slash or not _ENDPOINT_NAME.match(endpoint) or problem is not None:
                raise self.fail(
                    key,
                    f'must be "ENDPOINT/MODEL" (e.g. "anthropic/claude-sonnet-4-6"), got '
                    f"{target!r}",
                )
            aliases[alias] = target
            self.sources[key] = str(self.path)
        return aliases
