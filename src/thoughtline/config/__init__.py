"""``thoughtline.toml``: strictly validated, with the source of every value recorded.

Unknown keys, wrong types and bad values are errors that name the file, the key and
what is allowed. Where the file lives: ``$THOUGHTLINE_CONFIG``, else ``./thoughtline.toml``,
else ``$THOUGHTLINE_HOME/config.toml``; no file at all means built-in defaults. The
checks, key by key, live in :mod:`thoughtline.config.validation`.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from platformdirs import user_data_dir

from thoughtline._user_files import KIB, MIB, file_kind, read_text_file
from thoughtline.config.gateway import GatewaySettings
from thoughtline.config.pricing import ConfiguredPrice
from thoughtline.errors import ConfigError
from thoughtline.model.requests import Effort, GenerationSettings
from thoughtline.providers.endpoints import (
    EndpointSettings,
)
from thoughtline.providers.timeouts import TimeoutSettings
from thoughtline.records import ChainOfThought, WorkerBackend
from thoughtline.tools.settings import McpServerSettings

WORKER_BACKENDS: tuple[WorkerBackend, ...] = ("provider", "inline")
STORES = ("sqlite", "postgres")
STORE_URL_VARIABLE = "THOUGHTLINE_STORE_URL"
"""A PostgreSQL connection URL that overrides the config's store."""
POSTGRES_URL_SCHEMES = ("postgresql://", "postgres://")
_DURATION = re.compile(r"^(\d+)([smhdw])$")
_DURATION_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# Role names are also file names (specialists/<role>.md), so no paths, spaces or dots.
ROLE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
ROLE_NAME_RULE = "use lowercase letters, digits, '-' and '_', starting with a letter or digit"
DEFAULT_MAX_REQUEST_BYTES = 256 * KIB
"""``[orchestration] max_request_bytes`` unless set: the daemon's request limit."""
MAX_REQUEST_BYTES_CEILING = 64 * MIB
MAX_COST_CEILING = 1_000_000.0
"""The largest ``max_cost`` (USD) a run or task accepts: a budget, not a typo's worth."""
"""The highest ``max_request_bytes`` a config may set."""
MAX_ACTIVE_RUNS_CEILING = 100_000
"""The highest ``[server] max_active_runs`` a config may set."""
MAX_CONNECTIONS_CEILING = 1_000_000
"""The highest ``[server] max_connections`` a config may set."""


