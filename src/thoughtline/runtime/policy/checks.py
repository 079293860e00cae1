"""Checks for the values a caller passes in (an API argument, a flag, a request field):
the disclosure mode, the effort, the worker backend and the model id. Each returns the value typed as
its ``Literal``, or raises one error with one stable code naming the allowed values.

Config and plan files report their bad values as ``CONFIG_INVALID`` instead, naming the
file and the key (:mod:`thoughtline.config`, :mod:`thoughtline.runtime.planning.plan`).
"""

from __future__ import annotations

from thoughtline.errors import ThoughtlineError
from thoughtline.model.requests import EFFORTS, Effort, model_id_problem
from thoughtline.records import CHAIN_OF_THOUGHT_MODES, ChainOfThought, WorkerBackend

WORKER_BACKENDS: tuple[WorkerBackend, ...] = ("provider", "inline")


class UnknownModeError(ThoughtlineError):
    """A chain_of_thought mode that does not exist (``CHAIN_OF_THOUGHT_UNKNOWN``)."""

    def __init__(self, value: str, where: str) -> None:
        super().__init__(
            "CHAIN_OF_THOUGHT_UNKNOWN",
            f"Unknown chain_of_thought mode {value!r} ({where}). "
            f"Allowed values: {', '.join(CHAIN_OF_THOUGHT_MODES)}.",
        )


def check_mode(value: str, where: str) -> ChainOfThought:
    """The mode, or a clear error naming where the bad value came from."""
    if value not in CHAIN_OF_THOUGHT_MODES:
        raise UnknownModeError(value, where)
    return value


def check_effort(value: str, where: str) -> Effort:
    """The effort, or ``EFFORT_UNKNOWN`` naming where the bad value came from."""
    if value not in EFFORTS:
        raise ThoughtlineError(
            "EFFORT_UNKNOWN",
            f"Unknown effort {value!r} ({where}). Allowed values: {', '.join(EFFORTS)}.",
        )
    return value


def check_worker_backend(value: str, where: str) -> WorkerBackend:
    """The worker backend, or ``WORKER_BACKEND_UNKNOWN`` naming where it came from."""
    if value not in WORKER_BACKENDS:
        raise ThoughtlineError(
            "WORKER_BACKEND_UNKNOWN",
            f"Unknown worker backend {value!r} ({where}). "
            f"Allowed values: {', '.join(WORKER_BACKENDS)}.",
        )
    return value


def check_model_id(value: str) -> str:
    """The model id, or ``MODEL_ID_INVALID``: one sentence, the same from every surface
    (see :func:`~thoughtline.model.requests.model_id_problem`)."""
    problem = model_id_problem(value)
    if problem is not None:
        raise ThoughtlineError("MODEL_ID_INVALID", problem)
    return value
