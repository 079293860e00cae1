"""A wire API is one unit (docs/architecture.md): only its package
(``providers/<wire>/``) and the registry (``providers/registry.py``) know it. Anywhere
else in ``src/thoughtline``, code that names a wire API (branches on its name, passes
it as a wire, keys a table by it) or imports a wire package is refused: it asks the
registry's unit instead.

``gemini`` and ``ollama`` are also built-in endpoint names, which telemetry, pricing and
the planner's default models may key by; those two count only where they stand for a
wire (compared with a ``wire`` value, passed as ``wire_api=``/``wire=`` or to a
``wire``/``adapter`` function). The other names count wherever they appear, docstrings
apart.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from thoughtline.providers.endpoints import BUILTIN_ENDPOINTS
from thoughtline.providers.registry import WIRE_APIS, wire_for

SOURCE = Path(__file__).resolve().parents[2] / "src" / "thoughtline"
PROVIDERS = SOURCE / "providers"
REGISTRY = PROVIDERS / "registry.py"

ALLOWED: dict[tuple[str, str], str] = {
    ("providers/endpoints.py", "BUILTIN_ENDPOINTS"): (
        "the built-in endpoints are configuration: each names the wire API it speaks, "
        "as a [providers.NAME] table does"
    ),
    ("testing/wires.py", "SIMULATED"): (
        "the simulator's renderer and round-trip rule of each wire API, registered once "
        "(they stay in the testing layer, which no provider package imports)"
    ),
    ("cli/demo_command.py", "DEMO_TASKS"): (
        "the demo's task names say which wire API each task shows; nothing reads them as one"
    ),
    ("cli/demo_command.py", "openai-chat"): (
        "the demo's own endpoint is named openai-chat; it speaks the default wire API "
        "without naming it"
    ),
}
"""``(module, enclosing assignment or literal)`` → why it may name a wire API."""


def wire_packages() -> list[Path]:
    """Every package under ``providers/`` that exports a wire unit (``WIRE = Wire(...)``)."""
    return sorted(
        path.parent
        for path in PROVIDERS.glob("*/__init__.py")
        if "\nWIRE = Wire(" in path.read_text(encoding="utf-8")
    )


def _wire_modules() -> tuple[str, ...]:
    return tuple(f"thoughtline.providers.{package.name}" for package in wire_packages())


@dataclass(frozen=True, slots=True)
class Finding:
    line: int
    what: str
    within: str  # the module-level assignment it sits in ("" at other places)


def _docstrings(tree: ast.Module) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            ids.add(id(node.value))  # attribute docstrings and bare strings
    return ids


def _wire_context(tree: ast.Module) -> set[int]:
    """Ids of the string constants that stand where a wire API is meant."""

    def wireish(node: ast.AST) -> bool:
        text = ast.unparse(node).lower()
        return "wire" in text or "adapter" in text

    def constants(node: ast.AST) -> list[int]:
        return [id(n) for n in ast.walk(node) if isinstance(n, ast.Constant)]

    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(wireish(o) for o in operands if not isinstance(o, ast.Constant)):
                for operand in operands:
                    ids.update(constants(operand))
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg in ("wire_api", "wire"):
                    ids.update(constants(keyword.value))
            if wireish(node.func):
                for arg in node.args:
                    ids.update(constants(arg))
        elif isinstance(node, ast.Match) and wireish(node.subject):
            for case in node.cases:
                ids.update(constants(case.pattern))
    return ids


def findings(source: str) -> list[Finding]:
    """Where ``source`` (one module) names a wire API or imports a wire package."""
    tree = ast.parse(source)
    names = set(WIRE_APIS)
    ambiguous = names & set(BUILTIN_ENDPOINTS)
    docstrings = _docstrings(tree)
    in_context = _wire_context(tree)
    modules = _wire_modules()
    found: list[Finding] = []
    for statement in tree.body:
        within = ""
        if isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            within = ",".join(t.id for t in targets if isinstance(t, ast.Name))
        for node in ast.walk(statement):
            if isinstance(node, ast.Constant) and node.value in names:
                if id(node) in docstrings:
                    continue
                if node.value in ambiguous and id(node) not in in_context:
                    continue
                found.append(Finding(node.lineno, repr(node.value), within))
            elif isinstance(node, ast.Import | ast.ImportFrom):
                imported = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    imported = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                for module in imported:
                    if any(module == m or module.startswith(m + ".") for m in modules):
                        found.append(Finding(node.lineno, f"import {module}", within))
    return found


def outside_modules() -> list[Path]:
    packages = wire_packages()
    return [
        path
        for path in sorted(SOURCE.rglob("*.py"))
        if path != REGISTRY and not any(path.is_relative_to(p) for p in packages)
    ]


def test_every_wire_api_has_its_own_package_with_its_unit() -> None:
    assert {package.name for package in wire_packages()} == {
        wire_for(name).build.__module__.split(".")[2] for name in WIRE_APIS
    }
    for name in WIRE_APIS:
        assert wire_for(name).wire_api == name


def test_no_module_outside_a_wire_package_and_the_registry_names_a_wire_api() -> None:
    offenders: list[str] = []
    for path in outside_modules():
        module = path.relative_to(SOURCE).as_posix()
        for finding in findings(path.read_text(encoding="utf-8")):
            if (module, finding.within) in ALLOWED or (module, finding.what[1:-1]) in ALLOWED:
                continue
            offenders.append(f"{module}:{finding.line}: {finding.what}")
    assert offenders == [], (
        "Only a wire's package and providers/registry.py may name a wire API; ask the "
        "unit (registry.wire_for(endpoint.wire_api)) instead:\n" + "\n".join(offenders)
    )


@pytest.mark.parametrize(
    "snippet",
    [
        'if endpoint.wire_api == "ollama":\n    pass\n',
        'if wire in ("openai-responses", "gemini"):\n    pass\n',
        'AUTH = {"anthropic-messages": "x-api-key"}\n',
        'spec = EndpointSettings(wire_api="gemini")\n',
        'adapter = wire_for("ollama")\n',
        'match endpoint.wire_api:\n    case "gemini":\n        pass\n',
        "from thoughtline.providers.openai_chat._think_tags import ThinkTagSplitter\n",
        "from thoughtline.providers.anthropic import WIRE\n",
        "import thoughtline.providers.gemini._errors\n",
    ],
)
def test_the_rule_catches_a_module_that_names_a_wire(snippet: str) -> None:
    assert findings(snippet)


@pytest.mark.parametrize(
    "snippet",
    [
        '"""Speaks to the gemini endpoint (openai-chat docs)."""\n',
        'PROVIDER_NAMES = {"gemini": "gcp.gemini"}\n',
        'if name == "ollama":\n    pass\n',
        "wire = wire_for(endpoint.wire_api)\n",
    ],
)
def test_the_rule_leaves_endpoint_names_and_docs_alone(snippet: str) -> None:
    assert findings(snippet) == []
