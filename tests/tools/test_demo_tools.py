"""The demo MCP server (``python -m thoughtline.testing.demo_tools``): its clock,
calculator and file reader through their Python functions, hostile inputs included
(``../``, links that lead out, ``9**9**9``, huge and deep expressions), and the server
itself over stdio with the official MCP client: three read-only tools, refusals as tool
errors, and the server serving on after one."""

from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import TextContent

from thoughtline.testing.demo_tools import (
    MAX_FILE_BYTES,
    DemoToolError,
    calculate,
    now,
    read_file,
)

FIXED = datetime.datetime(2026, 3, 6, 1, 2, 3, tzinfo=datetime.UTC)


def test_now_gives_the_time_in_the_zone() -> None:
    assert (
        now("Asia/Tokyo", clock=lambda: FIXED) == "2026-03-06T10:02:03+09:00 (Asia/Tokyo, Friday)"
    )
    assert now(clock=lambda: FIXED) == "2026-03-06T01:02:03+00:00 (UTC, Friday)"


@pytest.mark.parametrize(
    "zone", ["Mars/Olympus", "../../etc/passwd", "/etc/localtime", "", "x" * 5000]
)
def test_now_refuses_a_zone_that_is_not_an_iana_name(zone: str) -> None:
    with pytest.raises(DemoToolError) as refused:
        now(zone)
    message = str(refused.value)
    assert message.startswith("Unknown timezone ")
    assert message.endswith("give an IANA name such as Asia/Tokyo, Europe/Paris or UTC.")
    assert len(message) < 200


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("(2 + 3) * 4", "20"),
        ("7 // 2", "3"),
        ("-7 % 3", "2"),
        ("1 / 4", "0.25"),
        ("2 ** 10", "1024"),
        ("2 ** -1", "0.5"),
        ("9 ** 9", "387420489"),
        ("+1.5e3", "1500"),
    ],
)
def test_calculate_does_arithmetic(expression: str, value: str) -> None:
    assert calculate(expression) == value


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("9**9**9", "The exponent 387420489 is too large: the calculator takes powers up to 1000."),
        ("2 ** 1001", "The exponent 1001 is too large: the calculator takes powers up to 1000."),
        ("99 ** 999", "99 ** 999 has more than 4096 bits; the calculator keeps integers smaller."),
        (
            "(10 ** 400) * (10 ** 400) * (10 ** 400) * (10 ** 400)",
            "The result has more than 4096 bits; the calculator keeps integers smaller.",
        ),
        ("2.0 ** 1000 * 1e300", "The result is not a finite number."),
        ("1 / 0", "The expression divides by zero."),
        ("0 ** -1", "The expression divides by zero."),
        ("(-8) ** 0.5", "The result is not a real number."),
        ("2 ^ 10", "'^' is not arithmetic here: write a power as 2 ** 10."),
        ("9" * 201, "The expression is 201 characters; the calculator takes at most 200."),
        ("-" * 100 + "1", "The expression nests deeper than 32 levels."),
        (
            "__import__('os').system('true')",
            "\"__import__('os').system('true')\" is not arithmetic: use numbers, + - * / // % ** "
            "and parentheses (no names, calls or other operators).",
        ),
        (
            "(1).__class__",
            "'1 .__class__' is not arithmetic: use numbers, + - * / // % ** and parentheses "
            "(no names, calls or other operators).",
        ),
        ("'a' * 9", "'a' is not a number: the calculator takes numbers only."),
        ("True + 1", "True is not a number: the calculator takes numbers only."),
        (
            "1 +",
            "'1 +' is not an arithmetic expression: use numbers, + - * / // % ** and parentheses.",
        ),
        (
            "1 < 2",
            "'1 < 2' is not arithmetic: use numbers, + - * / // % ** and parentheses (no names, "
            "calls or other operators).",
        ),
    ],
)
def test_calculate_refuses_what_is_not_bounded_arithmetic(expression: str, message: str) -> None:
    with pytest.raises(DemoToolError) as refused:
        calculate(expression)
    assert str(refused.value) == message


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A demo directory with a file, a link inside it, links that lead out and a secret
    next to it."""
    (tmp_path / "outside.txt").write_text("the secret next door")
    inside = tmp_path / "demo"
    (inside / "sub").mkdir(parents=True)
    (inside / "notes.txt").write_text("hello from the notes")
    (inside / "sub" / "deeper.txt").write_text("deeper")
    (inside / "alias.txt").symlink_to(inside / "notes.txt")
    (inside / "escape.txt").symlink_to(tmp_path / "outside.txt")
    (inside / "escape-dir").symlink_to(tmp_path)
    return inside


def test_read_file_reads_inside_the_directory(root: Path) -> None:
    assert read_file(root, "notes.txt") == "hello from the notes"
    assert read_file(root, "sub/deeper.txt") == "deeper"
    assert read_file(root, "sub/../notes.txt") == "hello from the notes"
    assert read_file(root, "alias.txt") == "hello from the notes"  # a link that stays inside


@pytest.mark.parametrize(
    "path", ["../outside.txt", "sub/../../outside.txt", "escape.txt", "escape-dir/outside.txt"]
)
def test_read_file_refuses_a_path_that_leads_out(root: Path, path: str) -> None:
    with pytest.raises(DemoToolError) as refused:
        read_file(root, path)
    assert str(refused.value) == (
        f"{path!r} is outside the demo directory; give a path inside it (links that lead out "
        "are refused too)."
    )


def test_read_file_refuses_an_absolute_path_outside(root: Path) -> None:
    outside = str(root.parent / "outside.txt")
    with pytest.raises(DemoToolError, match="is outside the demo directory"):
        read_file(root, outside)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("missing.txt", "No file 'missing.txt' in the demo directory."),
        ("sub", "'sub' is not a regular file."),
        ("", "Give a file path under the demo directory of at most 1024 characters."),
        ("a\x00b", "Give a file path under the demo directory of at most 1024 characters."),
        ("x" * 1025, "Give a file path under the demo directory of at most 1024 characters."),
    ],
)
def test_read_file_refuses_what_is_not_a_file(root: Path, path: str, message: str) -> None:
    with pytest.raises(DemoToolError) as refused:
        read_file(root, path)
    assert str(refused.value) == message


def test_read_file_neither_blocks_on_a_fifo_nor_reads_it(root: Path) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(DemoToolError) as refused:
        read_file(root, "pipe")
    assert str(refused.value) == "'pipe' is not a regular file."


def test_read_file_returns_at_most_the_cap_and_says_so(root: Path) -> None:
    size = MAX_FILE_BYTES * 4
    (root / "big.txt").write_bytes(b"y" * size)
    text = read_file(root, "big.txt")
    assert text == "y" * MAX_FILE_BYTES + (
        f"\n[cut: the file is {size} bytes; the demo reader returns the first {MAX_FILE_BYTES}]"
    )


@pytest.mark.slow
async def test_the_server_over_stdio_offers_three_read_only_tools_and_refuses_as_tool_errors(
    root: Path,
) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "thoughtline.testing.demo_tools", "--root", str(root)]
    )
    async with Client(server) as client:
        listed = await client.list_tools()
        assert sorted(tool.name for tool in listed.tools) == ["calculate", "now", "read_file"]
        for tool in listed.tools:
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is True
            assert tool.annotations.destructive_hint is False

        def text(result: object) -> str:
            content = result.content  # type: ignore[attr-defined]
            assert isinstance(content[0], TextContent)
            return content[0].text

        answer = await client.call_tool("calculate", {"expression": "(2 + 3) * 4"})
        assert (answer.is_error, text(answer)) == (False, "20")
        refused = await client.call_tool("calculate", {"expression": "9**9**9"})
        assert refused.is_error is True
        assert "The exponent 387420489 is too large" in text(refused)
        escaped = await client.call_tool("read_file", {"path": "escape.txt"})
        assert escaped.is_error is True
        assert "'escape.txt' is outside the demo directory" in text(escaped)
        assert "secret" not in text(escaped)
        # Still serving after the refusals.
        notes = await client.call_tool("read_file", {"path": "notes.txt"})
        assert (notes.is_error, text(notes)) == (False, "hello from the notes")
        clock = await client.call_tool("now", {"timezone": "Asia/Tokyo"})
        assert clock.is_error is False and "+09:00 (Asia/Tokyo, " in text(clock)


@pytest.mark.slow
async def test_without_a_root_the_server_offers_no_file_reader() -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "thoughtline.testing.demo_tools"]
    )
    async with Client(server) as client:
        listed = await client.list_tools()
        assert sorted(tool.name for tool in listed.tools) == ["calculate", "now"]


@pytest.mark.slow
def test_a_root_that_is_not_a_directory_is_one_sentence(tmp_path: Path) -> None:
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.testing.demo_tools", "--root", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        f"--root {str(tmp_path / 'none')!r} is not a directory; give the one read_file may read."
    )
