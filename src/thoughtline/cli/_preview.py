"""Requests as people read them: a bounded preview, never the whole text.

A request can be up to ``[orchestration] max_request_bytes`` (and a run stored under a
higher limit keeps all of it): printed whole, a request of megabytes made ``thoughtline
status`` take longer than the run. The human views print its first lines and say how
large it is and how to see all of it; ``--json`` keeps the whole request.
"""

from __future__ import annotations

from typing import Final

from rich.text import Text

from thoughtline.cli._terminal_text import visible

PREVIEW_CHARS: Final = 1000
"""The most of a request the human views print."""
PREVIEW_LINES: Final = 10


def request_preview(request: str, run_id: str) -> Text:
    """``request: ...`` with at most :data:`PREVIEW_CHARS` characters in
    :data:`PREVIEW_LINES` lines, and, when cut, a line with the full size and the command
    that prints it whole."""
    head = request[:PREVIEW_CHARS]
    lines = head.split("\n", PREVIEW_LINES)[:PREVIEW_LINES]
    shown = "\n".join(lines)
    text = Text(f"request: {visible(shown)}")
    if len(shown) < len(request):
        text.append(
            f"\n… (cut: the request is {len(request):,} characters; "
            f"the whole request: thoughtline status {run_id} --json)",
            style="dim",
        )
    return text


def request_line(request: str, width: int = 60) -> str:
    """``request`` on one line of at most ``width`` characters (``...`` when cut)."""
    # Only the start is joined: splitting a request of megabytes costs its whole length.
    words = " ".join(request[: width * 4].split())
    if len(words) <= width and len(request) <= width * 4:
        return words
    return words[: width - 3] + "..."
