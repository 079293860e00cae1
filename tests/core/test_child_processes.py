"""Every process a test starts and leaves running is started through one helper,
``tests.support.start_process`` (or within ``default_signals_in_children``), which gives
it SIGINT and SIGTERM at their defaults: a child inherits an ignored signal, and a test
run started as a background job (``bash scripts/check &``), under ``nohup`` or with no
terminal ignores SIGINT, so a test's Ctrl-C would reach a child that shrugs it off."""

from __future__ import annotations

import ast
import signal
import subprocess
import sys
from pathlib import Path

from tests.support import default_signals_in_children, start_process

TESTS = Path(__file__).resolve().parents[1]
HELPER = "default_signals_in_children"
# Calls that start a child and return while it runs (subprocess.run and friends wait).
STARTERS = {
    "Popen",
    "create_subprocess_exec",
    "create_subprocess_shell",
    "spawn_agent_process",  # acp.stdio: create_subprocess_exec underneath
    "spawn_stdio_connection",
    "spawn_client_process",
    "fork",
    "forkpty",
}


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _unguarded_starts(tree: ast.AST) -> list[tuple[int, str]]:
    """The starters called outside a ``with default_signals_in_children()`` block."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.With | ast.AsyncWith) and any(
            isinstance(item.context_expr, ast.Call) and _name(item.context_expr.func) == HELPER
            for item in node.items
        ):
            guarded = True
        if isinstance(node, ast.Call) and not guarded and _name(node.func) in STARTERS:
            found.append((node.lineno, str(_name(node.func))))
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return found


def test_every_child_a_test_starts_goes_through_the_helper() -> None:
    unguarded = [
        f"{path.relative_to(TESTS.parent)}:{line} calls {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, name in _unguarded_starts(ast.parse(path.read_text(), str(path)))
    ]
    assert unguarded == [], (
        "start these children with tests.support.start_process (or within "
        "default_signals_in_children()), so that they take SIGINT and SIGTERM however "
        f"the tests were started: {unguarded}"
    )


def test_the_check_finds_a_bare_popen_and_passes_a_guarded_one() -> None:
    bare = "import subprocess\np = subprocess.Popen(['true'])\n"
    guarded = (
        "from tests.support import default_signals_in_children\n"
        "with default_signals_in_children():\n"
        "    p = subprocess.Popen(['true'])\n"
    )
    assert _unguarded_starts(ast.parse(bare)) == [(2, "Popen")]
    assert _unguarded_starts(ast.parse(guarded)) == []


PRINT_SIGINT = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"


def test_a_child_takes_sigint_even_when_the_tests_ignore_it() -> None:
    """As in a background job: SIGINT ignored here; the child starts with the default
    (Python then installs its KeyboardInterrupt handler), and this process still ignores
    it afterwards."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        inherited = subprocess.run(
            [sys.executable, "-c", PRINT_SIGINT], capture_output=True, text=True, check=True
        )
        child = start_process(
            [sys.executable, "-c", PRINT_SIGINT], stdout=subprocess.PIPE, text=True
        )
        out, _ = child.communicate(timeout=60)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        with default_signals_in_children():
            assert signal.getsignal(signal.SIGINT) != signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert inherited.stdout.strip() == "False"  # what a plain Popen would have given
    assert out.strip() == "True"
