"""The spec of a run that continues another, from what a command line names.

``run -c``, ``run --continues RUN_ID`` and each line of ``chat`` after the first go
through here: the run is named as every RUN_ID argument is (:mod:`~thoughtline.cli.
run_ids`), and :meth:`~thoughtline.runtime.engine.runner.Runtime.continuation_spec` gives its
tasks again with the flags the user gave winning.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from thoughtline.cli.run_ids import resolve_run
from thoughtline.model.requests import GenerationSettings
from thoughtline.runtime import RunSpec, Runtime


def continuing_from(continue_latest: bool, continues: str | None) -> str | None:
    """The RUN_ID text ``-c`` / ``--continues`` name (``latest`` for ``-c``), or ``None``
    for a new conversation; both at once is refused."""
    if continue_latest and continues is not None:
        raise click.UsageError("Give -c (continue the latest run) or --continues RUN_ID, not both.")
    return "latest" if continue_latest else continues


def continued_spec(
    runtime: Runtime,
    run_text: str,
    request: str,
    *,
    roles: Sequence[str] = (),
    provider: str | None = None,
    model: str | None = None,
    effort: str | None = None,
    max_output_tokens: int | None = None,
    temperature: float | None = None,
) -> RunSpec:
    """The spec continuing the run ``run_text`` names (an id, a short id, a unique start or
    ``latest``); refused, before anything is stored, for a run that does not exist, has
    not ended or keeps no history."""
    previous = resolve_run(runtime.store, run_text)
    return runtime.continuation_spec(
        previous.id,
        request,
        roles=roles,
        provider=provider,
        model=model,
        effort=effort,
        generation=GenerationSettings(max_output_tokens=max_output_tokens, temperature=temperature),
    )