APPLICATION_NAME_LIMIT = 63
"""PostgreSQL keeps at most this many bytes of ``application_name`` (NAMEDATALEN - 1)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreSettings:
    """``[store]`` beside ``dsn``: how a store is run. ``live_flush_ms`` applies to both
    stores; the rest to PostgreSQL, the shared store."""

    pool_min: int = 1
    """Connections each process keeps open (PostgreSQL)."""
    pool_max: int = 8
    """Connections each process opens at most (PostgreSQL)."""
    lease_s: float = 10.0
    """How often a process renews the heartbeat of the runs it owns; another host
    presumes the owner dead after three missed beats (PostgreSQL)."""
    live_flush_ms: int | None = None
    """How soon live events reach the event log that other processes follow; ``None``:
    the store's own (5 ms for PostgreSQL, whose appends wake followers; 100 ms for
    SQLite)."""
    statement_timeout_ms: int = 0
    """How long one statement may run before the server stops it, 0 for no limit
    (PostgreSQL): a stuck statement then fails its request instead of holding it."""
    application_name: str = "thoughtline"
    """How the connections are named in ``pg_stat_activity`` (PostgreSQL)."""
    outage_buffer_rows: int = 100_000
    """Rows a process holds in memory while the server is unreachable, to write once it is
    back (PostgreSQL); past it, the tasks whose rows could not be held fail with
    ``STORE_UNAVAILABLE``."""
    outage_limit_s: float = 20.0
    """How long a process holds rows for a server that stays unreachable (PostgreSQL);
    kept under three missed ``lease_s`` beats, after which other hosts presume its runs
    dead."""


STORE_SETTING_KEYS: tuple[str, ...] = tuple(f.name for f in fields(StoreSettings))
"""The ``[store]`` keys beside ``dsn``, in the order ``thoughtline config`` shows them."""


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
    store_settings: StoreSettings = field(default_factory=StoreSettings)
    """``[store]`` pool, lease, flush, statement timeout and application name."""
    max_concurrency: int = 8
    max_tasks_per_run: int = 32
    """A run with more tasks is refused before anything is stored or called."""
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    """The longest request, in bytes of UTF-8 text, a run accepts from any front end; a
    longer one is refused (``REQUEST_TOO_LARGE``) before anything is stored or called."""
    max_steps: int = 8
    """``[orchestration] max_steps``: model calls one task may make (tool steps)."""
    max_cost: float | None = None
    """``[orchestration] max_cost``: USD a run may spend unless it is given a budget;
    ``None``: no budget."""
    max_active_runs: int | None = None
    """``[server] max_active_runs``: runs a daemon (or MCP server) executes at once; one
    more is refused (``SERVER_AT_CAPACITY``) before anything is stored. ``None``: no
    limit, as before the key existed (what one process can take depends on the
    providers' rate limits far more than on the machine)."""
    max_connections: int = 4096
    """``[server] max_connections``: HTTP connections the daemon keeps open at once
    (``server/connections.py``; fewer when the open-file limit leaves less room)."""
    header_timeout_s: float = 10.0
    """``[server] header_timeout_s``: how long a client may take to send a request's head,
    and the longest silence while it sends the body."""
    keep_alive_timeout_s: float = 5.0
    """``[server] keep_alive_timeout_s``: how long a connection may stay idle between
    requests."""
    tool_timeout_s: float = 60.0
    """``[timeouts] tool``: seconds one tool call may take."""
    default_provider: str = "anthropic"
    default_model: str = "claude-sonnet-4-6"
    default_effort: Effort = "provider-default"
    default_role: str | None = None
    """``[defaults] role``: the persona of a task no role was asked for; ``None``: none
    (the ``assistant`` role, which sends no system prompt)."""
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
    role_tools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """``[roles.NAME] tools``: the tools each role may call (``SERVER`` or ``SERVER.TOOL``)."""
    role_max_steps: Mapping[str, int] = field(default_factory=dict)
    """``[roles.NAME] max_steps``."""
    role_max_cost: Mapping[str, float] = field(default_factory=dict)
    """``[roles.NAME] max_cost``: USD each task of the role may spend."""
    mcp_servers: Mapping[str, McpServerSettings] = field(default_factory=dict)
    """``[mcp_servers.NAME]``: tool servers by name (started only when used)."""
    prices: Mapping[str, ConfiguredPrice] = field(default_factory=dict)
    """``[prices."provider/model"]``: prices that win over the price data (USD per
    million tokens; ``provider/*`` for every model of an endpoint)."""
    gateway: GatewaySettings = field(default_factory=GatewaySettings)
    """``[gateway]``: the daemon's OpenAI- and Anthropic-compatible endpoints and their
    clients."""
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
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            raise ConfigError(
                f"THOUGHTLINE_CONFIG points to {path}, which does not exist. "
                "Create the file or unset the variable."
            ) from None
        except OSError as exc:
            raise ConfigError(
                f"THOUGHTLINE_CONFIG points to {path}, which cannot be read "
                f"({exc.strerror or exc}). Fix its permissions or unset the variable."
            ) from None
        if stat.S_ISDIR(mode):
            raise ConfigError(
                f"THOUGHTLINE_CONFIG points to {path}, which is a directory, not a file. "
                f"Point it at a TOML file (e.g. {path / 'thoughtline.toml'}) or unset it."
            )
        if not stat.S_ISREG(mode):
            raise ConfigError(
                f"THOUGHTLINE_CONFIG points to {path}, which is {file_kind(mode)}, not a "
                "regular file. Point it at a TOML file or unset it."
            )
        return path
    # A file at either place that is not a regular file (a FIFO, a device) is used, so
    # reading it reports what it is rather than thoughtline silently looking elsewhere.
    local = (cwd or Path.cwd()) / "thoughtline.toml"
    if local.exists():
        return local
    home_config = thoughtline_home(env) / "config.toml"
    return home_config if home_config.exists() else None


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
    # Imported here: the validator builds a Config, so it imports this module.
    from thoughtline.config.validation import ConfigValidator

    return with_store_url(ConfigValidator(config_path).build(data), environ)


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
