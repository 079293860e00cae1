"""Python callables as tools, through the library API only (a daemon, MCP or ACP request
never brings code to run).

``thoughtline.run(..., tools=[search, "git"])`` offers ``search`` beside the MCP servers:
its JSON Schema comes from its type hints through pydantic (``create_model``), its
description from its docstring's first paragraph, and each parameter's description from
a simple ``Args:`` (Google), ``Parameters`` (NumPy) or ``:param x:`` (Sphinx) section.
The model's arguments are validated by the same pydantic model before the function is
called; arguments that do not fit are an error result (``TOOL_ARGUMENTS_INVALID``) and
the loop goes on.

The callables sit under a server of their own, :data:`PYTHON_SERVER` (``python.search``,
wire name ``python__search``), and go through the same path as an MCP server's tools:
recorded, traced, told live, timed out, cut, redacted, cancelled. A sync function runs in
a worker thread (``asyncio.to_thread``) so it never blocks the loop; an async one is
awaited. A thread cannot be stopped: a sync tool that times out or is cancelled goes on
in its thread until it returns, and its result is dropped.

A result that is a ``str`` goes to the model as it is, anything else as JSON (orjson,
pydantic's encoders for what orjson does not know). An exception becomes an error result
naming its type and message, never a traceback.

pydantic is imported here, and this module is imported only when a callable is given:
``import thoughtline`` stays as fast as before (``bench/bench_startup.py``).
"""

from __future__ import annotations

import asyncio
import inspect
import re
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar, overload

from thoughtline.errors import ThoughtlineError
from thoughtline.tools.mcp_client import DEFAULT_MAX_RESULT_CHARS, ToolInfo, ToolOutcome, cut_result
from thoughtline.tools.settings import McpServerSettings
from thoughtline.tools.specs import PYTHON_SERVER

_TOOL_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_MARK: Final = "__thoughtline_tool__"
_ERRORS_SHOWN: Final = 8

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class _Marks:
    name: str | None
    description: str | None
    destructive: bool


@overload
def tool(function: F, /) -> F: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, destructive: bool = False
) -> Callable[[F], F]: ...


def tool(
    function: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    destructive: bool = False,
) -> F | Callable[[F], F]:
    """Mark a function as a tool, optionally under another ``name`` or ``description``
    than its own ``__name__`` and docstring. ``destructive`` marks a tool that changes
    things; handing the function to ``tools=`` is what lets it run, so the mark is shown
    with the tool (as an MCP server's annotations are), not asked about. Any plain
    function may be passed to ``tools=`` without this decorator.

    ::

        @thoughtline.tool(name="lookup")
        def find_user(user_id: int) -> dict[str, str]:
            \"\"\"Find a user by id.\"\"\"
    """

    def mark(target: F) -> F:
        setattr(target, _MARK, _Marks(name, description, destructive))
        return target

    return mark if function is None else mark(function)


