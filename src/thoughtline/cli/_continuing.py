"""Which run a command line continues: ``run -c``, ``run --continues RUN_ID`` and
``chat -c`` name it as every RUN_ID argument is (:mod:`~thoughtline.cli.run_ids`);
:func:`~thoughtline.runtime.planning.options.build_spec` gives its tasks again with the flags the
user gave winning.
"""

from __future__ import annotations

import click


def continuing_from(continue_latest: bool, continues: str | None) -> str | None:
    """The RUN_ID text ``-c`` / ``--continues`` name (``latest`` for ``-c``), or ``None``
    for a new conversation; both at once is refused."""
    if continue_latest and continues is not None:
        raise click.UsageError("Give -c (continue the latest run) or --continues RUN_ID, not both.")
    return "latest" if continue_latest else continues
