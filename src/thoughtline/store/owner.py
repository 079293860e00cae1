"""Who owns a run: the identity a store records with each run it creates, so that any
process can later tell whether the owner is still alive (crash recovery, above the
store, decides)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """Who owns a run: enough to tell later whether that process is still alive."""

    host: str
    pid: int
    start_time: int | None
    """Clock ticks after boot (``/proc/<pid>/stat`` field 22); ``None`` off Linux."""
    boot_id: str | None
    """Changes on every reboot (Linux), so pids of an earlier boot never look alive."""

    @classmethod
    def current(cls) -> ProcessIdentity:
        """This process's identity, read once per process: every run created reads it,
        and reading ``/proc`` was most of a run start's store work. Keyed by pid, as a
        forked child is a different owner."""
        global _current
        pid = os.getpid()
        known = _current
        if known is not None and known.pid == pid:
            return known
        stat = proc_stat(pid)
        _current = cls(
            host=socket.gethostname(),
            pid=pid,
            start_time=None if stat is None else stat[1],
            boot_id=boot_id(),
        )
        return _current


_current: ProcessIdentity | None = None


def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time) of a process from ``/proc``, or ``None`` when unreadable."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
        # The command name (field 2) may contain spaces and parentheses; it ends at the
        # last ")". Fields from 3 on follow, so field n is at index n - 3.
        fields = raw[raw.rindex(")") + 2 :].split()
        return fields[0], int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def boot_id() -> str | None:
    """This boot's id (Linux), ``None`` where the system does not say."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None
