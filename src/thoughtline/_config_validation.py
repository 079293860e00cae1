"""Validating a parsed ``thoughtline.toml`` into a :class:`~thoughtline.config.Config`.

Unknown keys, wrong types and bad values are errors that name the file, the key and what
is allowed (:class:`~thoughtline.errors.ConfigError`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar, get_args

from thoughtline._user_files import describe_size
from thoughtline.config import (
    APPLICATION_NAME_LIMIT,
    DEFAULT_MAX_REQUEST_BYTES,
    MAX_ACTIVE_RUNS_CEILING,
    MAX_CONNECTIONS_CEILING,
    MAX_COST_CEILING,
    MAX_REQUEST_BYTES_CEILING,
    POSTGRES_URL_SCHEMES,
    ROLE_NAME,
    ROLE_NAME_RULE,
    STORE_SETTING_KEYS,
    STORES,
    WORKER_BACKENDS,
    Config,
    StoreSettings,
    describe_value,
    parse_duration,
)
from thoughtline.errors import ConfigError
from thoughtline.pricing import CURRENCY, DATA_PROVIDERS, PRICE_KEYS, ConfiguredPrice
from thoughtline.providers.endpoints import ChatDialect, EndpointSettings, ReasoningField
from thoughtline.providers.redaction import shown_url
from thoughtline.providers.registry import WIRE_APIS
from thoughtline.providers.timeouts import TIMEOUT_NAMES, TimeoutSettings
from thoughtline.records import CHAIN_OF_THOUGHT_MODES
from thoughtline.requests import (
    EFFORTS,
    GenerationSettings,
    max_output_tokens_problem,
    model_id_problem,
    temperature_problem,
)
from thoughtline.tools.settings import SERVER_KEYS, parse_server
from thoughtline.tools.specs import (
    DEFAULT_MAX_STEPS,
    DEFAULT_TOOL_TIMEOUT_S,
    MAX_STEPS_CEILING,
    tool_spec_problem,
)

_Choice = TypeVar("_Choice", bound=str)
_ENDPOINT_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


class ConfigValidator:
    """Checks a parsed ``thoughtline.toml`` key by key and builds the :class:`Config`,
    recording where each value came from; every mistake names the file and the key."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sources: dict[str, str] = {}

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.path}: {key}: {problem}")

    def table(self, data: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        value = data.get(key.rsplit(".", 1)[-1], {})
        if not isinstance(value, dict):
            raise self.fail(
                key, f"wrong type: must be a table ([{key}]), got {describe_value(value)}"
            )
        for name in value:
            if name not in allowed:
                raise self.fail(
                    f"{key}.{name}", f"unknown key. Allowed keys in [{key}]: {', '.join(allowed)}"
                )
        return value

    def choice(
        self,
        table: Mapping[str, object],
        key: str,
        allowed: tuple[_Choice, ...],
        default: _Choice,
    ) -> _Choice:
        """The value at ``key``, one of ``allowed`` (typed as they are), or ``default``."""
        chosen = self.optional_choice(table, key, allowed)
        return default if chosen is None else chosen

    def optional_choice(
        self, table: Mapping[str, object], key: str, allowed: tuple[_Choice, ...]
    ) -> _Choice | None:
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return None
        value = table[name]
        if not isinstance(value, str):
            raise self.fail(
                key,
                f"wrong type: must be a string, one of {', '.join(allowed)}; "
                f"got {describe_value(value)}",
            )
        for option in allowed:
            if value == option:
                self.sources[key] = str(self.path)
                return option
        raise self.fail(key, f"{value!r} is not allowed. Allowed values: {', '.join(allowed)}")

    def string(self, table: Mapping[str, object], key: str, default: str | None) -> str | None:
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        if not isinstance(value, str):
            raise self.fail(key, f"wrong type: must be a string, got {describe_value(value)}")
        if not value:
            raise self.fail(key, "must not be empty")
        self.sources[key] = str(self.path)
        return value

    def boolean(self, table: Mapping[str, object], key: str, default: bool) -> bool:
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        if not isinstance(value, bool):
            raise self.fail(key, f"wrong type: must be true or false, got {describe_value(value)}")
        self.sources[key] = str(self.path)
        return value

    def bounded_int(
        self,
        table: Mapping[str, object],
        key: str,
        default: int,
        *,
        maximum: int,
        unit: str = "",
    ) -> int:
        """An integer from 1 to ``maximum`` (``unit`` follows the maximum in messages)."""
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        allowed = f"an integer from 1 to {maximum}{unit}"
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(key, f"wrong type: must be {allowed}, got {describe_value(value)}")
        if not 1 <= value <= maximum:
            raise self.fail(key, f"must be {allowed}, got {value}")
        self.sources[key] = str(self.path)
        return value

    def counted(
        self, table: Mapping[str, object], key: str, default: int, *, lowest: int, highest: int
    ) -> int:
        """An integer from ``lowest`` to ``highest``."""
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        allowed = f"an integer from {lowest} to {highest:,}"
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(key, f"wrong type: must be {allowed}, got {describe_value(value)}")
        if not lowest <= value <= highest:
            raise self.fail(key, f"must be {allowed}, got {value}")
        self.sources[key] = str(self.path)
        return value

    def seconds_between(
        self, table: Mapping[str, object], key: str, default: float, *, lowest: int, highest: int
    ) -> float:
        """A number of seconds from ``lowest`` to ``highest``."""
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self.fail(
                key,
                f"wrong type: must be a number of seconds from {lowest} to {highest}, got "
                f"{describe_value(value)}",
            )
        if not lowest <= value <= highest:  # also refuses NaN
            raise self.fail(key, f"must be from {lowest} to {highest} seconds, got {value!r}")
        self.sources[key] = str(self.path)
        return float(value)

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

    def build(self, data: dict[str, Any]) -> Config:
        top_allowed = (
            "orchestration",
            "defaults",
            "providers",
            "roles",
            "trace",
            "telemetry",
            "store",
            "server",
            "timeouts",
            "mcp_servers",
            "prices",
        )
        for name in data:
            if name not in top_allowed:
                raise self.fail(
                    name, f"unknown section. Allowed sections: {', '.join(top_allowed)}"
                )
        orchestration = self.table(
            data,
            "orchestration",
            (
                "chain_of_thought",
                "worker_backend",
                "store",
                "max_concurrency",
                "max_tasks_per_run",
                "max_request_bytes",
                "chain_of_thought_by_role",
                "max_steps",
                "max_cost",
            ),
        )
        chain_of_thought = self.choice(
            orchestration, "orchestration.chain_of_thought", CHAIN_OF_THOUGHT_MODES, "hidden"
        )
        by_role_raw = self.table(
            orchestration,
            "orchestration.chain_of_thought_by_role",
            tuple(orchestration.get("chain_of_thought_by_role", {}) or ()),
        )
        by_role = {
            role: self.choice(
                by_role_raw,
                f"orchestration.chain_of_thought_by_role.{role}",
                CHAIN_OF_THOUGHT_MODES,
                "hidden",  # never used: the role's key is present
            )
            for role in by_role_raw
        }
        worker_backend = self.choice(
            orchestration, "orchestration.worker_backend", WORKER_BACKENDS, "provider"
        )
        store_value = orchestration.get("store")
        store_url: str | None = None
        if isinstance(store_value, str) and store_value.startswith(POSTGRES_URL_SCHEMES):
            # A URL here means store = "postgres" with that dsn.
            store, store_url = "postgres", store_value
            self.sources["orchestration.store"] = str(self.path)
        else:
            store = self.choice(orchestration, "orchestration.store", STORES, "sqlite")
        max_concurrency = self.bounded_int(
            orchestration, "orchestration.max_concurrency", 8, maximum=256
        )
        max_tasks_per_run = self.bounded_int(
            orchestration, "orchestration.max_tasks_per_run", 32, maximum=1000
        )
        max_steps = self.bounded_int(
            orchestration, "orchestration.max_steps", DEFAULT_MAX_STEPS, maximum=MAX_STEPS_CEILING
        )
        max_cost = self.max_cost(orchestration, "orchestration.max_cost")
        max_request_bytes = self.bounded_int(
            orchestration,
            "orchestration.max_request_bytes",
            DEFAULT_MAX_REQUEST_BYTES,
            maximum=MAX_REQUEST_BYTES_CEILING,
            unit=f" bytes ({describe_size(MAX_REQUEST_BYTES_CEILING)})",
        )

        store_table = self.table(
            data,
            "store",
            ("dsn", *STORE_SETTING_KEYS),
        )
        dsn = self.string(store_table, "store.dsn", None)
        store_settings = self.store_settings(store_table)
        if store_url is not None:
            if dsn is not None:
                raise self.fail(
                    "store.dsn",
                    "the store's URL is given twice (also as orchestration.store); keep one",
                )
            dsn = store_url
            self.sources["store.dsn"] = str(self.path)
        if store == "postgres" and dsn is None:
            raise self.fail(
                "store.dsn",
                'orchestration.store = "postgres" needs [store] dsn = "postgresql://..."',
            )

        server = self.table(
            data,
            "server",
            ("max_active_runs", "max_connections", "header_timeout_s", "keep_alive_timeout_s"),
        )
        max_active_runs = (
            self.counted(
                server, "server.max_active_runs", 0, lowest=1, highest=MAX_ACTIVE_RUNS_CEILING
            )
            if "max_active_runs" in server
            else None
        )
        base = Config(path=None)
        max_connections = self.counted(
            server,
            "server.max_connections",
            base.max_connections,
            lowest=1,
            highest=MAX_CONNECTIONS_CEILING,
        )
        header_timeout = self.seconds_between(
            server, "server.header_timeout_s", base.header_timeout_s, lowest=1, highest=3600
        )
        keep_alive_timeout = self.seconds_between(
            server,
            "server.keep_alive_timeout_s",
            base.keep_alive_timeout_s,
            lowest=1,
            highest=3600,
        )

        defaults = self.table(
            data,
            "defaults",
            ("provider", "model", "effort", "max_output_tokens", "temperature", "role"),
        )
        default_role = self.string(defaults, "defaults.role", None)
        if default_role is not None:
            if not ROLE_NAME.match(default_role):
                raise self.fail(
                    "defaults.role", f"{default_role!r} is not a valid role name: {ROLE_NAME_RULE}"
                )
            self.sources["defaults.role"] = str(self.path)
        default_provider = self.string(defaults, "defaults.provider", "anthropic") or "anthropic"
        default_model = (
            self.string(defaults, "defaults.model", "claude-sonnet-4-6") or "claude-sonnet-4-6"
        )
        model_problem = model_id_problem(default_model)
        if model_problem is not None:
            raise self.fail("defaults.model", model_problem)
        default_effort = self.choice(defaults, "defaults.effort", EFFORTS, "provider-default")
        for name, problem in (
            ("max_output_tokens", max_output_tokens_problem),
            ("temperature", temperature_problem),
        ):
            if name in defaults:
                found = problem(defaults[name])
                if found is not None:
                    raise self.fail(f"defaults.{name}", found)
                self.sources[f"defaults.{name}"] = str(self.path)
        default_generation = GenerationSettings(
            max_output_tokens=defaults.get("max_output_tokens"),
            temperature=None if "temperature" not in defaults else float(defaults["temperature"]),
        )

        providers_raw = data.get("providers", {})
        if not isinstance(providers_raw, dict):
            raise self.fail(
                "providers",
                "wrong type: must be a table of [providers.NAME] sections, "
                f"got {describe_value(providers_raw)}",
            )
        providers = {name: self._endpoint(name, value) for name, value in providers_raw.items()}

        roles_raw = data.get("roles", {})
        if not isinstance(roles_raw, dict):
            raise self.fail(
                "roles",
                'wrong type: must be a table of [roles.NAME] sections with prompt = "...", '
                f"got {describe_value(roles_raw)}",
            )
        roles = {}
        role_tools: dict[str, tuple[str, ...]] = {}
        role_max_steps: dict[str, int] = {}
        role_max_cost: dict[str, float] = {}
        for name, value in roles_raw.items():
            if not ROLE_NAME.match(name):
                raise self.fail(
                    f"roles.{name}", f"{name!r} is not a valid role name: {ROLE_NAME_RULE}"
                )
            role_table = self.table(
                {name: value}, f"roles.{name}", ("prompt", "tools", "max_steps", "max_cost")
            )
            prompt = self.string(role_table, f"roles.{name}.prompt", None)
            if prompt is None:
                raise self.fail(f"roles.{name}.prompt", "missing: a role needs its persona prompt")
            roles[name] = prompt
            if "tools" in role_table:
                role_tools[name] = self.tool_specs(role_table["tools"], f"roles.{name}.tools")
            if "max_steps" in role_table:
                role_max_steps[name] = self.bounded_int(
                    role_table, f"roles.{name}.max_steps", DEFAULT_MAX_STEPS,
                    maximum=MAX_STEPS_CEILING,
                )  # fmt: skip
            role_cost = self.max_cost(role_table, f"roles.{name}.max_cost")
            if role_cost is not None:
                role_max_cost[name] = role_cost

        servers_raw = data.get("mcp_servers", {})
        if not isinstance(servers_raw, dict):
            raise self.fail(
                "mcp_servers",
                "wrong type: must be a table of [mcp_servers.NAME] sections, "
                f"got {describe_value(servers_raw)}",
            )
        mcp_servers = {}
        for name, value in servers_raw.items():
            server_table = self.table({name: value}, f"mcp_servers.{name}", SERVER_KEYS)
            mcp_servers[name] = parse_server(name, server_table, str(self.path), self.fail)
            self.sources[f"mcp_servers.{name}"] = str(self.path)

        trace = self.table(data, "trace", ("provider_raw", "retention"))
        provider_raw = self.boolean(trace, "trace.provider_raw", False)
        retention_raw = self.table(
            trace, "trace.retention", ("provider_raw", "reasoning", "answer")
        )
        retention = {"provider_raw": "7d", "reasoning": "30d", "answer": "forever"}
        for layer, value in retention_raw.items():
            key = f"trace.retention.{layer}"
            if not isinstance(value, str):
                raise self.fail(
                    key,
                    'wrong type: must be a string such as "7d" or "forever", '
                    f"got {describe_value(value)}",
                )
            try:
                parse_duration(value)
            except ValueError:
                raise self.fail(
                    key,
                    f"{value!r} is not a duration. Use a number and a unit (s, m, h, d, w), "
                    'e.g. "7d", or "forever"',
                ) from None
            retention[layer] = value
            self.sources[key] = str(self.path)

        telemetry = self.table(data, "telemetry", ("exporter", "endpoint", "capture_content"))
        exporter = self.choice(telemetry, "telemetry.exporter", ("none", "otlp"), "none")
        telemetry_endpoint = self.string(telemetry, "telemetry.endpoint", None)
        capture = self.boolean(telemetry, "telemetry.capture_content", False)
        timeouts_raw = data.get("timeouts", {})
        tool_timeout = DEFAULT_TOOL_TIMEOUT_S
        if isinstance(timeouts_raw, dict):
            tool_timeout = self.seconds(timeouts_raw, "timeouts.tool", DEFAULT_TOOL_TIMEOUT_S)
            # The rest bound a provider call (the same keys as [providers.NAME.timeouts]).
            timeouts_raw = {name: value for name, value in timeouts_raw.items() if name != "tool"}
        timeouts = self.timeouts({"timeouts": timeouts_raw}, "timeouts")

        return Config(
            path=self.path,
            chain_of_thought=chain_of_thought,
            chain_of_thought_by_role=by_role,
            worker_backend=worker_backend,
            store=store,
            store_dsn=dsn,
            store_settings=store_settings,
            max_concurrency=max_concurrency,
            max_tasks_per_run=max_tasks_per_run,
            max_request_bytes=max_request_bytes,
            max_steps=max_steps,
            max_cost=max_cost,
            max_active_runs=max_active_runs,
            max_connections=max_connections,
            header_timeout_s=header_timeout,
            keep_alive_timeout_s=keep_alive_timeout,
            tool_timeout_s=tool_timeout,
            default_provider=default_provider,
            default_model=default_model,
            default_effort=default_effort,
            default_role=default_role,
            default_generation=default_generation,
            providers=providers,
            trace_provider_raw=provider_raw,
            retention=retention,
            telemetry_exporter=exporter,
            telemetry_endpoint=telemetry_endpoint,
            telemetry_capture_content=capture,
            timeouts=timeouts,
            roles=roles,
            role_tools=role_tools,
            role_max_steps=role_max_steps,
            role_max_cost=role_max_cost,
            mcp_servers=mcp_servers,
            prices=self.prices(data.get("prices", {})),
            sources=self.sources,
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

    def max_cost(self, table: Mapping[str, object], key: str) -> float | None:
        """A budget in US dollars: a finite number from 0 up (``None``: not set)."""
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return None
        value = table[name]
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
            or not 0 <= value <= MAX_COST_CEILING
        ):
            raise self.fail(
                key,
                f"must be a number of US dollars from 0 to {MAX_COST_CEILING:,.0f}, got {value!r}",
            )
        self.sources[key] = str(self.path)
        return float(value)

    def seconds(self, table: Mapping[str, object], key: str, default: float) -> float:
        """A positive, finite number of seconds."""
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise self.fail(key, f"must be a positive number of seconds, got {value!r}")
        self.sources[key] = str(self.path)
        return float(value)

    def tool_specs(self, value: object, key: str) -> tuple[str, ...]:
        """A list of ``SERVER`` or ``SERVER.TOOL`` names (whether each server exists is
        checked when a run is planned: ``--mcp-config`` may add servers)."""
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(
                key,
                'wrong type: must be a list of "SERVER" or "SERVER.TOOL" strings, '
                f"got {describe_value(value)}",
            )
        for item in value:
            problem = tool_spec_problem(item)
            if problem is not None:
                raise self.fail(key, problem)
        self.sources[key] = str(self.path)
        return tuple(value)

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
