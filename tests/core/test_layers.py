"""The layers import downwards only (docs/architecture.md): the provider layer knows no
store or runtime, the store no runtime or surface, and each surface imports an allow-list:
the runtime's face (``thoughtline.runtime`` itself, never one of its modules), the
records, the run events, config and errors, its own package, and the few modules listed
below with the reason each is needed. A surface that wants more of the runtime asks the
face to export it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "src" / "thoughtline"

PROVIDER_LAYER = ("thoughtline.providers", "thoughtline.wire", "thoughtline.model")

# Each surface: its modules (with everything below them).
SURFACES: dict[str, tuple[str, ...]] = {
    "cli": ("thoughtline.cli",),
    "server": ("thoughtline.server",),
    "integrations": ("thoughtline.integrations",),
    "telemetry": ("thoughtline.telemetry",),
    "api": ("thoughtline.api",),
}

SURFACES_AS_MODULES = tuple(module for modules in SURFACES.values() for module in modules)

FACE = "thoughtline.runtime"

# What every surface may import besides the face: the records (with the run events and
# their log), config (with prices) and errors.
SHARED = (
    "thoughtline.records",
    "thoughtline.config",
    "thoughtline.errors",
)

# Further modules a surface legitimately needs: (module, the surfaces that use it, why).
# A module is allowed with everything below it; an entry no surface uses is stale.
ALSO: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("thoughtline", ("cli", "server", "integrations", "telemetry"), "__version__ only"),
    (
        "thoughtline.gateway",
        ("server",),
        "the daemon's gateway reads each client API's body and writes its replies and "
        "errors through that API's dialect (pure translation)",
    ),
    (
        "thoughtline.model",
        ("server",),
        "the gateway's calls are the event model's messages and parts, their answers its "
        "events and response, rendered by the dialects: any wire serves any client API",
    ),
    (
        "thoughtline.model.requests",
        ("cli", "server", "integrations"),
        "effort, generation settings and their limits: the words run options are given in",
    ),
    (
        "thoughtline.schema",
        ("server", "integrations"),
        "the published JSON Schema of a run snapshot (OpenAPI, the MCP tool's output)",
    ),
    (
        "thoughtline.store.base",
        ("cli", "server", "integrations", "api"),
        "the Store protocol: surfaces read runs, never a store's classes",
    ),
    (
        "thoughtline.store.opening",
        ("cli",),
        "opens the configured store (read-only commands skip crash recovery)",
    ),
    (
        "thoughtline.store.run_ids",
        ("cli", "server", "integrations", "api"),
        "resolves `latest`, short ids and prefixes",
    ),
    (
        "thoughtline.tools",
        ("cli", "server", "integrations"),
        "tool server settings, mcp.json, step limits and Python callables",
    ),
    (
        "thoughtline.providers",
        ("cli", "telemetry", "api"),
        "`providers`, `models`, `config` and `prices` read the endpoints and capabilities; "
        "front ends load the capability cache; telemetry and URLs are shown redacted",
    ),
    (
        "thoughtline.telemetry",
        ("cli", "api"),
        "a run's observer is opened by the front end that starts the runtime",
    ),
    ("thoughtline.testing", ("cli",), "`thoughtline simulate` serves the simulator"),
    ("thoughtline.server", ("cli",), "`thoughtline serve` starts the daemon"),
    ("thoughtline.integrations", ("cli",), "`thoughtline mcp` and `thoughtline acp` start them"),
    ("thoughtline._blocking", ("api",), "the sync API drives the async one"),
    ("thoughtline._process", ("cli",), "process set-up before a run"),
    ("thoughtline._undumpable", ("cli",), "no core dumps of a process holding reasoning"),
    ("thoughtline._private_files", ("server",), "the daemon's token file is private"),
    ("thoughtline._user_files", ("server",), "sizes in the daemon's limits, as shown"),
)


def imports_of(path: Path) -> set[str]:
    """Every thoughtline module ``path`` imports: ``from x import y`` counts as ``x``, or
    as ``x.y`` when ``y`` is a module (``from thoughtline.runtime import plan``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if is_module(submodule) else node.module)
    return {name for name in found if name == "thoughtline" or name.startswith("thoughtline.")}


