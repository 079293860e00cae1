"""Messages built from provider text."""

from __future__ import annotations


def sentence(text: str) -> str:
    """``text`` as one sentence ending with exactly one period (or the provider's own
    ``!``/``?``).

    Providers end their messages with a period, several, or none ("Overloaded",
    "Bad request.", "context exceeded.."); a message thoughtline builds around one must
    not end in "..", nor without a full stop.
    """
    stripped = text.strip().rstrip(".").rstrip()
    if stripped.endswith(("!", "?")):
        return stripped  # already a full stop; "that!." would read as a typo
    return stripped + "."


def with_advice(text: str, advice: str) -> str:
    """An error message built from provider text: one sentence, then the advice (which
    is already a sentence), if any."""
    return f"{sentence(text)} {advice}" if advice else sentence(text)
