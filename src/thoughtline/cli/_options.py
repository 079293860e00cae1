"""Run options on the command line: a flag's value is converted and checked as the
definition says (:data:`thoughtline.runtime.planning.options.OPTIONS`), so a bad one is refused
with the code every surface gives, naming the flag (``--max-steps``)."""

from __future__ import annotations

from typing import Any

import click
from click.shell_completion import CompletionItem

from thoughtline.errors import ThoughtlineError
from thoughtline.runtime import BY_NAME, Surface


class OptionValue(click.ParamType[Any]):
    """The value of the run option ``name``: an integer, a number or a name, checked by
    the option's own check (a :class:`ThoughtlineError`, exit 2, ``--json`` prints its
    code)."""

    def __init__(self, name: str, surface: Surface = "run") -> None:
        self.option = BY_NAME[name]
        self.surface = surface
        self.kind = self.option.schema.get("type")
        self.name = {"integer": "integer", "number": "number"}.get(str(self.kind), "text")
        self.choices: list[str] = list(self.option.schema.get("enum", ()))

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        flag = self.option.word(self.surface)
        if isinstance(value, str) and self.kind in ("integer", "number"):
            try:
                value = int(value) if self.kind == "integer" else float(value)
            except ValueError:
                what = "an integer" if self.kind == "integer" else "a number"
                raise ThoughtlineError(
                    "REQUEST_INVALID", f"{flag} takes {what}, got {value!r}."
                ) from None
        if self.option.check is not None:
            self.option.check(value, flag)
        return value

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        return [CompletionItem(name) for name in self.choices if name.startswith(incomplete)]

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str | None:
        if self.choices:
            return "[" + "|".join(self.choices) + "]"
        return None


def option_help(name: str) -> str:
    """The option's one-line help, for a flag."""
    return BY_NAME[name].help
