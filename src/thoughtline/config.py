"""``thoughtline.toml``: strictly validated, with the source of every value recorded.

Unknown keys, wrong types and bad values are errors that name the file, the key and
what is allowed. Where the file lives: ``$THOUGHTLINE_CONFIG``, else ``./thoughtline.toml``,
else ``$THOUGHTLINE_HOME/config.toml``; no file at all means built-in defaults.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar, get_args

from platformdirs import user_data_dir

from thoughtline.errors import ConfigError
from thoughtline.providers.base import WIRE_APIS
from thoughtline.providers.endpoints import (
    ChatDialect,
    EndpointSettings,
    ReasoningField,
)
from thoughtline.providers.timeouts import TIMEOUT_NAMES, TimeoutSettings
from thoughtline.records import CHAIN_OF_THOUGHT_MODES, ChainOfThought, WorkerBackend
from thoughtline.requests import (
    EFFORTS,
    Effort,
    GenerationSettings,
    max_output_tokens_problem,
    temperature_problem,
)

WORKER_BACKENDS: tuple[WorkerBackend, ...] = ("provider", "inline")
STORES = ("sqlite", "postgres")
STORE_URL_VARIABLE = "THOUGHTLINE_STORE_URL"
"""A PostgreSQL connection URL that overrides the config's store."""
POSTGRES_URL_SCHEMES = ("postgresql://", "postgres://")
_Choice = TypeVar("_Choice", bound=str)
_DURATION = re.compile(r"^(\d+)([smhdw])$")
_DURATION_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_ENDPOINT_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
# Role names are also file names (specialists/<role>.md), so no paths, spaces or dots.
ROLE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
ROLE_NAME_RULE = "use lowercase letters, digits, '-' and '_', starting with a letter or digit"


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The resolved configuration. ``sources`` maps dotted keys to where each value came
    from (``default``, or the config file's path)."""

    path: Path | None
    chain_of_thought: ChainOfThought = "hidden"
    chain_of_thought_by_role: Mapping[str, ChainOfThought] = field(default_factory=dict)
    worker_backend: WorkerBackend = "provider"
    store: str = "sqlite"
    store_dsn: str | None = None
    max_concurrency: int = 8
    max_tasks_per_run: int = 32
    """A run with more tasks is refused before anything is stored or called."""
    default_provider: str = "anthropic"
    default_model: str = "claude-sonnet-4-6"
    default_effort: Effort = "provider-default"
    default_generation: GenerationSettings = field(default_factory=GenerationSettings)
    """``[defaults] max_output_tokens`` and ``temperature`` (unset: the provider's)."""
    providers: Mapping[str, EndpointSettings] = field(default_factory=dict)
    trace_provider_raw: bool = False
    retention: Mapping[str, str] = field(
        default_factory=lambda: {"provider_raw": "7d", "reasoning": "30d", "answer": "forever"}
    )
    telemetry_exporter: str = "none"
    telemetry_endpoint: str | None = None
    telemetry_capture_content: bool = False
    timeouts: TimeoutSettings = field(default_factory=TimeoutSettings)
    """``[timeouts]``: only the keys the file sets (defaults live with the transport)."""
    roles: Mapping[str, str] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)