class PythonTool:
    """One callable as a tool: its name, description, JSON Schema, and the pydantic
    model that validates the model's arguments."""

    __slots__ = (
        "_arguments",
        "_function",
        "_is_async",
        "_positional",
        "description",
        "destructive",
        "name",
        "parameters",
    )

    def __init__(self, function: Callable[..., Any]) -> None:
        try:
            import pydantic
        except ImportError:  # pragma: no cover - pydantic comes with the mcp extra
            raise ThoughtlineError(
                "EXTRA_MISSING",
                "Python callables as tools need pydantic: pip install 'thoughtline[tools]'.",
            ) from None
        marks = getattr(function, _MARK, None) or _Marks(None, None, False)
        name: str = marks.name or getattr(function, "__name__", "") or ""
        if not _TOOL_NAME.match(name):
            raise ThoughtlineError(
                "REQUEST_INVALID",
                f"The callable {function!r} cannot be a tool under the name {name!r}: a tool "
                "name has letters, digits, '_' and '-' and starts with a letter or '_' "
                "(give one with @thoughtline.tool(name=...)).",
            )
        self.name = name
        self._function = function
        self._is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 (a callable object's own method)
        )
        self.destructive = marks.destructive
        # A callable object is described by its class, its parameters by its __call__.
        annotated = (
            function
            if inspect.isroutine(function)
            else getattr(type(function), "__call__", function)  # noqa: B004
        )
        summary, described = _read_docstring(inspect.getdoc(function) or "")
        if annotated is not function:
            own_summary, described = _read_docstring(inspect.getdoc(annotated) or "")
            summary = summary or own_summary
        self.description = marks.description if marks.description is not None else summary
        try:
            signature = inspect.signature(function)
            hints = typing.get_type_hints(annotated, include_extras=True)
        except (TypeError, ValueError, NameError) as exc:
            raise ThoughtlineError(
                "REQUEST_INVALID",
                f"The tool {name!r} has a signature or type hints that cannot be read ({exc}).",
            ) from None
        fields: dict[str, Any] = {}
        positional: list[str] = []
        for parameter in signature.parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise ThoughtlineError(
                    "REQUEST_INVALID",
                    f"The tool {name!r} takes *{parameter.name}: a tool's parameters must be "
                    "named, so the model can be told each one.",
                )
            if parameter.kind is parameter.POSITIONAL_ONLY:
                positional.append(parameter.name)
            annotation = hints.get(parameter.name, Any)
            default = ... if parameter.default is parameter.empty else parameter.default
            field = pydantic.Field(default, description=described.get(parameter.name))
            fields[parameter.name] = (annotation, field)
        try:
            self._arguments: type[pydantic.BaseModel] = pydantic.create_model(
                f"{name}_arguments",
                __config__=pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False),
                **fields,
            )
            self.parameters: dict[str, Any] = self._arguments.model_json_schema(
                schema_generator=_schema_generator()
            )
        except (
            pydantic.PydanticUserError,
            pydantic.PydanticSchemaGenerationError,
            NameError,
        ) as exc:
            raise ThoughtlineError(
                "REQUEST_INVALID",
                f"The tool {name!r} has a parameter pydantic cannot describe as JSON "
                f"({' '.join(str(exc).split())[:300]}).",
            ) from None
        self._positional = tuple(positional)

    def info(self) -> ToolInfo:
        """The tool as the runtime lists it, under :data:`PYTHON_SERVER`."""
        return ToolInfo(
            server=PYTHON_SERVER,
            name=self.name,
            description=self.description,
            input_schema=self.parameters,
            destructive=self.destructive,
        )

    async def call(
        self,
        arguments: Mapping[str, Any],
        *,
        timeout_s: float,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> ToolOutcome:
        """Validate ``arguments``, call the function (within ``timeout_s``), and return
        what the model is told."""
        import pydantic

        try:
            validated = self._arguments.model_validate(arguments)
        except pydantic.ValidationError as exc:
            return ToolOutcome(
                text=self._invalid(exc), is_error=True, error_code="TOOL_ARGUMENTS_INVALID"
            )
        values = {key: getattr(validated, key) for key in type(validated).model_fields}
        args = [values.pop(key) for key in self._positional]
        try:
            async with asyncio.timeout(timeout_s) as scope:
                if self._is_async:
                    value = await typing.cast(Awaitable[Any], self._function(*args, **values))
                else:
                    value = await asyncio.to_thread(self._function, *args, **values)
        except TimeoutError:
            if not scope.expired():  # the tool's own TimeoutError: its failure
                return _failed(TimeoutError("the tool raised TimeoutError"))
            return ToolOutcome(
                text=f"The tool {PYTHON_SERVER}.{self.name} did not answer within "
                f"{timeout_s:g} s ([timeouts] tool).",
                is_error=True,
                error_code="TOOL_TIMEOUT",
            )
        except Exception as exc:
            return _failed(exc)
        try:
            text = value if isinstance(value, str) else _to_json(value)
        except Exception as exc:
            return ToolOutcome(
                text=f"The tool returned a {type(value).__name__}, which is not JSON "
                f"({' '.join(str(exc).split())[:300]}).",
                is_error=True,
            )
        text, truncated = cut_result(text, max_result_chars)
        return ToolOutcome(text=text, truncated=truncated)

    def _invalid(self, error: Any) -> str:
        problems = [
            f"{'.'.join(str(step) for step in item['loc']) or '(arguments)'}: {item['msg']}"
            for item in error.errors(include_url=False, include_input=False)
        ]
        shown = "; ".join(problems[:_ERRORS_SHOWN])
        if len(problems) > _ERRORS_SHOWN:
            shown += f"; and {len(problems) - _ERRORS_SHOWN} more"
        return f"The arguments do not fit the tool {PYTHON_SERVER}.{self.name}: {shown}."


class PythonTools:
    """The callables of one run, by tool name; a started server to the runtime (the same
    ``settings``, ``tools`` and ``call`` as an MCP connection)."""

    __slots__ = ("by_name", "settings", "tools")

    def __init__(self, callables: Iterable[Callable[..., Any]]) -> None:
        self.by_name: dict[str, PythonTool] = {}
        seen: dict[str, Callable[..., Any]] = {}
        for function in callables:
            if any(function is other for other in seen.values()):
                continue  # the same function twice is one tool
            made = PythonTool(function)
            if made.name in seen:
                raise ThoughtlineError(
                    "TOOL_NAME_TAKEN",
                    f"Two callables are tools named {made.name!r} ({seen[made.name]!r} and "
                    f"{function!r}); rename one or give it another name with "
                    "@thoughtline.tool(name=...).",
                )
            seen[made.name] = function
            self.by_name[made.name] = made
        # Handing over a callable is the permission to run it, destructive or not.
        self.settings = McpServerSettings(
            name=PYTHON_SERVER, allow_destructive=True, source="the library API", origin="python"
        )
        self.tools: tuple[ToolInfo, ...] = tuple(made.info() for made in self.by_name.values())

    @property
    def specs(self) -> tuple[str, ...]:
        """``python.NAME`` of each callable, as a task names its tools."""
        return tuple(f"{PYTHON_SERVER}.{name}" for name in self.by_name)

    async def call(
        self, name: str, arguments: Mapping[str, Any], *, timeout_s: float
    ) -> ToolOutcome:
        """Call the tool ``name`` (one the runtime offered: it exists)."""
        return await self.by_name[name].call(arguments, timeout_s=timeout_s)


def _failed(exc: BaseException) -> ToolOutcome:
    message = " ".join(str(exc).split())[:2_000]
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return ToolOutcome(text=f"The tool raised {text}", is_error=True)


def _to_json(value: object) -> str:
    import orjson
    from pydantic_core import to_jsonable_python

    return orjson.dumps(value, default=to_jsonable_python, option=orjson.OPT_NON_STR_KEYS).decode(
        "utf-8"
    )


_GENERATOR: Any = None


def _schema_generator() -> Any:
    """pydantic's JSON Schema generator without the ``title`` keys, which only repeat
    the names (and cost tokens on every step)."""
    global _GENERATOR
    if _GENERATOR is None:
        from pydantic.json_schema import GenerateJsonSchema

        class Untitled(GenerateJsonSchema):
            def field_title_should_be_set(self, schema: Any) -> bool:
                return False

            def generate(self, schema: Any, mode: Any = "validation") -> Any:
                generated = super().generate(schema, mode=mode)
                generated.pop("title", None)
                return generated

        _GENERATOR = Untitled
    return _GENERATOR


_SECTION: Final = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:?\s*$")
_NUMPY_RULE: Final = re.compile(r"^-{3,}\s*$")
_OTHER_SECTION: Final = re.compile(
    r"^(Returns?|Yields?|Raises?|Examples?|Notes?|See Also|Warnings?|Attributes)\s*:?\s*$"
)
_GOOGLE_ITEM: Final = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ITEM: Final = re.compile(r"^(\w+)\s*(?::.*)?$")
_SPHINX_ITEM: Final = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def _read_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and each parameter's description from a simple ``Args:``,
    ``Parameters`` (NumPy) or ``:param x:`` section. What does not fit these shapes is
    left out, never guessed."""
    lines = doc.strip().splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()) or line.lstrip().startswith(":"):
            break
        summary.append(line.strip())
    described: dict[str, str] = {}
    current: str | None = None
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        sphinx = _SPHINX_ITEM.match(stripped)
        if sphinx:
            current = sphinx.group(1)
            described[current] = sphinx.group(2).strip()
        elif _SECTION.match(stripped):
            numpy = index + 1 < len(lines) and bool(_NUMPY_RULE.match(lines[index + 1].strip()))
            index = _read_section(lines, index + (2 if numpy else 1), described, numpy=numpy)
            current = None
            continue
        elif current is not None and stripped and not stripped.startswith(":"):
            described[current] = f"{described[current]} {stripped}".strip()
        else:
            current = None
        index += 1
    return " ".join(summary), {key: value for key, value in described.items() if value}


def _read_section(lines: list[str], index: int, described: dict[str, str], *, numpy: bool) -> int:
    """Read one parameter section from ``index``; return where it ended."""
    item_indent: int | None = None
    current: str | None = None
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if not stripped:
            if numpy and index + 1 < len(lines) and lines[index + 1].strip():
                index += 1
                continue
            return index + 1
        if _OTHER_SECTION.match(stripped) or (
            index + 1 < len(lines) and _NUMPY_RULE.match(lines[index + 1].strip())
        ):
            return index
        indent = len(line) - len(line.lstrip())
        if item_indent is None:
            item_indent = indent
        if indent <= item_indent:
            if indent < item_indent:
                return index
            found = (_NUMPY_ITEM if numpy else _GOOGLE_ITEM).match(stripped)
            if found is None:
                return index
            current = found.group(1).lstrip("*")
            described[current] = "" if numpy else found.group(2).strip()
        elif current is not None:
            described[current] = f"{described[current]} {stripped}".strip()
        index += 1
    return index
