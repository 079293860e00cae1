"""What every command needs: the config, the store under THOUGHTLINE_HOME, a runtime."""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import TYPE_CHECKING

from thoughtline.config import Config, load_config, thoughtline_home
from thoughtline.runtime import open_recovered
from thoughtline.store import opening
from thoughtline.store.base import Store

if TYPE_CHECKING:
    from thoughtline.runtime import Runtime


def open_store(config: Config) -> Store:
    """The store the config (or THOUGHTLINE_STORE_URL) names, with crash recovery done."""
    return open_recovered(config)


def database_path() -> Path:
    return opening.sqlite_path()


def open_runtime(
    config: Config | None = None, *, tool_lists: bool = False
) -> tuple[Config, Store, Runtime]:
    """The config (loaded unless given), its store and a runtime on them; ``tool_lists``:
    the runtime keeps its tool servers' lists under the home and starts a run's model
    calls with them while the servers start (``run`` and ``chat``)."""
    # Imported here: commands that only read the store (status, runs) skip the HTTP stack.
    from thoughtline._undumpable import make_undumpable
    from thoughtline.config.price_cache import PriceCache
    from thoughtline.providers.discovery import load_capabilities
    from thoughtline.runtime import Runtime
    from thoughtline.telemetry import open_telemetry
    from thoughtline.tools.list_cache import ToolListCache

    # Before the keys are loaded and any tool server starts: no process of the user's
    # may read this one's environment or memory.
    make_undumpable()
    if config is None:
        config = load_config()
    store = open_store(config)
    # The built-in capability table, plus what `thoughtline providers --refresh` cached.
    runtime = Runtime(
        config=config, store=store, capabilities=load_capabilities(thoughtline_home())
    )
    # The price data's prices of models priced before: a run loads the data only for a
    # model it has not priced yet (config/price_cache.py).
    runtime.pricer.cache = PriceCache.under(thoughtline_home())
    # OpenTelemetry export, when [telemetry] or OTEL_* turn it on. Built after the runtime
    # so it redacts with the same loaded secrets; flushed when the process exits.
    try:
        telemetry = open_telemetry(config, redactor=runtime.redactor)
    except BaseException:
        store.close()
        raise
    if telemetry is not None:
        runtime.telemetry = telemetry
        atexit.register(telemetry.shutdown)
    if tool_lists:
        runtime.tool_lists = ToolListCache.under(thoughtline_home(), runtime.environ)
    return config, store, runtime
