"""The checks of the run options' values (:data:`thoughtline.runtime.planning.options.OPTIONS`):
each refuses a bad value with one error, naming the option by the caller's word (a flag,
a field, a ``_meta.thoughtline`` key). They build on the checks a config or plan file's
values pass too (:mod:`~thoughtline.runtime.policy.checks`, :mod:`~thoughtline.runtime.policy.budget`,
:mod:`~thoughtline.model.requests`, :mod:`~thoughtline.tools.specs`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from thoughtline.errors import ThoughtlineError
from thoughtline.runtime.planning.plan import check_max_steps
from thoughtline.runtime.policy.budget import check_max_cost
from thoughtline.runtime.policy.checks import check_model_id
from thoughtline.tools.specs import tool_spec_problem


def check_request(value: object, word: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ThoughtlineError("REQUEST_INVALID", "The request must not be empty.")


def names_check(what: str, example: str) -> Callable[[object, str], None]:
    def check(value: object, word: str) -> None:
        if isinstance(value, str):
            raise ThoughtlineError(
                "REQUEST_INVALID",
                f"{word} must be a list of {what}, e.g. [{value!r}], not one string.",
            )
        if not isinstance(value, Sequence) or not all(
            isinstance(item, str) and item for item in value
        ):
            raise ThoughtlineError(
                "REQUEST_INVALID", f"{word} must be a list of {what} (such as {example})."
            )

    return check


def check_text(value: object, word: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ThoughtlineError("REQUEST_INVALID", f"{word} must be a non-empty string.")


def check_system(value: object, word: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ThoughtlineError("REQUEST_INVALID", f"The system prompt ({word}) is empty.")


def check_model(value: object, word: str) -> None:
    if not isinstance(value, str):
        raise ThoughtlineError("REQUEST_INVALID", f"{word} must be a string.")
    check_model_id(value)


def choice_check(check: Callable[[str, str], object]) -> Callable[[object, str], None]:
    def checked(value: object, word: str) -> None:
        if not isinstance(value, str):
            # The checks name the allowed values; a non-string is refused as an unknown one.
            check(repr(value), word)
        else:
            check(value, word)

    return checked


def problem_check(problem: Callable[[object], str | None]) -> Callable[[object, str], None]:
    def check(value: object, word: str) -> None:
        found = problem(value)
        if found is not None:
            raise ThoughtlineError("REQUEST_INVALID", f"{word} {found}.")

    return check


def check_tools(value: object, word: str) -> None:
    if isinstance(value, str):
        raise ThoughtlineError(
            "REQUEST_INVALID",
            f"{word} must be a list of names, e.g. [{value!r}], not one string.",
        )
    if not isinstance(value, Sequence):
        raise ThoughtlineError(
            "REQUEST_INVALID", f'{word} must be a list of "SERVER" or "SERVER.TOOL" names.'
        )
    for item in value:
        if isinstance(item, str):
            problem = tool_spec_problem(item)
            if problem is not None:
                raise ThoughtlineError("REQUEST_INVALID", f"Tool {problem} ({word}).")
        elif not callable(item):
            raise ThoughtlineError(
                "REQUEST_INVALID",
                f'{word} holds {item!r}: each must be a tool name ("SERVER" or '
                '"SERVER.TOOL") or a Python function.',
            )


def check_steps(value: object, word: str) -> None:
    check_max_steps(value, word)


def check_budget(value: object, word: str) -> None:
    check_max_cost(value, word)


def check_continues(value: object, word: str) -> None:
    if not isinstance(value, str) or not value:
        raise ThoughtlineError(
            "REQUEST_INVALID", f"{word} takes the id of the run to follow up on, such as run.id."
        )
