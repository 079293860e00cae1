"""The config's tables with a shape of their own: the store, prices, timeouts and each
provider endpoint, checked key by key (:class:`~thoughtline.config.checks.KeyChecks`)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, get_args

from thoughtline.config import (
    APPLICATION_NAME_LIMIT,
    StoreSettings,
    describe_value,
)
from thoughtline.config.checks import KeyChecks
from thoughtline.config.pricing import CURRENCY, DATA_PROVIDERS, PRICE_KEYS, ConfiguredPrice
from thoughtline.providers.endpoints import ChatDialect, EndpointSettings, ReasoningField
from thoughtline.providers.redaction import shown_url
from thoughtline.providers.registry import WIRE_APIS
from thoughtline.providers.timeouts import TIMEOUT_NAMES, TimeoutSettings

_ENDPOINT_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


class SectionChecks(KeyChecks):
    """Checks the store, ``[prices]``, ``[timeouts]`` and ``[providers.NAME]`` tables."""

    def store_settings(self, table: Mapping[str, object]) -> StoreSettings:
        """``[store]``'s pool, lease, flush, statement timeout and application name."""
        base = StoreSettings()
        pool_min = self.counted(table, "store.pool_min", base.pool_min, lowest=1, highest=100)
        pool_max = self.counted(
            table, "store.pool_max", max(base.pool_max, pool_min), lowest=1, highest=1000
        )
        if pool_max < pool_min:
            raise self.fail(
                "store.pool_max",
                f"must be at least store.pool_min ({pool_min}), got {pool_max}",
            )
        lease = self.seconds_between(table, "store.lease_s", base.lease_s, lowest=1, highest=600)
        buffer_rows = self.counted(
            table,
            "store.outage_buffer_rows",
            base.outage_buffer_rows,
            lowest=0,
            highest=10_000_000,
        )
        # Unset, it follows a shorter lease: under three missed beats either way.
        outage_limit = self.seconds_between(
            table,
            "store.outage_limit_s",
            min(base.outage_limit_s, 2 * lease),
            lowest=0,
            highest=3600,
        )
        if outage_limit >= 3 * lease:
            raise self.fail(
                "store.outage_limit_s",
                f"must be under three store.lease_s beats ({3 * lease:g} s): after those, "
                f"other hosts presume this process's runs dead, got {outage_limit!r}",
            )
        flush = (
            self.counted(table, "store.live_flush_ms", 0, lowest=1, highest=10_000)
            if "live_flush_ms" in table
            else None
        )
        timeout = self.counted(
            table,
            "store.statement_timeout_ms",
            base.statement_timeout_ms,
            lowest=0,
            highest=86_400_000,
        )
        name = self.string(table, "store.application_name", base.application_name)
        assert name is not None
        if (
            len(name.encode()) > APPLICATION_NAME_LIMIT
            or not name.isprintable()
            or not name.isascii()
        ):
            raise self.fail(
                "store.application_name",
                f"must be printable ASCII of at most {APPLICATION_NAME_LIMIT} characters "
                f"(PostgreSQL cuts longer names and shows others as ?), got {name!r}",
            )
        return StoreSettings(
            pool_min=pool_min,
            pool_max=pool_max,
            lease_s=lease,
            live_flush_ms=flush,
            statement_timeout_ms=timeout,
            application_name=name,
            outage_buffer_rows=buffer_rows,
            outage_limit_s=outage_limit,
        )

    def prices(self, value: object) -> dict[str, ConfiguredPrice]:
        """``[prices."provider/model"]`` entries: USD per million tokens, ``input`` and
        ``output`` required, each a number from 0 up; ``currency`` only ``"USD"``."""
        if not isinstance(value, dict):
            raise self.fail(
                "prices", f"wrong type: must be a table ([prices]), got {describe_value(value)}"
            )
        entries: dict[str, ConfiguredPrice] = {}
        for name, entry in value.items():
            key = f'prices."{name}"'
            provider, _, model = name.partition("/")
            if not _ENDPOINT_NAME.match(provider) or not model:
                raise self.fail(
                    key,
                    'must name a provider and a model, e.g. [prices."ollama/qwen3:8b"] '
                    '(or [prices."ollama/*"] for every model of an endpoint)',
                )
            if not isinstance(entry, dict):
                raise self.fail(
                    key, f"wrong type: must be a table of prices, got {describe_value(entry)}"
                )
            allowed = (*PRICE_KEYS, "currency")
            for field_name in entry:
                if field_name not in allowed:
                    raise self.fail(
                        f"{key}.{field_name}",
                        f"unknown key. Allowed keys in [{key}]: {', '.join(allowed)}",
                    )
            currency = entry.get("currency", CURRENCY)
            if currency != CURRENCY:
                raise self.fail(
                    f"{key}.currency",
                    f"{currency!r} is not allowed: prices are in USD (the price data's "
                    'currency); leave currency out or set it to "USD"',
                )
            rates: dict[str, Decimal] = {}
            for field_name in PRICE_KEYS:
                if field_name not in entry:
                    if field_name in ("input", "output"):
                        raise self.fail(
                            f"{key}.{field_name}",
                            "missing: a price entry needs input and output "
                            "(USD per million tokens; 0 for a call that costs nothing)",
                        )
                    continue
                rate = entry[field_name]
                if (
                    isinstance(rate, bool)
                    or not isinstance(rate, int | float)
                    or not math.isfinite(rate)
                    or rate < 0
                ):
                    raise self.fail(
                        f"{key}.{field_name}",
                        "must be a number of US dollars per million tokens, 0 or more; "
                        f"got {describe_value(rate)}",
                    )
                rates[field_name] = Decimal(str(rate))
                self.sources[f"{key}.{field_name}"] = str(self.path)
            entries[name] = ConfiguredPrice(**rates)
        return entries

    def timeouts(self, data: Mapping[str, Any], key: str) -> TimeoutSettings:
        """``[timeouts]`` or ``[providers.NAME.timeouts]``: seconds, each key optional."""
        table = self.table(data, key, TIMEOUT_NAMES)
        values: dict[str, float] = {}
        for name, value in table.items():
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise self.fail(
                    f"{key}.{name}", f"must be a positive number of seconds, got {value!r}"
                )
            values[name] = float(value)
            self.sources[f"{key}.{name}"] = str(self.path)
        return TimeoutSettings(**values)

    def _endpoint(self, name: str, value: Any) -> EndpointSettings:
        key = f"providers.{name}"
        if not _ENDPOINT_NAME.match(name):
            raise self.fail(key, "endpoint names use lowercase letters, digits, '-', '_' and '.'")
        table = self.table(
            {name: value},
            key,
            (
                "wire_api",
                "base_url",
                "api_key_env",
                "reasoning_field",
                "dialect",
                "timeouts",
                "max_concurrency",
                "prices",
            ),
        )
        wire_api = self.optional_choice(table, f"{key}.wire_api", WIRE_APIS)
        base_url = self.string(table, f"{key}.base_url", None)
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            raise self.fail(
                f"{key}.base_url",
                f"must start with http:// or https://, got {shown_url(base_url)!r}",
            )
        api_key_env = self.string(table, f"{key}.api_key_env", None)
        reasoning_field: ReasoningField | None = self.optional_choice(
            table, f"{key}.reasoning_field", get_args(ReasoningField)
        )
        dialect: ChatDialect | None = self.optional_choice(
            table, f"{key}.dialect", get_args(ChatDialect)
        )
        return EndpointSettings(
            wire_api=wire_api,
            base_url=base_url,
            api_key_env=api_key_env,
            reasoning_field=reasoning_field,
            dialect=dialect,
            timeouts=self.timeouts(table, f"{key}.timeouts"),
            max_concurrency=(
                self.bounded_int(table, f"{key}.max_concurrency", 0, maximum=1000)
                if "max_concurrency" in table
                else None
            ),
            prices=self.optional_choice(table, f"{key}.prices", tuple(DATA_PROVIDERS)),
        )
