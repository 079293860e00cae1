"""When and how long the transport waits before trying a failed call again."""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["RetryPolicy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """Jittered exponential backoff for 408/409/429/5xx/529 and connection errors.

    A provider's ``retry-after``/``retry-after-ms`` wins over the computed delay; a
    requested wait longer than ``max_retry_after_s`` is not waited for (the error is
    returned instead, saying so).
    """

    max_retries: int = 2
    initial_delay_s: float = 0.5
    max_delay_s: float = 8.0
    jitter: float = 0.25
    max_retry_after_s: float = 60.0

    def delay(self, retry_number: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            return retry_after_s
        base = min(self.max_delay_s, self.initial_delay_s * (2 ** (retry_number - 1)))
        return float(max(0.0, base * (1.0 + random.uniform(-self.jitter, self.jitter))))
