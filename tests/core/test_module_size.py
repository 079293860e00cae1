"""No module in ``src/`` is over 500 lines: a module that grows past it is split by
concept (see how ``records/`` and the config validator are), not cut at a line."""

from __future__ import annotations

from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src"
LIMIT = 500


def line_counts() -> dict[str, int]:
    return {
        path.relative_to(SOURCE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(SOURCE.rglob("*.py"))
    }


def test_no_module_is_over_500_lines() -> None:
    counts = line_counts()
    assert len(counts) > 100  # the package was found
    assert {name: count for name, count in counts.items() if count > LIMIT} == {}
