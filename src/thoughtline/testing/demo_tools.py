"""A small MCP server to try tool loops offline: a clock, a calculator and a file reader.

``python -m thoughtline.testing.demo_tools [--root DIR]`` serves over stdio (it needs the
``mcp`` package, which the ``testing`` and ``mcp`` extras install). Its tools, each
annotated read-only:

- ``now(timezone)``: the current time in an IANA zone (``Asia/Tokyo``, ``UTC``).
- ``calculate(expression)``: arithmetic only (numbers, ``+ - * / // % **``, unary signs
  and parentheses), parsed with :mod:`ast` and evaluated node by node from a whitelist,
  never with ``eval``; the expression's length, its nesting, each power and each
  integer's size are bounded, so ``9**9**9`` is refused instead of computed.
- ``read_file(path)``: a text file under ``--root`` (offered only when one is given),
  resolved with every symbolic link followed and refused when it lands outside; at
  most :data:`MAX_FILE_BYTES` of it are returned.

A refusal is a tool error (``isError``) with one sentence saying what to do, which the
model reads; the server keeps serving.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import math
import operator
import os
import stat
import sys
import zoneinfo
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

MAX_EXPRESSION_CHARS: Final = 200
MAX_EXPONENT: Final = 1000
MAX_INTEGER_BITS: Final = 4096
MAX_DEPTH: Final = 32
MAX_FILE_BYTES: Final = 64 * 1024
MAX_PATH_CHARS: Final = 1024


class DemoToolError(ValueError):
    """A refusal: the message is one sentence for the model to read."""


# ---------------------------------------------------------------- clock


@cache
def _zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones()) | {"UTC"}


def now(timezone: str = "UTC", *, clock: Callable[[], datetime.datetime] | None = None) -> str:
    """The current time in ``timezone``, as ``2026-01-02T03:04:05+09:00 (Asia/Tokyo, Friday)``."""
    if timezone not in _zones():
        shown = timezone if len(timezone) <= 64 else timezone[:63] + "…"
        raise DemoToolError(
            f"Unknown timezone {shown!r}: give an IANA name such as Asia/Tokyo, "
            "Europe/Paris or UTC."
        )
    current = (clock or _utc_now)().astimezone(zoneinfo.ZoneInfo(timezone))
    return f"{current.isoformat(timespec='seconds')} ({timezone}, {current:%A})"


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


# ---------------------------------------------------------------- calculator

_BINARY: Final[dict[type[ast.operator], Callable[[Any, Any], Any]]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: Final[dict[type[ast.unaryop], Callable[[Any], Any]]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


def calculate(expression: str) -> str:
    """The value of the arithmetic ``expression`` (see the module docstring)."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise DemoToolError(
            f"The expression is {len(expression)} characters; the calculator takes at most "
            f"{MAX_EXPRESSION_CHARS}."
        )
    if "^" in expression:
        raise DemoToolError("'^' is not arithmetic here: write a power as 2 ** 10.")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise DemoToolError(
            f"{expression.strip()[:80]!r} is not an arithmetic expression: use numbers, "
            "+ - * / // % ** and parentheses."
        ) from None
    try:
        value = _evaluate(tree.body, 0)
    except ZeroDivisionError:
        raise DemoToolError("The expression divides by zero.") from None
    except OverflowError:
        raise DemoToolError("The result is too large for a floating-point number.") from None
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DemoToolError("The result is not a finite number.")
        return format(value, ".15g")
    return str(value)


def _evaluate(node: ast.expr, depth: int) -> int | float:
    if depth > MAX_DEPTH:
        raise DemoToolError(f"The expression nests deeper than {MAX_DEPTH} levels.")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise DemoToolError(
                f"{node.value!r} is not a number: the calculator takes numbers only."
            )
        return _bounded(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand, depth + 1))  # type: ignore[no-any-return]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _evaluate(node.left, depth + 1)
        right = _evaluate(node.right, depth + 1)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        return _bounded(_BINARY[type(node.op)](left, right))
    raise DemoToolError(
        f"{ast.unparse(node)[:80]!r} is not arithmetic: use numbers, + - * / // % ** and "
        "parentheses (no names, calls or other operators)."
    )


