"""Keeping a thoughtline process's environment and memory from the other processes of the
same user, tool servers first.

On Linux, any process of the same user may read ``/proc/PID/environ`` (where the provider
keys are) and ``/proc/PID/mem``, and attach with ``ptrace``. A stdio tool server is such
a process: it could read every key from its parent, whatever environment it was given.
:func:`make_undumpable` marks the process as not dumpable (``prctl(PR_SET_DUMPABLE, 0)``):
its ``/proc/PID`` files then belong to root, and only a process with ``CAP_SYS_PTRACE``
(root) may read them or attach. The flag is not inherited across ``exec``: a server
thoughtline starts is dumpable as usual.

What it costs: no core dump of thoughtline; ``gdb -p``, ``strace -p``, ``py-spy`` and
``lsof -p`` on it need root. ``ps``, ``/proc/PID/cmdline`` and ``/proc/PID/stat`` stay
readable (crash recovery reads the last).

Set by every command that holds the keys (``run``, ``chat``, ``serve``, ``mcp``, ``acp``,
``tools``) and, in a library user's process, only when thoughtline starts a stdio tool
server. Elsewhere than Linux it does nothing (macOS does not let a same-user process
read another's environment without the debugging entitlements).
"""

from __future__ import annotations

import ctypes
import logging
import sys
from typing import Final

logger = logging.getLogger(__name__)

_PR_SET_DUMPABLE: Final = 4
_done = False


def make_undumpable() -> bool:
    """Mark this process not dumpable (once); whether it is now. Never raises: where the
    call is not available, the process stays as it was."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        failed = libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0
    except (OSError, AttributeError) as exc:  # no libc symbol here (a static interpreter)
        logger.debug("prctl(PR_SET_DUMPABLE) is not available: %s", exc)
        return False
    if failed:
        logger.debug("prctl(PR_SET_DUMPABLE, 0) failed: errno %d", ctypes.get_errno())
        return False
    _done = True
    return True
