"""Messages built from provider text."""

from __future__ import annotations


def sentence(text: str) -> str:
    """``text`` as one sentence ending with exactly one period.

    Providers end their messages with a period, several, or none ("Overloaded",
    "Bad request.", "context exceeded.."); a message thoughtline builds around one must
    not end in "..", nor without a full stop.
    """
    return text.strip().rstrip(".").rstrip() + "."
