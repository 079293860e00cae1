"""Finished runs' frames kept in memory a while after they left the live hub, for the
subscribers that arrive just after the end (see :mod:`thoughtline.server.events`)."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from thoughtline.server.events import RunChannel

__all__ = ["DEFAULT_RETAIN_BYTES", "DEFAULT_RETAIN_S", "RetainedRun", "RetainedRuns"]

DEFAULT_RETAIN_BYTES = 32 * 1024 * 1024
"""The most memory (as :meth:`RetainedRun.size` counts it) finished runs' frames keep."""
DEFAULT_RETAIN_S = 60.0
"""How long a finished run's frames are kept after it left the hub."""
_FRAME_OVERHEAD = 64
"""Bytes counted per retained frame besides its length: the bytes object's header, its
slot in the list and allocator rounding."""
_RUN_OVERHEAD = 1024
"""Bytes counted per retained run besides its frames: the entry and its objects."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RetainedRun:
    """What is kept of a finished run after it left the hub: its frames, in seq order
    from 1, and its closing frames (see :attr:`RunChannel.closing`)."""

    run_id: str
    frames: list[bytes]
    closing: tuple[bytes, bytes]
    expires_at: float

    def size(self) -> int:
        """The memory counted against the retention bound."""
        frames = sum(len(data) for data in self.frames) + len(self.frames) * _FRAME_OVERHEAD
        return frames + len(self.closing[0]) + len(self.closing[1]) + _RUN_OVERHEAD

    def after(self, seq: int) -> list[bytes]:
        """The frames of the events with a seq greater than ``seq``."""
        return self.frames[max(seq, 0) :]


class RetainedRuns:
    """Finished runs' frames, oldest evicted first once they total more than
    ``max_bytes`` (a run larger than that is not kept) or are older than ``max_age_s``."""

    def __init__(self, max_bytes: int, max_age_s: float) -> None:
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        self.bytes = 0
        self._runs: OrderedDict[str, tuple[RetainedRun, int]] = OrderedDict()

    def keep(self, channel: RunChannel) -> None:
        if not channel.followed:
            # Nobody read it live: its late readers read the store, which holds all of
            # it by now, rather than every run paying for frames nobody may ask for.
            return
        closing = channel.closing
        # Frame i must be seq i + 1 for resuming by index: true when the channel saw the
        # run from its first event.
        if closing is None or channel.seq != len(channel.frames):
            return
        run = RetainedRun(
            run_id=channel.run_id,
            frames=channel.frames,
            closing=closing,
            expires_at=time.monotonic() + self.max_age_s,
        )
        size = run.size()
        if size > self.max_bytes:
            return
        self._drop(run.run_id)
        self._runs[run.run_id] = (run, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            self._drop(next(iter(self._runs)))

    def get(self, run_id: str) -> RetainedRun | None:
        now = time.monotonic()
        # Kept in order of expiry: the expired ones are at the front.
        while self._runs:
            oldest, _ = next(iter(self._runs.values()))
            if oldest.expires_at > now:
                break
            self._drop(oldest.run_id)
        kept = self._runs.get(run_id)
        return kept[0] if kept is not None else None

    def _drop(self, run_id: str) -> None:
        kept = self._runs.pop(run_id, None)
        if kept is not None:
            self.bytes -= kept[1]

    def __len__(self) -> int:
        return len(self._runs)
