"""Tables that fit the output's width without cutting an identifier.

Every table a command prints is laid out for :func:`~thoughtline.cli._terminal_text.output_width`
(the terminal's width, else ``$COLUMNS``, else 80). :func:`fitted_table` prints a table
whole when every cell fits on one line (a ``wrap`` column, prose, may wrap between its
words); otherwise it leaves out the columns marked ``optional`` (least important first)
until it does; and when even that is too wide it
stacks the rows: each row's identifiers on a line of their own, then one ``header: value``
line per other column, wrapped at the width between words. An identifier (a run id, a
role, a model id, a config key, an environment variable) is never cut, folded or
wrapped.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

Cell = str | Text


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: ``key`` columns hold identifiers (never cut); ``optional`` ones
    are left out, in the order given, when the table is too wide; ``wrap`` ones hold
    prose that may wrap between words."""

    header: str
    key: bool = False
    optional: bool = False
    wrap: bool = False
    justify: Literal["left", "right"] = "left"


def fitted_table(
    console: Console,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    *,
    title: str | None = None,
    caption: str | None = None,
    show_lines: bool = False,
) -> RenderableType:
    """The table of ``rows`` laid out for ``console``'s width (see the module docstring);
    ``show_lines`` rules a line between rows (cells of several lines)."""
    width = console.width
    shown = list(range(len(columns)))
    optional = [index for index, column in enumerate(columns) if column.optional]
    needs = [_needs(column, [row[index] for row in rows]) for index, column in enumerate(columns)]
    while sum(needs[index] for index in shown) + _GAP * (len(shown) - 1) > width:
        if not optional:
            return _stacked(columns, rows, width, title, caption)
        shown.remove(optional.pop(0))
    table = _table(columns, rows, shown, title, caption)
    table.show_lines = show_lines
    return table


_GAP = 3
"""Columns between two cells: a space of padding on each side of the divider."""


def _needs(column: Column, cells: Sequence[Cell]) -> int:
    """The columns ``column`` needs: its widest line, or its widest word if it wraps."""
    texts = [column.header, *(_plain(cell) for cell in cells)]
    if column.wrap:
        return max((cell_len(word) for text in texts for word in text.split()), default=0)
    return max((cell_len(line) for text in texts for line in text.splitlines()), default=0)


def _table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    shown: Sequence[int],
    title: str | None,
    caption: str | None,
) -> Table:
    table = Table(
        title=title,
        title_justify="left",
        caption=caption,
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for index in shown:
        column = columns[index]
        table.add_column(
            column.header, justify=column.justify, no_wrap=not column.wrap, overflow="fold"
        )
    for row in rows:
        table.add_row(*(row[index] for index in shown))
    return table


def _stacked(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    width: int,
    title: str | None,
    caption: str | None,
) -> Group:
    lines: list[Text] = []
    if title:
        lines.append(Text(title, style="italic"))
    for row in rows:
        keys = [_plain(cell) for cell, column in zip(row, columns, strict=True) if column.key]
        lines.append(Text("  ".join(keys), style="bold"))
        for cell, column in zip(row, columns, strict=True):
            value = _plain(cell)
            if column.key or not value:
                continue
            label = " ".join(column.header.split())
            text = f"{label}: {' '.join(value.split())}"
            lines += [Text(line) for line in wrapped(text, width, indent="  ")]
    if caption:
        lines.append(Text(caption))
    return Group(*lines)


def wrapped(text: str, width: int, *, indent: str = "", then: str = "    ") -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken between words only (an
    identifier longer than the line stays whole), the first indented by ``indent``,
    the others by ``then``."""
    return textwrap.wrap(
        text,
        width=max(width, 20),
        initial_indent=indent,
        subsequent_indent=then,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent.rstrip()]


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell
