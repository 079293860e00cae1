"""``import thoughtline``: a deliberate, documented surface that stays light to import."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import typing
from collections.abc import Callable

import pytest

import thoughtline


def listed_in_module_docstring() -> dict[str, str]:
    """Name -> one-line description, from the "Public names" listing of the package."""
    doc = thoughtline.__doc__ or ""
    listing = doc.split("Public names", 1)[1]
    return dict(re.findall(r"^    (\w+) {2,}(\S.*)$", listing, flags=re.MULTILINE))


def test_every_public_name_exists_and_is_documented() -> None:
    listed = listed_in_module_docstring()
    assert sorted(thoughtline.__all__) == sorted(listed)
    assert len(set(thoughtline.__all__)) == len(thoughtline.__all__)
    for name in thoughtline.__all__:
        value = getattr(thoughtline, name)
        if inspect.isclass(value):
            assert vars(value).get("__doc__"), f"{name} has no docstring of its own"
        elif inspect.isfunction(value):
            assert value.__doc__, f"{name} has no docstring"
        assert len(listed[name]) > 10, name


def test_star_import_gives_exactly_the_public_names() -> None:
    namespace: dict[str, object] = {}
    exec("from thoughtline import *", namespace)
    assert sorted(key for key in namespace if key != "__builtins__") == sorted(thoughtline.__all__)


def test_internals_are_not_exported_but_stay_importable() -> None:
    from thoughtline.model.accumulator import ResponseAccumulator, accumulate
    from thoughtline.providers.redaction import Redactor

    for name, value in (
        ("ResponseAccumulator", ResponseAccumulator),
        ("Redactor", Redactor),
        ("accumulate", accumulate),
    ):
        assert name not in thoughtline.__all__
        assert not hasattr(thoughtline, name), name
        assert value is not None


def test_lazy_names_are_the_objects_of_their_modules() -> None:
    from thoughtline.api.chat import AsyncConversation, Conversation
    from thoughtline.api.orchestrator import Orchestrator
    from thoughtline.providers.client import ProviderClient

    assert thoughtline.Orchestrator is Orchestrator
    assert thoughtline.ProviderClient is ProviderClient
    assert thoughtline.Conversation is Conversation
    assert thoughtline.AsyncConversation is AsyncConversation
    assert "Orchestrator" in dir(thoughtline)


def keywords(function: Callable[..., object]) -> list[str]:
    """The keyword arguments ``function`` takes: its named ones, then those of the
    ``**options: Unpack[TypedDict]`` it forwards."""
    from thoughtline.runtime.planning import options

    names: list[str] = []
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            typed = re.fullmatch(r"Unpack\[(\w+)\]", str(parameter.annotation))
            assert typed is not None, parameter.annotation
            names.extend(typing.get_type_hints(getattr(options, typed[1])))
        elif name not in ("self", "request"):
            names.append(name)
    return names


def test_continuing_a_run_is_one_keyword_wherever_a_run_starts() -> None:
    """``continues`` on both ways to start a run; the conversations take the same
    run arguments as them (less ``continues``, which they pass along themselves)."""
    from thoughtline.api.chat import AsyncConversation, Conversation
    from thoughtline.api.orchestrator import Orchestrator

    start = keywords(Orchestrator.start)
    assert "continues" in keywords(thoughtline.run)
    assert "continues" in start
    run_arguments = [name for name in start if name != "continues"]
    for send in (Conversation.send, AsyncConversation.send):
        assert keywords(send) == run_arguments


@pytest.mark.slow
def test_importing_thoughtline_loads_neither_the_http_client_nor_asyncio() -> None:
    code = (
        "import sys, thoughtline; "
        "print(sorted(m for m in ('httpx2', 'asyncio', 'thoughtline.runtime.engine.runner', "
        "'thoughtline.api.chat') "
        "if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
