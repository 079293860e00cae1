"""How long a provider call may take: connect, read (silence), total (one attempt).

:class:`Timeouts` is what the transport uses; :class:`TimeoutSettings` is what a config
section (``[timeouts]`` or ``[providers.NAME.timeouts]``) sets, each key optional.
Precedence for one endpoint's client: ``[providers.NAME.timeouts]`` > ``[timeouts]`` >
the defaults below.

``total`` bounds one attempt, from sending the request to the last byte of the
response, whatever arrives in between (keep-alive pings included). Each retry gets its
own budget, and backoff waits are not counted; an attempt stopped by ``total`` is not
retried, so a call lasts at most about ``(max_retries + 1) * total`` plus backoff, and
usually far less, since only failures before any content are retried.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

if TYPE_CHECKING:
    import httpx2

TimeoutName: TypeAlias = Literal["connect", "read", "total"]
TIMEOUT_NAMES: Final[tuple[TimeoutName, ...]] = ("connect", "read", "total")

DEFAULT_CONNECT_S: Final = 10.0
DEFAULT_READ_S: Final = 120.0
DEFAULT_TOTAL_S: Final = 900.0


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeoutSettings:
    """Timeouts a config section sets, in seconds; ``None`` = not set there."""

    connect: float | None = None
    read: float | None = None
    total: float | None = None

    def items(self) -> list[tuple[TimeoutName, float]]:
        """The keys that are set, in the order ``connect, read, total``."""
        values = (self.connect, self.read, self.total)
        return [
            (name, value)
            for name, value in zip(TIMEOUT_NAMES, values, strict=True)
            if value is not None
        ]


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeouts:
    """Seconds.

    - ``connect``: establishing the connection;
    - ``read``: the longest silence between two bytes of the response (also the wait
      for the response to start);
    - ``total``: one attempt, from sending the request to the last byte, enforced by a
      timer, so a server that keeps the connection alive with pings still ends
      (``None`` turns it off);
    - ``write``, ``pool``: sending the request, waiting for a free connection.
    """

    connect: float = DEFAULT_CONNECT_S
    read: float = DEFAULT_READ_S
    write: float = 30.0
    pool: float = 10.0
    total: float | None = DEFAULT_TOTAL_S

    def for_httpx(self) -> httpx2.Timeout:
        import httpx2  # only a call needs the HTTP stack: config and `status` do not

        return httpx2.Timeout(
            connect=self.connect, read=self.read, write=self.write, pool=self.pool
        )

    def overridden_by(self, settings: TimeoutSettings) -> Timeouts:
        """These timeouts with every key ``settings`` sets replaced."""
        if not settings.items():
            return self
        return replace(self, **dict(settings.items()))
