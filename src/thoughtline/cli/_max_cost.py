"""``--max-cost USD``: a budget in US dollars, checked as every front end checks it."""

from __future__ import annotations

from typing import Any

import click

from thoughtline.errors import ThoughtlineError
from thoughtline.runtime import check_max_cost


class MaxCost(click.ParamType[float]):
    """A finite number of US dollars from 0 up (``nan``, ``inf`` and negatives refused:
    ``click.FloatRange`` lets ``nan`` through)."""

    name = "usd"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float):
            return value
        try:
            number = float(value)
        except ValueError:
            self.fail(f"{value!r} is not a number of US dollars", param, ctx)
        try:
            return check_max_cost(number, "--max-cost")
        except ThoughtlineError as exc:
            self.fail(exc.message, param, ctx)


MAX_COST = MaxCost()