def _check_power(base: int | float, exponent: int | float) -> None:
    """Refuse a power before computing it when its size is out of bounds."""
    if abs(exponent) > MAX_EXPONENT:
        raise DemoToolError(
            f"The exponent {_short(exponent)} is too large: the calculator takes powers up to "
            f"{MAX_EXPONENT}."
        )
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        bits = abs(base).bit_length() * exponent
        if bits > MAX_INTEGER_BITS:
            raise DemoToolError(
                f"{_short(base)} ** {exponent} has more than {MAX_INTEGER_BITS} bits; "
                "the calculator keeps integers smaller."
            )
    if base == 0 and exponent < 0:
        raise ZeroDivisionError


def _bounded(value: Any) -> int | float:
    if isinstance(value, complex):
        raise DemoToolError("The result is not a real number.")
    if isinstance(value, int) and value.bit_length() > MAX_INTEGER_BITS:
        raise DemoToolError(
            f"The result has more than {MAX_INTEGER_BITS} bits; the calculator keeps integers "
            "smaller."
        )
    return value  # type: ignore[no-any-return]


def _short(number: int | float) -> str:
    if isinstance(number, int) and number.bit_length() > 64:
        return f"a {len(str(abs(number)))}-digit number"
    return repr(number)


# ---------------------------------------------------------------- file reader


def read_file(root: Path, path: str) -> str:
    """The text of the file ``path`` names under ``root`` (see the module docstring)."""
    if not path or len(path) > MAX_PATH_CHARS or "\x00" in path:
        raise DemoToolError(
            f"Give a file path under the demo directory of at most {MAX_PATH_CHARS} characters."
        )
    base = root.resolve(strict=True)
    try:
        target = (base / path).resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        raise DemoToolError(f"No file {path!r} in the demo directory.") from None
    except (OSError, RuntimeError):  # a symlink loop, a name too long
        raise DemoToolError(f"{path!r} cannot be opened.") from None
    if not target.is_relative_to(base):
        raise DemoToolError(
            f"{path!r} is outside the demo directory; give a path inside it "
            "(links that lead out are refused too)."
        )
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(target, flags)
    except OSError:
        raise DemoToolError(f"{path!r} cannot be opened.") from None
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        os.close(descriptor)
        raise DemoToolError(f"{path!r} is not a regular file.")
    with os.fdopen(descriptor, "rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    text = data[:MAX_FILE_BYTES].decode("utf-8", errors="replace")
    if len(data) > MAX_FILE_BYTES:
        text += f"\n[cut: the file is {info.st_size} bytes; the demo reader returns the first {MAX_FILE_BYTES}]"
    return text


# ---------------------------------------------------------------- the MCP server


def build_server(root: Path | None) -> MCPServer:
    """The MCP server with the three tools (``read_file`` only with a ``root``)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    server = MCPServer("thoughtline-demo-tools")
    read_only = ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )

    def refusing(function: Callable[..., str]) -> Callable[..., str]:
        def call(*args: Any) -> str:
            try:
                return function(*args)
            except DemoToolError as exc:
                raise ToolError(str(exc)) from None

        return call

    @server.tool(
        name="now",
        description="The current date and time in an IANA timezone, such as Asia/Tokyo.",
        annotations=read_only,
    )
    def clock_tool(timezone: str = "UTC") -> str:
        return refusing(now)(timezone)

    @server.tool(
        name="calculate",
        description="Evaluate an arithmetic expression: numbers, + - * / // % ** and parentheses.",
        annotations=read_only,
    )
    def calculator_tool(expression: str) -> str:
        return refusing(calculate)(expression)

    if root is not None:

        @server.tool(
            name="read_file",
            description="Read a text file in the demo directory, by its path relative to it.",
            annotations=read_only,
        )
        def reader_tool(path: str) -> str:
            return refusing(read_file)(root, path)

    return server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m thoughtline.testing.demo_tools",
        description="A demo MCP server over stdio: now, calculate and read_file.",
    )
    parser.add_argument(
        "--root",
        type=Path,
        help="The directory read_file reads in (without it, read_file is not offered).",
    )
    arguments = parser.parse_args(argv)
    root: Path | None = arguments.root
    if root is not None and not root.is_dir():
        parser.error(f"--root {str(root)!r} is not a directory; give the one read_file may read.")
    try:
        server = build_server(root)
    except ImportError:
        print(
            "The demo tools need the mcp package: pip install 'thoughtline[testing]'.",
            file=sys.stderr,
        )
        return 2
    server.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
