"""Text bound for a terminal: what a model, a user, a config or the store wrote is shown,
never obeyed.

A terminal acts on control characters. ESC starts sequences that write the clipboard
(``ESC]52``), set the window title (``ESC]0``), make hyperlinks (``ESC]8``), clear the
screen (``ESC[2J``) or recolour everything after them; CR sends the cursor back so later
text overwrites earlier text; C1 characters are 8-bit forms of the same sequences; and
bidirectional overrides make a line read differently from the bytes it holds. So every
human view that writes to a terminal (the live panels, the final answers, ``status``,
``runs``, ``trace``, reasoning and progress on a terminal's stderr, error sentences)
passes such text through :func:`visible` first:

- C0 controls (U+0000 to U+001F) except TAB and LF: their Unicode control picture, one
  column each (``␛`` for ESC, ``␇`` for BEL, ``␍`` for CR);
- DEL (U+007F): ``␡``;
- CR directly before LF: dropped (the line ends anyway, nothing is overwritten);
- C1 controls (U+0080 to U+009F): ``\\x80`` to ``\\x9f``;
- bidi embeddings, overrides and isolates (U+202A to U+202E, U+2066 to U+2069):
  ``\\u202a`` and so on;

so ``ESC]52;c;…BEL`` reads ``␛]52;c;…␇``. TAB and LF keep their meaning. Everything else
(letters of every script, emoji, the implicit direction of Arabic or Hebrew text) is left
as it is.

Output for programs is not terminal text: answers on a piped stdout, and ``--json`` on a
pipe, keep the model's characters exactly. ``--json`` on a terminal is the same JSON value
with the few characters JSON leaves raw that a terminal would act on written as ``\\u``
escapes (:func:`json_for`).

:class:`TerminalConsole` applies :func:`visible` once more to whatever reaches the screen,
so a view that forgot a string still cannot drive the terminal (the views call
:func:`visible` themselves, before layout: the visible forms take columns that the raw
characters did not).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Iterable
from typing import Any, Final, TextIO

import click
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

_BIDI_CONTROLS = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))

# Code point -> what a terminal shows in its place.
_SHOWN: dict[int, str] = {
    **{code: chr(0x2400 + code) for code in range(0x20) if code not in (0x09, 0x0A)},
    0x7F: "\u2421",
    **{code: f"\\x{code:02x}" for code in range(0x80, 0xA0)},
    **{code: f"\\u{code:04x}" for code in _BIDI_CONTROLS},
}
_UNSAFE = re.compile("[" + "".join(re.escape(chr(code)) for code in _SHOWN) + "]")
# Raw in JSON text (JSON escapes only C0, quotes and backslashes) yet acted on by a terminal.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f" + "".join(chr(code) for code in _BIDI_CONTROLS) + "]")


def visible(text: str) -> str:
    """``text`` with every character a terminal would act on shown instead (see the
    module's table); text without such characters is returned as it is."""
    if _UNSAFE.search(text) is None:
        return text
    return text.replace("\r\n", "\n").translate(_SHOWN)


def visible_text(text: str, style: str | Style = "") -> Text:
    """:func:`visible` ``text`` as a rich :class:`~rich.text.Text` (never markup)."""
    return Text(visible(text), style=style)


def is_terminal(stream: TextIO | None) -> bool:
    """Whether ``stream`` is an open terminal."""
    try:
        return stream is not None and stream.isatty()
    except (ValueError, AttributeError):  # closed, or a stand-in without isatty
        return False


def for_stream(text: str, stream: TextIO | None) -> str:
    """``text`` as it may be written to ``stream``: :func:`visible` on a terminal, exact
    otherwise."""
    return visible(text) if is_terminal(stream) else text


def echo_error(message: str) -> None:
    """Write one line to stderr, made :func:`visible` when stderr is a terminal (error
    messages quote providers, plans and stored runs)."""
    click.echo(for_stream(message, sys.stderr), err=True)


def json_text(data: object) -> str:
    """``data`` as indented JSON, non-ASCII kept, with DEL, C1 and bidi controls written
    as ``\\u`` escapes: the same JSON value, safe to show on a terminal."""
    dumped = json.dumps(data, indent=2, ensure_ascii=False)
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", dumped)


def json_for(stream: TextIO | None, data: object) -> str:
    """``data`` as the ``--json`` output for ``stream``: :func:`json_text` on a terminal,
    plain ``json.dumps`` (the model's characters exactly) otherwise."""
    if is_terminal(stream):
        return json_text(data)
    return json.dumps(data, indent=2, ensure_ascii=False)


PIPED_WIDTH: Final = 80
"""The width of output that does not go to a terminal, when ``$COLUMNS`` says none."""


def output_width(stream: TextIO | None) -> int | None:
    """The width every command lays out its output for on ``stream``, the one rule for
    all of them: ``None`` on a terminal (its own width, followed as it is resized, or
    ``$COLUMNS``), else ``$COLUMNS`` when it is a number, else :data:`PIPED_WIDTH`;
    never a terminal the output does not go to (stdin or stderr on a terminal do not
    widen a piped stdout)."""
    if is_terminal(stream):
        return None
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH


def line_width(stream: TextIO | None) -> int:
    """:func:`output_width` as a number: on a terminal, its columns now."""
    return output_width(stream) or shutil.get_terminal_size().columns


class TerminalConsole(Console):
    """A rich console whose every rendered segment of text is :func:`visible`; rich's own
    control segments (cursor moves, the live view's redraws) pass unchanged, and styles
    are still rendered as rich renders them. Its width is :func:`output_width` of the
    stream it writes to, unless one is given."""

    def __init__(self, **options: Any) -> None:
        if options.get("width") is None:
            stream = options.get("file") or (sys.stderr if options.get("stderr") else sys.stdout)
            options["width"] = output_width(stream)
        super().__init__(**options)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        segments = list(super().render(renderable, options))
        # One search over all the text: per-segment checks would cost more than rich's
        # own rendering of a long answer. Control segments hold rich's own sequences.
        if _UNSAFE.search("".join(segment.text for segment in segments if not segment.control)):
            segments = [
                segment if segment.control else Segment(visible(segment.text), segment.style)
                for segment in segments
            ]
        return segments
