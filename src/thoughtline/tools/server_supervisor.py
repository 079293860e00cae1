"""Runs one stdio tool server, and ends it with the thoughtline process that started it.

``python -I -S server_supervisor.py FD LC_CTYPE COMMAND [ARG...]`` starts ``COMMAND``
with the supervisor's standard streams, environment and working directory, and exits
with its status. ``LC_CTYPE`` is that variable's value in the environment thoughtline
gave, after a ``=``, or ``-`` when it gave none: Python sets ``LC_CTYPE=C.UTF-8`` in its
own environment when the locale is ``C`` (PEP 538), and the server gets the variable as
given, not as the supervisor's interpreter changed it. ``FD`` is the read end of a pipe whose write end only that thoughtline process
holds (the *lifeline*): the kernel closes it when the process ends, however it ends
(SIGKILL and a crash included), and the supervisor, which reads nothing from it, sees it
end. It then sends SIGTERM to its process group (the server and whatever the server
started and left in it: ``npx`` → ``node``, ``uvx`` → ``python``), gives the server
:data:`KILL_WAIT_S` to exit, and sends SIGKILL to the group, itself included.

Why a process of its own: ``PR_SET_PDEATHSIG`` reaches only the direct child (not what
it starts), fires when the *thread* that forked it ends (the event loop's thread, which
the library may end before the process), and exists only on Linux; a pipe ends with the
process on every POSIX system. The group's SIGTERM from thoughtline (a normal stop) is
the server's: the supervisor waits for the server and exits with its status.

Run by path with the interpreter running thoughtline, ``-I -S``: the standard library
only (about 20 ms more to start a server), untouched by the server's ``PYTHON*``
variables.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from typing import Final

KILL_WAIT_S: Final = 2.0
"""After SIGTERM to the group, before SIGKILL (as thoughtline stops a server)."""


def main(argv: list[str]) -> int:
    lifeline, lc_ctype, command = int(argv[1]), argv[2], argv[3:]
    environment = dict(os.environ)
    if lc_ctype.startswith("="):
        environment["LC_CTYPE"] = lc_ctype[1:]
    else:
        environment.pop("LC_CTYPE", None)
    # The group's SIGTERM (thoughtline stopping the server) is for the server: the
    # supervisor outlives it, to report its status. SIGCHLD wakes the wait below.
    signal.signal(signal.SIGTERM, lambda _signal, _frame: None)
    signal.signal(signal.SIGCHLD, lambda _signal, _frame: None)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    try:
        server = subprocess.Popen(command, env=environment)  # the supervisor's pipes closed
    except OSError as exc:
        sys.stderr.write(f"could not start {command[0]!r}: {exc.strerror}\n")
        return 127 if isinstance(exc, FileNotFoundError) else 126
    # Only the server holds its end of thoughtline's pipes: they end when it ends.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    while (status := server.poll()) is None:
        readable, _, _ = select.select([lifeline, wake_read], [], [])
        if lifeline in readable and not os.read(lifeline, 1):
            _end_group(server)
        if wake_read in readable:
            os.read(wake_read, 512)
    return status if status >= 0 else 128 - status


def _end_group(server: subprocess.Popen[bytes]) -> None:
    """Thoughtline is gone: SIGTERM to the group, then SIGKILL to it (and so to this
    process) once the server exited or :data:`KILL_WAIT_S` passed."""
    group = os.getpgrp()
    if group != os.getpid():  # not started in a session of its own: the group is not ours
        server.kill()
        server.wait()
        return
    os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + KILL_WAIT_S
    while server.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(group, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
