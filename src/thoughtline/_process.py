"""Settings for thoughtline's own long-running processes (``run``, ``serve``, ``mcp``,
``acp``), never applied when thoughtline is imported as a library."""

from __future__ import annotations

import contextlib
import gc


def freeze_startup_heap() -> None:
    """Move every object alive now (modules, classes, config: what startup built and the
    process keeps) out of the garbage collector's reach.

    Python's full collections walk every tracked object. Measured on a 200k-event
    ``thoughtline run``: six full collections took 280 ms in all, the longest a 57 ms
    pause in the middle of the stream; with the startup heap frozen, 22 ms and 6 ms.
    Frozen objects are never walked (nor freed: startup garbage, a few kilobytes,
    stays)."""
    gc.freeze()


def load_what_runs_use() -> None:
    """Import now what a long-running process's first run would import on its event loop
    (the HTTP client stack and its TLS context, every wire adapter: over a hundred
    modules), so that :func:`freeze_startup_heap` covers it and the first run does not
    stall the runs and streams already going."""
    import httpx2

    from thoughtline.config.pricing import load_price_data
    from thoughtline.errors import ThoughtlineError
    from thoughtline.providers.registry import WIRE_APIS, wire_for
    from thoughtline.providers.transport import default_http_client

    # Imports aiohttp and builds the shared TLS context. A trust store or proxy in the
    # environment that cannot be used is left for each run to report (its tasks fail
    # with the error), as it would without this.
    with contextlib.suppress(ThoughtlineError, OSError):
        default_http_client(httpx2.Timeout(None))  # opens nothing until a request
    for wire_api in WIRE_APIS:
        wire_for(wire_api)
    load_price_data()  # each model call is priced as it ends, on the event loop
