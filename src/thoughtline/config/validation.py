"""Validating a parsed ``thoughtline.toml`` into a :class:`~thoughtline.config.Config`.

Unknown keys, wrong types and bad values are errors that name the file, the key and what
is allowed (:class:`~thoughtline.errors.ConfigError`).
"""

from __future__ import annotations

from typing import Any

from thoughtline._user_files import describe_size
from thoughtline.config import (
    DEFAULT_MAX_REQUEST_BYTES,
    MAX_ACTIVE_RUNS_CEILING,
    MAX_CONNECTIONS_CEILING,
    MAX_REQUEST_BYTES_CEILING,
    POSTGRES_URL_SCHEMES,
    ROLE_NAME,
    ROLE_NAME_RULE,
    STORE_SETTING_KEYS,
    STORES,
    WORKER_BACKENDS,
    Config,
    describe_value,
    parse_duration,
)
from thoughtline.config.gateway_checks import GatewayChecks
from thoughtline.config.sections import SectionChecks
from thoughtline.model.requests import (
    EFFORTS,
    GenerationSettings,
    max_output_tokens_problem,
    model_id_problem,
    temperature_problem,
)
from thoughtline.records import CHAIN_OF_THOUGHT_MODES
from thoughtline.tools.settings import SERVER_KEYS, parse_server
from thoughtline.tools.specs import (
    DEFAULT_MAX_STEPS,
    DEFAULT_TOOL_TIMEOUT_S,
    MAX_STEPS_CEILING,
)


class ConfigValidator(SectionChecks, GatewayChecks):
    """Checks a parsed ``thoughtline.toml`` key by key and builds the :class:`Config`,
    recording where each value came from; every mistake names the file and the key."""

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
            "gateway",
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
            gateway=self.gateway(data),
            sources=self.sources,
        )
