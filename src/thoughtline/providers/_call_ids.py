"""Ids for tool calls a provider sent without one (Gemini and Ollama may omit them).

A made-up id names the call inside thoughtline (results are matched to calls by id) but
never goes back to the provider as if the provider had made it.
"""

from __future__ import annotations

from typing import Final

_PREFIX: Final = "call_"


def synthetic_call_id(index: int) -> str:
    """The id given to the ``index``-th call of a response that carries none."""
    return f"{_PREFIX}{index}"


def is_synthetic_call_id(call_id: str) -> bool:
    """Whether ``call_id`` was made by :func:`synthetic_call_id`."""
    suffix = call_id.removeprefix(_PREFIX)
    return suffix != call_id and suffix.isdigit()
