"""The store a front end works on: opened as the config names it (``store/opening.py``),
with crash recovery done, so a command never shows a dead process's run as running.

Light on purpose: commands that only read the store (``status``, ``runs``) import it
without the HTTP stack the :class:`~thoughtline.runtime.engine.runner.Runtime` brings.
"""

from __future__ import annotations

from collections.abc import Mapping

from thoughtline.config import Config
from thoughtline.runtime.policy.recovery import recover_on_open
from thoughtline.store import opening
from thoughtline.store.base import Store


def open_recovered(config: Config, environ: Mapping[str, str] | None = None) -> Store:
    """The store ``config`` (or ``THOUGHTLINE_STORE_URL``) names; runs whose process died
    (SIGKILL, power loss) are marked ``interrupted`` first, keeping what arrived."""
    store = opening.open_store(config, environ)
    try:
        recover_on_open(store)
    except BaseException:
        store.close()
        raise
    return store