def is_module(name: str) -> bool:
    where = SOURCE.parent.joinpath(*name.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def files_under(*modules: str) -> list[Path]:
    """The files of ``modules`` (dotted names), a package's with all its modules."""
    paths: list[Path] = []
    for module in modules:
        where = SOURCE.parent.joinpath(*module.split("."))
        paths += sorted(where.rglob("*.py")) if where.is_dir() else [where.with_suffix(".py")]
    return paths


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def offenders(paths: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{path.relative_to(SOURCE)}: {name}"
        for path in paths
        for name in imports_of(path)
        if any(within(name, prefix) for prefix in forbidden)
    )


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        (
            PROVIDER_LAYER,
            ("thoughtline.store", "thoughtline.runtime", "thoughtline.cli", "thoughtline.server"),
        ),
        (("thoughtline.store",), ("thoughtline.runtime", "thoughtline.cli", "thoughtline.server")),
        # The gateway's client dialects read a body into the provider layer's parts and
        # write replies from its events: pure translation, so they know no store, run,
        # config, record or surface (the daemon's gateway routes call them).
        (
            ("thoughtline.gateway",),
            (
                "thoughtline.store",
                "thoughtline.runtime",
                "thoughtline.config",
                "thoughtline.records",
                "thoughtline.providers",
                "thoughtline.testing",
                *SURFACES_AS_MODULES,
            ),
        ),
    ],
)
def test_imports_point_downwards(layer: tuple[str, ...], forbidden: tuple[str, ...]) -> None:
    assert offenders(files_under(*layer), forbidden) == []


def allowed(surface: str, name: str) -> bool:
    own = SURFACES[surface]
    if name == FACE or any(within(name, prefix) for prefix in (*own, *SHARED)):
        return True
    return any(
        (name == module if module == "thoughtline" else within(name, module)) and surface in users
        for module, users, _ in ALSO
    )


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_a_surface_imports_only_the_runtime_face_and_its_allow_list(surface: str) -> None:
    files = files_under(*SURFACES[surface])
    outside = sorted(
        f"{path.relative_to(SOURCE)}: {name}"
        for path in files
        for name in imports_of(path)
        if not allowed(surface, name)
    )
    assert outside == []


def test_every_allowance_is_used() -> None:
    used = {
        (surface, name)
        for surface, modules in SURFACES.items()
        for path in files_under(*modules)
        for name in imports_of(path)
    }
    stale = sorted(
        f"{module} for {surface}"
        for module, users, _ in ALSO
        for surface in users
        if not any(
            who == surface and (name == module if module == "thoughtline" else within(name, module))
            for who, name in used
        )
    )
    assert stale == []


def test_the_face_exports_what_it_names() -> None:
    import thoughtline.runtime as face

    missing = [name for name in face.__all__ if getattr(face, name, None) is None]
    assert missing == []


def test_the_check_reads_imports() -> None:
    # The walk sees real imports: the store imports the records, and a submodule named in
    # ``from package import module`` counts as that module.
    assert any(
        "thoughtline.records" in imports_of(path) for path in files_under("thoughtline.store")
    )
    (context,) = files_under("thoughtline.cli._context")
    assert "thoughtline.store.opening" in imports_of(context)


def test_a_run_execution_knows_its_services_not_the_runtime() -> None:
    # RunExecution gets RunServices (what a run uses), never the Runtime that made it.
    engine = files_under(
        "thoughtline.runtime.engine.execution", "thoughtline.runtime.engine.run_recording"
    )
    assert offenders(engine, ("thoughtline.runtime.engine.runner",)) == []
