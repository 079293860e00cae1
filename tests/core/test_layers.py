"""The layers import downwards only (docs/architecture.md): the provider layer knows no
store or runtime, the store no runtime or surface, and the surfaces reach the runtime
through its entry points, never its policy modules, the disclosure gate or a store's
private modules or classes (``store/opening.py`` opens every store)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "src" / "thoughtline"

PROVIDER_LAYER = ("providers", "wire", "events.py", "parts.py", "requests.py", "accumulator.py")
SURFACES = ("cli", "server", "integrations", "telemetry")


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports (``from x import y`` as ``x`` and ``x.y``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def files_under(*parts: str) -> list[Path]:
    paths: list[Path] = []
    for part in parts:
        where = SOURCE / part
        paths += [where] if where.suffix == ".py" else sorted(where.rglob("*.py"))
    return paths


def offenders(paths: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{path.relative_to(SOURCE)}: {name}"
        for path in paths
        for name in imports_of(path)
        if name.startswith(forbidden)
    )


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        (
            PROVIDER_LAYER,
            ("thoughtline.store", "thoughtline.runtime", "thoughtline.cli", "thoughtline.server"),
        ),
        (("store",), ("thoughtline.runtime", "thoughtline.cli", "thoughtline.server")),
        (
            SURFACES,
            (
                "thoughtline.store._",
                "thoughtline.store.sqlite.SQLiteStore",
                "thoughtline.store.postgres.PostgresStore",
                "thoughtline.runtime.recovery",
                "thoughtline.runtime.retention.purge",
                "thoughtline.runtime.disclosure.DisclosureGate",
            ),
        ),
    ],
)
def test_imports_point_downwards(layer: tuple[str, ...], forbidden: tuple[str, ...]) -> None:
    assert offenders(files_under(*layer), forbidden) == []


def test_the_check_reads_imports() -> None:
    # The store layer does import the records: the walk sees real imports.
    assert any("thoughtline.records" in imports_of(path) for path in files_under("store"))