def thoughtline_home(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    home = env.get("THOUGHTLINE_HOME")
    return Path(home) if home else Path(user_data_dir("thoughtline", appauthor=False))


def find_config_path(
    environ: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Path | None:
    env = os.environ if environ is None else environ
    explicit = env.get("THOUGHTLINE_CONFIG")
    if explicit:
        path = Path(explicit)
        if path.is_dir():
            raise ConfigError(
                f"THOUGHTLINE_CONFIG points to {path}, which is a directory, not a file. "
                f"Point it at a TOML file (e.g. {path / 'thoughtline.toml'}) or unset it."
            )
        if not path.is_file():
            raise ConfigError(
                f"THOUGHTLINE_CONFIG points to {path}, which does not exist. "
                "Create the file or unset the variable."
            )
        return path
    local = (cwd or Path.cwd()) / "thoughtline.toml"
    if local.is_file():
        return local
    home_config = thoughtline_home(env) / "config.toml"
    return home_config if home_config.is_file() else None


def parse_duration(value: str) -> int | None:
    """Seconds for ``"7d"``-style durations; ``None`` for ``"forever"``."""
    if value == "forever":
        return None
    match = _DURATION.match(value)
    if match is None:
        raise ValueError(value)
    return int(match.group(1)) * _DURATION_SECONDS[match.group(2)]


def load_config(
    path: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Config:
    """Load and validate the config (``path`` wins over the usual search)."""
    config_path = path or find_config_path(environ, cwd)
    if config_path is None:
        return with_store_url(Config(path=None), environ)
    text = read_text_file(config_path, "config file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{config_path}: not valid TOML: {exc}.") from exc
    return with_store_url(_Validator(config_path).build(data), environ)


def with_store_url(config: Config, environ: Mapping[str, str] | None = None) -> Config:
    """``config`` with the PostgreSQL store ``THOUGHTLINE_STORE_URL`` names, which
    overrides the file's store; unchanged when the variable is unset or empty."""
    env = os.environ if environ is None else environ
    url = env.get(STORE_URL_VARIABLE, "").strip()
    if not url:
        return config
    if not url.startswith(POSTGRES_URL_SCHEMES):
        raise ConfigError(
            f"{STORE_URL_VARIABLE}: must be a postgresql:// URL "
            "(postgresql://user@host:5432/dbname); unset it to use the config's store."
        )
    sources = {**config.sources, "orchestration.store": STORE_URL_VARIABLE}
    sources["store.dsn"] = STORE_URL_VARIABLE
    return replace(config, store="postgres", store_dsn=url, sources=sources)


def read_text_file(path: Path, what: str) -> str:
    """A file users write (config, plan, role prompt) as text, or a :class:`ConfigError`
    that names the file and says what is wrong with it (missing, a directory, not UTF-8)."""
    try:
        return path.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise ConfigError(f"{path}: the {what} is a directory, not a file.") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(f"{path}: cannot read the {what} ({reason}).") from None
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: the {what} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
            f"on line {line}); save it as UTF-8."
        ) from None


def describe_value(value: object) -> str:
    """A TOML value's type and value for error messages: ``an integer (5)``."""
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a float ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a date/time ({value})"


class _Validator:
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
        self, table: Mapping[str, object], key: str, default: int, *, maximum: int
    ) -> int:
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(
                key,
                f"wrong type: must be an integer from 1 to {maximum}, got {describe_value(value)}",
            )
        if not 1 <= value <= maximum:
            raise self.fail(key, f"must be an integer from 1 to {maximum}, got {value}")
        self.sources[key] = str(self.path)
        return value

    def build(self, data: dict[str, Any]) -> Config:
        top_allowed = (
            "orchestration",
            "defaults",
            "providers",
            "roles",
            "trace",
            "telemetry",
            "store",
            "timeouts",
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
                "chain_of_thought_by_role",
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

        store_table = self.table(data, "store", ("dsn",))
        dsn = self.string(store_table, "store.dsn", None)
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

        defaults = self.table(
            data, "defaults", ("provider", "model", "effort", "max_output_tokens", "temperature")
        )
        default_provider = self.string(defaults, "defaults.provider", "anthropic") or "anthropic"
        default_model = (
            self.string(defaults, "defaults.model", "claude-sonnet-4-6") or "claude-sonnet-4-6"
        )
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
        for name, value in roles_raw.items():
            if not ROLE_NAME.match(name):
                raise self.fail(
                    f"roles.{name}", f"{name!r} is not a valid role name: {ROLE_NAME_RULE}"
                )
            role_table = self.table({name: value}, f"roles.{name}", ("prompt",))
            prompt = self.string(role_table, f"roles.{name}.prompt", None)
            if prompt is None:
                raise self.fail(f"roles.{name}.prompt", "missing: a role needs its persona prompt")
            roles[name] = prompt

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
        timeouts = self.timeouts(data, "timeouts")

        return Config(
            path=self.path,
            chain_of_thought=chain_of_thought,
            chain_of_thought_by_role=by_role,
            worker_backend=worker_backend,
            store=store,
            store_dsn=dsn,
            max_concurrency=max_concurrency,
            max_tasks_per_run=max_tasks_per_run,
            default_provider=default_provider,
            default_model=default_model,
            default_effort=default_effort,
            default_generation=default_generation,
            providers=providers,
            trace_provider_raw=provider_raw,
            retention=retention,
            telemetry_exporter=exporter,
            telemetry_endpoint=telemetry_endpoint,
            telemetry_capture_content=capture,
            timeouts=timeouts,
            roles=roles,
            sources=self.sources,
        )

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
            ),
        )
        wire_api = self.optional_choice(table, f"{key}.wire_api", WIRE_APIS)
        base_url = self.string(table, f"{key}.base_url", None)
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            raise self.fail(
                f"{key}.base_url", f"must start with http:// or https://, got {base_url!r}"
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
        )
