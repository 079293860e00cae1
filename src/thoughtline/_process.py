"""Settings for thoughtline's own long-running processes (``run``, ``serve``, ``mcp``,
``acp``), never applied when thoughtline is imported as a library."""

from __future__ import annotations

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
