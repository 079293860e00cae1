"""Planning: a run spec becomes a run, every task resolved before anything runs.

Roles, endpoints, models, effort and each task's disclosure mode are resolved here (mode
precedence: :func:`~thoughtline.runtime.policy.disclosure.resolve_mode`), so a bad name or a
missing credential is refused before a single request is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from thoughtline.config import Config
from thoughtline.errors import ConfigError, OptionError, ThoughtlineError
from thoughtline.model.requests import (
    GenerationSettings,
    max_output_tokens_problem,
    temperature_problem,
)
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.providers.redaction import Redactor
from thoughtline.records import Run, Task, new_id, new_run_id
from thoughtline.runtime.planning.conversation import Continuation, earlier_turns
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.runtime.planning.roles import RoleCatalog
from thoughtline.runtime.policy.checks import check_effort, check_model_id, check_worker_backend
from thoughtline.runtime.policy.disclosure import resolve_mode
from thoughtline.runtime.policy.request_size import check_request_size
from thoughtline.tools.listing import merged_servers
from thoughtline.tools.recorded import RecordedServer, record_python, record_server
from thoughtline.tools.settings import McpServerSettings
from thoughtline.tools.specs import PYTHON_SERVER, parse_tool_spec

if TYPE_CHECKING:
    from thoughtline.runtime.planning.toolbox import ToolServer

DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "claude-sonnet-4-6",
    "openai": "gpt-5.5",
    "openrouter": "anthropic/claude-sonnet-4.6",
    "gemini": "gemini-3-pro",
    "deepseek": "deepseek-reasoner",
    "ollama": "qwen3",
}


def check_generation(settings: GenerationSettings, where: str) -> GenerationSettings:
    """``settings``, or ``REQUEST_INVALID`` naming the bad value and where it came from."""
    for name, value, problem in (
        ("max_output_tokens", settings.max_output_tokens, max_output_tokens_problem),
        ("temperature", settings.temperature, temperature_problem),
    ):
        found = None if value is None else problem(value)
        if found is not None:
            raise ThoughtlineError("REQUEST_INVALID", f"{name} {found} ({where}).")
    return settings


def plan_run(
    spec: RunSpec,
    *,
    config: Config,
    registry: EndpointRegistry,
    roles: RoleCatalog,
    redactor: Redactor,
    explicit_mode: str | None = None,
    worker_backend: str | None = None,
    added_servers: Mapping[str, McpServerSettings] | None = None,
    python_tools: ToolServer | None = None,
    continuation: Continuation | None = None,
) -> Run:
    """The run for ``spec`` (status ``planned``, not yet stored). Raises a clear error for
    an unknown role, provider, mode, effort or backend, a model id that is not one
    (``MODEL_ID_INVALID``), a missing credential, or a
    request or task list over the configured limits. ``added_servers`` (an ACP editor's)
    are offered whole to every task; ``python_tools`` (the library API's callables) may
    be named as ``python.NAME``."""
    # Checked first: every surface (CLI, plan files, daemon, MCP, ACP) prepares here,
    # and an oversized run must cost nothing before it is refused.
    check_request_size(spec.request, config.max_request_bytes)
    if len(spec.tasks) > config.max_tasks_per_run:
        raise ThoughtlineError(
            "RUN_TOO_MANY_TASKS",
            f"This run has {len(spec.tasks)} tasks, more than the limit of "
            f"{config.max_tasks_per_run}; raise orchestration.max_tasks_per_run "
            "(up to 1000) in thoughtline.toml to allow more.",
        )
    if python_tools is not None and python_tools.settings.name in config.mcp_servers:
        name = python_tools.settings.name
        raise ThoughtlineError(
            "TOOL_NAME_TAKEN",
            f"[mcp_servers.{name}] ({config.mcp_servers[name].source}) takes the name the "
            f"run's Python callables are offered under ({name}.NAME); rename that server.",
        )
    configured = (
        config.chain_of_thought if "orchestration.chain_of_thought" in config.sources else None
    )
    run_mode = resolve_mode(
        explicit=explicit_mode,
        run=spec.chain_of_thought,
        role=None,
        by_role={},
        configured=configured,
    )
    if worker_backend is not None:
        backend = check_worker_backend(worker_backend, "explicit argument")
    elif spec.worker_backend is not None:
        backend = check_worker_backend(spec.worker_backend, spec.source)
    else:
        backend = config.worker_backend
    run = Run(
        id=new_run_id(),
        # A loaded key's value typed into the request is replaced before the run is
        # stored or sent: nothing thoughtline keeps or forwards may carry a key.
        request=redactor.values(spec.request),
        chain_of_thought=run_mode.mode,
        chain_of_thought_source=run_mode.source,
        worker_backend=backend,
        max_cost=config.max_cost if spec.max_cost is None else spec.max_cost,
        client=spec.client,
        client_asked=None if spec.client_turns is None else spec.client_turns.asked,
    )
    if continuation is not None:
        run.continues = continuation.previous.id
        run.conversation_id = continuation.conversation_id
    else:
        run.conversation_id = spec.conversation_id or run.id
    added = dict(added_servers or {})
    if added:
        merged_servers(config.mcp_servers, added)  # one name in both: refused
    ids = {task.name: new_id("task") for task in spec.tasks}
    efforts = [
        config.default_effort
        if task_spec.effort is None
        else check_effort(task_spec.effort, f"task {task_spec.name!r}")
        for task_spec in spec.tasks
    ]
    for position, asked in enumerate(spec.tasks):
        task_spec = persona_of(asked, config, roles, continuing=continuation is not None)
        provider = task_spec.provider or config.default_provider
        endpoint = registry.resolve(provider)
        # Every surface's model id is checked here, before anything is stored or sent:
        # on some wire APIs it is part of the URL's path.
        model = check_model_id(
            default_model(config, provider) if task_spec.model is None else task_spec.model
        )
        if backend == "provider":
            endpoint.require_key()
        mode = resolve_mode(
            explicit=explicit_mode,
            run=spec.chain_of_thought,
            role=task_spec.role,
            by_role=config.chain_of_thought_by_role,
            configured=configured,
        )
        generation = check_generation(task_spec.generation, f"task {task_spec.name!r}")
        tools = task_tools(config, task_spec, added, python_tools)
        run.tasks.append(
            Task(
                id=ids[asked.name],
                run_id=run.id,
                position=position,
                name=task_spec.name,
                role=task_spec.role,
                persona_source=task_spec.persona_source,
                system=None if task_spec.system is None else redactor.values(task_spec.system),
                provider=provider,
                model=model,
                chain_of_thought=mode.mode,
                chain_of_thought_source=mode.source,
                effort=efforts[position],
                after=[ids[name] for name in task_spec.after],
                generation=generation.over(config.default_generation),
                tools=tools,
                max_steps=task_spec.max_steps
                or config.role_max_steps.get(task_spec.role, config.max_steps),
                max_cost=config.role_max_cost.get(task_spec.role)
                if task_spec.max_cost is None
                else task_spec.max_cost,
                # A task that may call tools reports its steps and calls from the start.
                tool_calls=[] if tools else None,
                earlier=() if continuation is None else earlier_turns(continuation, task_spec.name),
                client_turns=spec.client_turns,
            )
        )
    run.tool_servers = recorded_tool_servers(run, config, added, python_tools, redactor)
    return run


def recorded_tool_servers(
    run: Run,
    config: Config,
    added: Mapping[str, McpServerSettings],
    python_tools: ToolServer | None,
    redactor: Redactor,
) -> list[RecordedServer]:
    """The records of the servers ``run``'s tasks may call, without secrets
    (:mod:`thoughtline.tools.recorded`), for a follow-up to start them again."""
    named = [parse_tool_spec(name) for task in run.tasks for name in task.tools]
    records: list[RecordedServer] = []
    for server in sorted({spec.server for spec in named}):
        if python_tools is not None and server == python_tools.settings.name:
            given = [tool.name for tool in python_tools.tools]
            called = {spec.tool for spec in named if spec.server == server}
            records.append(
                record_python(
                    server, given if None in called else [t for t in given if t in called]
                )
            )
            continue
        settings = added.get(server) or config.mcp_servers.get(server)
        if settings is not None:
            records.append(record_server(settings, scrub=redactor.values))
    return records


def persona_of(
    task_spec: TaskSpec, config: Config, roles: RoleCatalog, *, continuing: bool = False
) -> TaskSpec:
    """``task_spec`` with its role checked; a task of a new conversation no persona was
    asked for takes the config's ``[defaults] role`` (and its name, when it had the
    default one). A continued task keeps its persona and name, so its thread goes on."""
    default = task_spec.persona_source == "default" and not continuing
    if default and config.default_role is not None:
        role = config.default_role
        try:
            roles.get(role)
        except ThoughtlineError as error:
            where = config.sources.get("defaults.role", "the config")
            raise ConfigError(f"{where}: defaults.role: {error.message}") from error
        name = role if task_spec.name == task_spec.role else task_spec.name
        return replace(task_spec, role=role, name=name, persona_source="config")
    roles.get(task_spec.role)
    return task_spec


def task_tools(
    config: Config,
    task_spec: TaskSpec,
    added: Mapping[str, McpServerSettings] | None = None,
    python_tools: ToolServer | None = None,
) -> tuple[str, ...]:
    """The tools a task may call: its own (plan, ``--tool``, API), else its role's; each
    naming a configured server (``TOOL_SERVER_UNKNOWN`` otherwise) or one of the run's
    Python callables (``TOOL_NOT_FOUND`` otherwise); then every server in ``added`` (an
    ACP editor's), whole. Whether an MCP server has the named tool is known once it is
    started, for the run."""
    added = added or {}
    named = task_spec.tools
    where = f"task {task_spec.name!r}"
    if named is None:
        named = config.role_tools.get(task_spec.role, ())
        where = f"roles.{task_spec.role}.tools"
    for name in named:
        parsed = parse_tool_spec(name)
        server = parsed.server
        if python_tools is not None and server == python_tools.settings.name:
            given = [tool.name for tool in python_tools.tools]
            if parsed.tool is not None and parsed.tool not in given:
                raise ThoughtlineError(
                    "TOOL_NOT_FOUND",
                    f"The tool {name!r} ({where}) is none of the run's Python callables "
                    f"({', '.join(given)}).",
                )
            continue
        if server not in config.mcp_servers and server not in added:
            known = ", ".join(sorted({*config.mcp_servers, *added})) or "none"
            hint = (
                " Python callables are tools only through the library API (tools=[function])."
                if server == PYTHON_SERVER
                else ""
            )
            raise OptionError(
                "TOOL_SERVER_UNKNOWN",
                f"The tool {name!r} ({where}) names no configured MCP server "
                f"(configured: {known}); add [mcp_servers.{server}]{{hint}}." + hint,
                option="tools",
                # Only `thoughtline run` adds servers from a file; elsewhere the config.
                hints={"run": " or pass --mcp-config", "": " to the config"},
            )
    return tuple(dict.fromkeys((*named, *added)))


def default_model(config: Config, provider: str) -> str:
    """The model a task on ``provider`` uses when none is named."""
    if provider == config.default_provider:
        return config.default_model
    model = DEFAULT_MODELS.get(provider)
    if model is None:
        raise OptionError(
            "MODEL_MISSING",
            f"No default model for provider {provider!r}: pass {{option}} (or set model "
            "in the plan's task, or [defaults] model in thoughtline.toml).",
            option="model",
        )
    return model
