"""Everything a run can be asked for, defined once: :data:`OPTIONS`, :class:`RunOptions`
and :func:`build_spec`.

Every surface maps its input onto :class:`RunOptions` and nothing else builds a
:class:`~thoughtline.runtime.planning.plan.RunSpec`: ``thoughtline run`` and ``chat`` (flags), the
daemon's ``POST /v1/runs`` and the page's form (JSON fields), the MCP tool
``orchestration_run`` (arguments), the ACP agent (``_meta.thoughtline`` keys) and the
library API (``thoughtline.run``, ``stream``, ``Orchestrator.start``,
``Conversation.send``: keyword arguments, :class:`RunKeywords`).

Each :class:`RunOption` says, in one place, what every surface needs: its name, a
one-line help text, the JSON Schema of its value (bounds included) for the JSON
surfaces, the check a given value passes (the existing ones: :mod:`~thoughtline.runtime.
checks`, :mod:`~thoughtline.runtime.policy.budget`, :mod:`~thoughtline.model.requests`,
:mod:`~thoughtline.tools.specs`), and how each surface spells it. A bad value is refused
with the same code everywhere, in the caller's own word (``--max-steps`` on the command
line, ``max_steps`` over HTTP, MCP and in Python, ``_meta.thoughtline.max_steps`` in ACP);
an error planning raises about an option (:class:`~thoughtline.errors.OptionError`) is
re-worded the same way by :func:`spoken_as`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Final, Literal, TypedDict

from thoughtline.config import MAX_COST_CEILING
from thoughtline.errors import OptionError, ThoughtlineError
from thoughtline.model.client_turns import ClientTurns
from thoughtline.model.requests import (
    EFFORTS,
    MAX_OUTPUT_TOKENS,
    MAX_TEMPERATURE,
    Effort,
    GenerationSettings,
    max_output_tokens_problem,
    temperature_problem,
)
from thoughtline.records import CHAIN_OF_THOUGHT_MODES, ChainOfThought, WorkerBackend
from thoughtline.runtime.planning.option_checks import (
    check_budget,
    check_continues,
    check_model,
    check_request,
    check_steps,
    check_system,
    check_text,
    check_tools,
    choice_check,
    names_check,
    problem_check,
)
from thoughtline.runtime.planning.plan import (
    RunSpec,
    spec_from_roles,
    with_generation,
    with_system,
    with_tools,
)
from thoughtline.runtime.policy.checks import (
    WORKER_BACKENDS,
    check_effort,
    check_mode,
    check_worker_backend,
)
from thoughtline.tools.specs import MAX_STEPS_CEILING

if TYPE_CHECKING:
    from thoughtline.runtime.engine.runner import Runtime
    from thoughtline.runtime.planning.toolbox import ToolServer

Surface = Literal["run", "chat", "http", "page", "mcp", "acp", "python", "gateway"]
"""Where a run is asked for: ``thoughtline run``, ``thoughtline chat``, ``POST /v1/runs``,
the page's form, the MCP tool, the ACP agent, the library API, the daemon's gateway (a
client's Chat Completions, Responses or Messages call)."""
SURFACES: Final[tuple[Surface, ...]] = (
    "run",
    "chat",
    "http",
    "page",
    "mcp",
    "acp",
    "python",
    "gateway",
)

ToolItem = str | Callable[..., Any]
"""A tool name (``SERVER`` or ``SERVER.TOOL``) or, in Python, a function."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOption:
    """One thing a run can be asked for, as every surface needs it."""

    name: str
    """The field of :class:`RunOptions`: the JSON field, MCP argument, ACP key and Python
    keyword, unless :attr:`words` spells it otherwise."""
    help: str
    """One line, for flags' help, the OpenAPI document and the MCP input schema."""
    schema: Mapping[str, Any]
    """The JSON Schema of a value (bounds included), for the JSON surfaces."""
    flag: str | None = None
    """Its command-line flag (``run`` and ``chat``)."""
    surfaces: frozenset[Surface]
    """Where it may be given."""
    words: Mapping[Surface, str] = field(default_factory=dict)
    """Where a surface spells it other than :attr:`flag` (CLI) or :attr:`name`."""
    check: Callable[[Any, str], object] | None = None
    """Refuses a bad value (a :class:`ThoughtlineError`), naming it by the word given."""

    def word(self, surface: Surface) -> str:
        """How ``surface`` spells this option, for its error messages."""
        if surface in self.words:
            return self.words[surface]
        if surface in ("run", "chat") and self.flag is not None:
            return self.flag
        if surface == "acp":
            return f"_meta.thoughtline.{self.name}"
        return self.name


_ALL: Final = frozenset(SURFACES) - {"gateway"}
_GATEWAY: Final[frozenset[Surface]] = frozenset({"gateway"})
_GATEWAY_AND: Final = frozenset(SURFACES)
_NULLABLE_STRING: Final = {"type": "string", "minLength": 1}

OPTIONS: Final[tuple[RunOption, ...]] = (
    RunOption(
        name="request",
        help="What the specialists should do.",
        schema={"type": "string", "minLength": 1},
        surfaces=_GATEWAY_AND,
        words={"run": "REQUEST", "chat": "the line", "acp": "prompt"},
        check=check_request,
    ),
    RunOption(
        name="roles",
        help="Specialist roles, one concurrent task each (built in: assistant, engineer, "
        "reviewer, architect, security; or the config's). Default: [defaults] role, else one "
        "task with no persona (no system prompt); with continues, the continued run's tasks.",
        schema={"type": "array", "items": _NULLABLE_STRING},
        flag="--role",
        surfaces=_ALL,
        check=names_check("role names", '["reviewer"]'),
    ),
    RunOption(
        name="system",
        help="A persona given inline: the system prompt of every task (not with roles).",
        schema=_NULLABLE_STRING,
        flag="--system",
        surfaces=_ALL,
        check=check_system,
    ),
    RunOption(
        name="provider",
        help="Endpoint name (anthropic, openai, openrouter, gemini, ...). Default: "
        "[defaults] provider.",
        schema=_NULLABLE_STRING,
        flag="--provider",
        surfaces=_GATEWAY_AND,
        check=check_text,
    ),
    RunOption(
        name="model",
        help="Model id for the endpoint. Default: [defaults] model, else the endpoint's.",
        schema={"type": "string"},
        flag="--model",
        surfaces=_GATEWAY_AND,
        check=check_model,
    ),
    RunOption(
        name="chain_of_thought",
        help="Disclosure mode: hidden | surface | telemetry_only | surface_and_telemetry "
        "(wins over the plan and config).",
        schema={"type": "string", "enum": list(CHAIN_OF_THOUGHT_MODES)},
        flag="--chain-of-thought",
        surfaces=_GATEWAY_AND,
        check=choice_check(check_mode),
    ),
    RunOption(
        name="effort",
        help="Reasoning effort (a separate axis from disclosure). Default: [defaults] effort.",
        schema={"type": "string", "enum": list(EFFORTS)},
        flag="--effort",
        surfaces=_GATEWAY_AND,
        check=choice_check(check_effort),
    ),
    RunOption(
        name="max_output_tokens",
        help="Most tokens each task may generate (wins over the plan and [defaults]).",
        schema={"type": "integer", "minimum": 1, "maximum": MAX_OUTPUT_TOKENS},
        flag="--max-output-tokens",
        surfaces=_GATEWAY_AND,
        check=problem_check(max_output_tokens_problem),
    ),
    RunOption(
        name="temperature",
        help="Sampling temperature, 0 to 2; not sent to models that refuse one (a warning "
        "says so).",
        schema={"type": "number", "minimum": 0, "maximum": MAX_TEMPERATURE},
        flag="--temperature",
        surfaces=_GATEWAY_AND,
        check=problem_check(temperature_problem),
    ),
    RunOption(
        name="worker_backend",
        help="provider calls the model; inline prepares prompts only.",
        schema={"type": "string", "enum": list(WORKER_BACKENDS)},
        flag="--worker-backend",
        surfaces=frozenset({"run", "http", "page", "python"}),
        check=choice_check(check_worker_backend),
    ),
    RunOption(
        name="tools",
        help='Tools every task may call: "SERVER" or "SERVER.TOOL" of an MCP server '
        "configured for thoughtline (a request never defines one); wins over roles and plan.",
        schema={"type": "array", "items": _NULLABLE_STRING, "maxItems": 100},
        flag="--tool",
        surfaces=_ALL,
        check=check_tools,
    ),
    RunOption(
        name="max_steps",
        help="Most model calls each task may make (tool steps; wins over the plan, roles "
        "and config).",
        schema={"type": "integer", "minimum": 1, "maximum": MAX_STEPS_CEILING},
        flag="--max-steps",
        surfaces=_ALL,
        check=check_steps,
    ),
    RunOption(
        name="max_cost",
        help="US dollars the run may spend, its tasks together (wins over the plan and "
        "config); a call that could go past it fails its task BUDGET_EXCEEDED.",
        schema={"type": "number", "minimum": 0, "maximum": MAX_COST_CEILING},
        flag="--max-cost",
        surfaces=_GATEWAY_AND,
        check=check_budget,
    ),
    RunOption(
        name="continues",
        help="The id of an ended run to follow up on: this run joins its conversation, "
        "runs its tasks again (the options given win) and sends each the earlier turns.",
        schema=_NULLABLE_STRING,
        flag="--continues",
        # ACP: a session's prompts continue its runs (session/load picks one up).
        surfaces=frozenset({"run", "chat", "http", "page", "mcp", "python"}),
        check=check_continues,
    ),
    RunOption(
        name="plan",
        help="A plan (a TOML file's tasks and handoffs) instead of roles.",
        schema={"type": "object"},
        flag="--plan",
        surfaces=frozenset({"run", "python"}),
        words={"python": "request"},  # a RunSpec given as the request (load_plan)
    ),
    RunOption(
        name="conversation_id",
        help="The id a new conversation is given (an ACP session's).",
        schema=_NULLABLE_STRING,
        surfaces=frozenset({"acp"}),
        words={"acp": "sessionId"},
    ),
    RunOption(
        name="client",
        help="The gateway client the run answers ([gateway.clients.NAME]), recorded with it.",
        schema=_NULLABLE_STRING,
        surfaces=_GATEWAY,
    ),
    RunOption(
        name="client_turns",
        help="The client's own history and tools: the history is the task's input; its "
        "tools are offered and never run, the task ending on the model's tool calls.",
        schema={"type": "object"},
        surfaces=_GATEWAY,
    ),
)
BY_NAME: Final[Mapping[str, RunOption]] = {option.name: option for option in OPTIONS}


def word(name: str, surface: Surface) -> str:
    """How ``surface`` spells the option ``name``."""
    return BY_NAME[name].word(surface)


@contextmanager
def spoken_as(surface: Surface) -> Iterator[None]:
    """Re-raise an :class:`~thoughtline.errors.OptionError` naming the option in
    ``surface``'s words (``pass --model`` on the command line, ``pass model`` over HTTP)."""
    try:
        yield
    except OptionError as exc:
        option = BY_NAME.get(exc.option)
        if option is None:
            raise
        raise exc.spoken(option.word(surface), surface) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """What a caller asked one run for, on any surface: a field per :data:`OPTIONS` entry
    (``None`` or empty: not given), plus the tool servers a front end added
    (``servers``: an ACP editor's, kept when a follow-up's tools are carried over)."""

    request: str | None = None
    roles: Sequence[str] = ()
    system: str | None = None
    provider: str | None = None
    model: str | None = None
    chain_of_thought: ChainOfThought | None = None
    effort: Effort | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    worker_backend: WorkerBackend | None = None
    tools: Sequence[ToolItem] | None = None
    max_steps: int | None = None
    max_cost: float | None = None
    continues: str | None = None
    plan: RunSpec | None = None
    conversation_id: str | None = None
    client: str | None = None
    client_turns: ClientTurns | None = None
    servers: Collection[str] = ()

    def check(self, surface: Surface) -> None:
        """Refuse the first bad value given, in ``surface``'s words."""
        for option in OPTIONS:
            value = getattr(self, option.name)
            if value is None or option.check is None:
                continue
            if option.name == "roles" and not value and not isinstance(value, str):
                continue
            option.check(value, option.word(surface))

    @property
    def generation(self) -> GenerationSettings:
        return GenerationSettings(
            max_output_tokens=self.max_output_tokens, temperature=self.temperature
        )


class SendKeywords(TypedDict, total=False):
    """The keyword arguments of ``Conversation.send`` (``**options:
    Unpack[SendKeywords]``): the options of :class:`RunOptions` a Python caller gives by
    name, but ``continues``, which the conversation keeps."""

    roles: Sequence[str]
    system: str | None
    provider: str | None
    model: str | None
    chain_of_thought: ChainOfThought | None
    effort: Effort | None
    max_output_tokens: int | None
    temperature: float | None
    worker_backend: WorkerBackend | None
    tools: Sequence[ToolItem] | None
    max_steps: int | None
    max_cost: float | None


class RunKeywords(SendKeywords, total=False):
    """The keyword arguments of ``thoughtline.run``, ``stream`` and
    ``Orchestrator.start``: :class:`SendKeywords` and ``continues``."""

    continues: str | None


OPTION_FIELDS: Final = frozenset(item.name for item in fields(RunOptions)) - {"servers"}
assert set(BY_NAME) == OPTION_FIELDS, "RunOptions and OPTIONS must name the same options"


@dataclass(frozen=True, slots=True)
class BuiltRun:
    """The spec :func:`build_spec` made, and the run's Python callables as a tool
    server (``None``: none were given)."""

    spec: RunSpec
    python_tools: ToolServer | None = None


def build_spec(
    options: RunOptions, surface: Surface, *, runtime: Runtime | None = None
) -> BuiltRun:
    """The one place a run's spec is made: ``options`` checked in ``surface``'s words,
    then the plan's tasks, a follow-up of ``options.continues`` (read through
    ``runtime``: :meth:`~thoughtline.runtime.engine.runner.Runtime.continuation_spec`), or one
    task per role, with the tools, step limit, budget, persona and generation given
    winning."""
    options.check(surface)
    names, python_tools = split_tools(options.tools)
    if options.plan is not None:
        given = [
            option.word(surface)
            for option in OPTIONS
            if option.name in ("roles", "effort", "provider", "model", "continues")
            and getattr(options, option.name)
        ]
        if given:
            declares = (
                "A RunSpec declares its tasks (and the run it continues, as RunSpec.continues)"
                if surface == "python"
                else f"{word('plan', surface)} declares its tasks"
            )
            raise ThoughtlineError(
                "REQUEST_INVALID", f"{declares}; do not combine it with {', '.join(given)}."
            )
        spec = with_generation(
            options.plan,
            max_output_tokens=options.max_output_tokens,
            temperature=options.temperature,
        )
    elif options.request is None:
        raise ThoughtlineError("REQUEST_INVALID", "The request must not be empty.")
    elif options.continues is None:
        spec = spec_from_roles(
            options.request,
            list(options.roles),
            provider=options.provider,
            model=options.model,
            effort=options.effort,
            max_output_tokens=options.max_output_tokens,
            temperature=options.temperature,
        )
    else:
        if runtime is None:
            raise TypeError("a follow-up's spec is read through the runtime")
        spec = runtime.continuation_spec(
            options.continues,
            options.request,
            roles=tuple(options.roles),
            provider=options.provider,
            model=options.model,
            effort=options.effort,
            generation=options.generation,
            servers=options.servers,
        )
    spec = with_tools(spec, tools=names, max_steps=options.max_steps, max_cost=options.max_cost)
    spec = with_system(
        spec, options.system, words=(word("system", surface), word("roles", surface))
    )
    if options.conversation_id is not None and spec.continues is None:
        spec = replace(spec, conversation_id=options.conversation_id)
    if options.client is not None or options.client_turns is not None:
        spec = replace(spec, client=options.client, client_turns=options.client_turns)
    return BuiltRun(spec, python_tools)


def split_tools(tools: Sequence[ToolItem] | None) -> tuple[list[str] | None, ToolServer | None]:
    """The tool names, with ``python.NAME`` for each callable, and the callables as the
    run's Python tool server (``None`` when there are none). pydantic is imported only
    when a callable is given."""
    if tools is None:
        return None, None
    names = [item for item in tools if isinstance(item, str)]
    callables = [item for item in tools if not isinstance(item, str)]
    if not callables:
        return names, None
    from thoughtline.tools.python_tools import PythonTools

    python_tools = PythonTools(callables)
    return [*names, *python_tools.specs], python_tools
