"""What a run is asked to do: the request and its tasks, from CLI flags or a plan file.

A plan file (TOML), strictly validated like the config::

    request = "Design a rate limiter"      # optional when given on the command line
    chain_of_thought = "surface"           # optional: the run-spec mode
    worker_backend = "provider"            # optional
    max_cost = 0.50                        # optional: USD the whole run may spend

    [[task]]
    name = "design"                        # optional, defaults to the role
    role = "architect"
    provider = "anthropic"                 # optional, defaults from config
    model = "claude-sonnet-4-6"            # optional
    effort = "high"                        # optional
    max_output_tokens = 4000               # optional, at least 1
    temperature = 0.2                      # optional, 0 to 2
    tools = ["git", "time.get_current_time"]   # optional: instead of the role's tools
    max_steps = 8                          # optional: model calls this task may make
    max_cost = 0.10                        # optional: USD this task may spend

    [[task]]
    name = "review"
    role = "reviewer"
    after = ["design"]                     # runs after, and receives its output

Tasks without ``after`` run concurrently (bounded by ``max_concurrency``). A task's
generation settings win over ``[defaults]`` in the config; settings given explicitly
(command line, API argument) win over both (:func:`with_generation`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from thoughtline._user_files import read_text_file
from thoughtline.config import ROLE_NAME, ROLE_NAME_RULE, describe_value
from thoughtline.errors import ConfigError, ThoughtlineError
from thoughtline.records import PersonaSource, Run

if TYPE_CHECKING:
    from thoughtline.model.client_turns import ClientTurns
    from thoughtline.runtime.planning.conversation import Continuation
from thoughtline.model.requests import (
    EFFORTS,
    GenerationSettings,
    max_output_tokens_problem,
    model_id_problem,
    temperature_problem,
)
from thoughtline.runtime.planning.roles import NO_PERSONA
from thoughtline.runtime.policy.budget import check_max_cost
from thoughtline.runtime.policy.checks import check_effort, check_mode, check_worker_backend
from thoughtline.tools.specs import MAX_STEPS_CEILING, tool_spec_problem

_TASK_KEYS = (
    "name",
    "role",
    "provider",
    "model",
    "effort",
    "max_output_tokens",
    "temperature",
    "after",
    "tools",
    "max_steps",
    "max_cost",
)
_PLAN_KEYS = ("request", "chain_of_thought", "worker_backend", "max_cost", "task")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSpec:
    name: str
    role: str
    provider: str | None = None
    model: str | None = None
    effort: str | None = None
    after: tuple[str, ...] = ()
    generation: GenerationSettings = field(default_factory=GenerationSettings)
    """This task's max_output_tokens and temperature; unset ones come from the config."""
    tools: tuple[str, ...] | None = None
    """The tools the task may call (``SERVER`` or ``SERVER.TOOL``); ``None``: its role's."""
    max_steps: int | None = None
    """Model calls the task may make; ``None``: its role's, else ``[orchestration]``'s."""
    max_cost: float | None = None
    """USD the task may spend; ``None``: its role's budget (``[roles.NAME] max_cost``)."""
    persona_source: PersonaSource = "explicit"
    """Where ``role`` came from; ``default``: none was asked for (planning gives the task
    the config's ``[defaults] role``, else no persona)."""
    system: str | None = None
    """The persona given inline (``--system``), sent instead of the role's prompt."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSpec:
    request: str
    tasks: tuple[TaskSpec, ...]
    chain_of_thought: str | None = None  # the run-spec mode (a plan file's)
    worker_backend: str | None = None
    source: str = "command line"
    max_cost: float | None = None
    """USD the run may spend; ``None``: ``[orchestration] max_cost``."""
    continues: str | None = None
    """The run this one continues (any form of a run id; the run stores the whole id): its
    conversation's earlier turns are sent with each task's request
    (:mod:`thoughtline.runtime.planning.conversation`)."""
    conversation_id: str | None = None
    """The id a new conversation is given (an ACP session's); ``None``: the run's own.
    A run that continues another joins that run's conversation."""
    client: str | None = None
    """The gateway client the run answers (``[gateway.clients.NAME]``); ``None``: none."""
    client_turns: ClientTurns | None = field(default=None, compare=False, repr=False)
    """A client's own history and tools, the input of the run's one task
    (:mod:`thoughtline.model.client_turns`)."""
    loaded: Continuation | None = field(default=None, compare=False, repr=False)
    """The conversation :meth:`Runtime.continuation_spec
    <thoughtline.runtime.engine.runner.Runtime.continuation_spec>` read for ``continues``, so
    planning does not read it again."""


def spec_from_roles(
    request: str,
    roles: list[str],
    *,
    provider: str | None = None,
    model: str | None = None,
    effort: str | None = None,
    max_output_tokens: int | None = None,
    temperature: float | None = None,
) -> RunSpec:
    """One concurrent task per role; with none, one task with no persona asked for
    (planning gives it the config's ``[defaults] role``, else none)."""
    generation = GenerationSettings(max_output_tokens=max_output_tokens, temperature=temperature)
    names = roles or [NO_PERSONA]
    seen: dict[str, int] = {}
    tasks = []
    for role in names:
        seen[role] = seen.get(role, 0) + 1
        name = role if seen[role] == 1 else f"{role}-{seen[role]}"
        tasks.append(
            TaskSpec(
                name=name,
                role=role,
                provider=provider,
                model=model,
                effort=effort,
                generation=generation,
                persona_source="explicit" if roles else "default",
            )
        )
    return RunSpec(request=request, tasks=tuple(tasks))


def with_system(
    spec: RunSpec, system: str | None, *, words: tuple[str, str] = ("system", "roles")
) -> RunSpec:
    """``spec`` with a persona given inline for every task. A task whose role was asked
    for (roles, a plan's task) would lose that role's prompt, so the two together are
    refused, naming them as ``words`` (the caller's spelling of system and roles); the
    config's ``[defaults] role`` gives way."""
    if system is None:
        return spec
    if not system.strip():
        raise ThoughtlineError("REQUEST_INVALID", f"The system prompt ({words[0]}) is empty.")
    chosen = [task.role for task in spec.tasks if task.persona_source in ("explicit", "plan")]
    if chosen:
        raise ThoughtlineError(
            "REQUEST_INVALID",
            f"{words[0]} and {words[1]} ({', '.join(chosen)}) both give the persona; "
            "give one of them.",
        )
    tasks = tuple(replace(task, persona_source="system", system=system) for task in spec.tasks)
    return replace(spec, tasks=tasks)


def continuation_spec(
    previous: Run,
    request: str,
    *,
    roles: Sequence[str] = (),
    provider: str | None = None,
    model: str | None = None,
    effort: str | None = None,
    generation: GenerationSettings | None = None,
    keep_tools: Callable[[str], bool] = lambda _name: True,
) -> RunSpec:
    """The spec of a run that continues ``previous``: its tasks again (same names, roles,
    endpoints, models, effort, settings and the tools ``keep_tools`` accepts), or one
    task per role in ``roles`` (a role that had a task keeps its endpoint and model);
    the flags given win (a new role runs on ``previous``'s first endpoint and model
    unless they are given). A mode chosen for ``previous`` (explicitly or by its plan) goes
    on; one it got from config or role settings is resolved again."""
    given = generation or GenerationSettings()
    by_name = {task.name: task for task in previous.tasks}
    # A role new to the conversation runs where the conversation ran, unless told.
    lead = previous.tasks[0] if previous.tasks else None
    new_provider, new_model = provider, model
    if provider is None and model is None and lead is not None:
        new_provider, new_model = lead.provider, lead.model
    if roles:
        base = spec_from_roles(request, list(roles))
        names = [(task.name, task.role) for task in base.tasks]
    else:
        names = [(task.name, task.role) for task in previous.tasks]
    ids = {task.id: task.name for task in previous.tasks}
    tasks: list[TaskSpec] = []
    for name, role in names:
        before = by_name.get(name)
        if before is None or before.role != role:
            tasks.append(
                TaskSpec(
                    name=name,
                    role=role,
                    provider=new_provider,
                    model=new_model,
                    effort=effort,
                    generation=given,
                )
            )
            continue
        same_endpoint = provider is None or provider == before.provider
        tasks.append(
            TaskSpec(
                name=name,
                role=role,
                provider=provider or before.provider,
                model=model if model is not None else (before.model if same_endpoint else None),
                effort=effort or before.effort,
                generation=given.over(before.generation),
                after=()
                if roles
                else tuple(ids[task_id] for task_id in before.after if task_id in ids),
                tools=tuple(name for name in before.tools if keep_tools(name))
                if before.tools
                else None,
                max_steps=before.max_steps if before.tools else None,
                max_cost=before.max_cost,
                # The conversation keeps its persona (planning resolves no default again).
                persona_source="explicit"
                if before.persona_source == "unrecorded"
                else before.persona_source,
                system=before.system,
            )
        )
    inherited = previous.chain_of_thought_source in ("explicit", "run")
    return RunSpec(
        request=request,
        tasks=tuple(tasks),
        chain_of_thought=previous.chain_of_thought if inherited else None,
        worker_backend=previous.worker_backend,
        continues=previous.id,
        max_cost=previous.max_cost,
    )


def with_generation(
    spec: RunSpec, *, max_output_tokens: int | None = None, temperature: float | None = None
) -> RunSpec:
    """``spec`` with explicitly given settings (a flag, an API argument) applied to every
    task, over what its plan says; settings left ``None`` keep the plan's."""
    explicit = GenerationSettings(max_output_tokens=max_output_tokens, temperature=temperature)
    if explicit == GenerationSettings():
        return spec
    tasks = tuple(replace(task, generation=explicit.over(task.generation)) for task in spec.tasks)
    return replace(spec, tasks=tasks)


def with_tools(
    spec: RunSpec,
    *,
    tools: Sequence[str] | None = None,
    max_steps: int | None = None,
    max_cost: float | None = None,
) -> RunSpec:
    """``spec`` with explicitly given tools (``--tool``, an API argument) and step limit
    applied to every task, over what its plan and roles say, and a budget for the whole
    run (``--max-cost``) over its plan's and the config's; ``None`` keeps theirs."""
    if max_cost is not None:
        spec = replace(spec, max_cost=check_max_cost(max_cost, "explicit argument"))
    if tools is None and max_steps is None:
        return spec
    for name in tools or ():
        problem = tool_spec_problem(name)
        if problem is not None:
            raise ThoughtlineError("REQUEST_INVALID", f"Tool {problem}.")
    if max_steps is not None:
        check_max_steps(max_steps, "explicit argument")
    tasks = tuple(
        replace(
            task,
            tools=task.tools if tools is None else tuple(tools),
            max_steps=task.max_steps if max_steps is None else max_steps,
        )
        for task in spec.tasks
    )
    return replace(spec, tasks=tasks)


def check_max_steps(value: object, where: str) -> int:
    """``value`` as a step limit, or ``REQUEST_INVALID`` naming where it came from."""
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or not (1 <= value <= MAX_STEPS_CEILING)
    ):
        raise ThoughtlineError(
            "REQUEST_INVALID",
            f"max_steps must be an integer from 1 to {MAX_STEPS_CEILING}, got {value!r} ({where}).",
        )
    return value


def load_plan(path: Path, *, request: str | None = None) -> RunSpec:
    """Read and validate a plan file; ``request`` (from the command line) wins."""
    text = read_text_file(path, "plan file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}.") from exc

    def fail(key: str, problem: str) -> ConfigError:
        return ConfigError(f"{path}: {key}: {problem}")

    for key in data:
        if key not in _PLAN_KEYS:
            raise fail(key, f"unknown key. Allowed keys: {', '.join(_PLAN_KEYS)}")

    def in_file(check: Callable[[str, str], object], value: str, key: str) -> None:
        """A value the runtime checks too, reported as a mistake in this file."""
        try:
            check(value, f"{path}: {key}")
        except ThoughtlineError as exc:
            raise ConfigError(exc.message) from None

    def wrong_type(key: str, expected: str, value: object) -> ConfigError:
        return fail(key, f"wrong type: must be {expected}, got {describe_value(value)}")

    request_text = request if request is not None else data.get("request")
    if request_text is not None and not isinstance(request_text, str):
        raise wrong_type("request", "a string", request_text)
    if request_text is None or not request_text.strip():
        raise fail("request", 'missing: give the request on the command line or as request = "..."')
    mode = data.get("chain_of_thought")
    if mode is not None:
        if not isinstance(mode, str):
            raise wrong_type("chain_of_thought", "a string", mode)
        in_file(check_mode, mode, "chain_of_thought")
    backend = data.get("worker_backend")
    if backend is not None and not isinstance(backend, str):
        raise wrong_type("worker_backend", "a string (provider or inline)", backend)
    if backend is not None:
        in_file(check_worker_backend, backend, "worker_backend")
    run_cost = data.get("max_cost")
    if run_cost is not None:
        in_file(check_max_cost, run_cost, "max_cost")
    raw_tasks = data.get("task")
    if raw_tasks is not None and not isinstance(raw_tasks, list):
        raise wrong_type("task", "an array of [[task]] tables", raw_tasks)
    if not raw_tasks:
        raise fail("task", "missing: a plan needs at least one [[task]] table")
    tasks: list[TaskSpec] = []
    for index, raw in enumerate(raw_tasks):
        where = f"task[{index}]"
        if not isinstance(raw, dict):
            raise wrong_type(where, "a table ([[task]])", raw)
        for key in raw:
            if key not in _TASK_KEYS:
                raise fail(f"{where}.{key}", f"unknown key. Allowed keys: {', '.join(_TASK_KEYS)}")
        role = raw.get("role")
        if role is not None and not isinstance(role, str):
            raise wrong_type(f"{where}.role", "a string", role)
        if not role:
            raise fail(f"{where}.role", "missing: every task needs a role")
        if not ROLE_NAME.match(role):
            raise fail(f"{where}.role", f"{role!r} is not a valid role name: {ROLE_NAME_RULE}")
        name = raw.get("name", role)
        if not isinstance(name, str):
            raise wrong_type(f"{where}.name", "a string", name)
        if not _NAME.match(name):
            raise fail(f"{where}.name", f"{name!r} is not a valid name (letters, digits, - _ .)")
        for key in ("provider", "model"):
            if key in raw and not isinstance(raw[key], str):
                raise wrong_type(f"{where}.{key}", "a string", raw[key])
            if key in raw and not raw[key]:
                raise fail(f"{where}.{key}", "must not be empty")
        model_problem = None if "model" not in raw else model_id_problem(raw["model"])
        if model_problem is not None:
            raise fail(f"{where}.model", model_problem)
        effort = raw.get("effort")
        if effort is not None and not isinstance(effort, str):
            raise wrong_type(f"{where}.effort", f"a string, one of {', '.join(EFFORTS)}", effort)
        if effort is not None:
            in_file(check_effort, effort, f"{where}.effort")
        for key, problem in (
            ("max_output_tokens", max_output_tokens_problem),
            ("temperature", temperature_problem),
        ):
            found = None if key not in raw else problem(raw[key])
            if found is not None:
                raise fail(f"{where}.{key}", found)
        temperature = raw.get("temperature")
        after = raw.get("after", [])
        if not isinstance(after, list):
            raise wrong_type(f"{where}.after", "an array of task names", after)
        for item in after:
            if not isinstance(item, str):
                raise wrong_type(f"{where}.after", "an array of task names (strings)", item)
        tools = raw.get("tools")
        if tools is not None:
            if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
                raise wrong_type(f"{where}.tools", 'an array of "SERVER" or "SERVER.TOOL"', tools)
            for item in tools:
                spec_problem = tool_spec_problem(item)
                if spec_problem is not None:
                    raise fail(f"{where}.tools", spec_problem)
        max_steps = raw.get("max_steps")
        if max_steps is not None:
            in_file(check_max_steps, max_steps, f"{where}.max_steps")
        task_cost = raw.get("max_cost")
        if task_cost is not None:
            in_file(check_max_cost, task_cost, f"{where}.max_cost")
        tasks.append(
            TaskSpec(
                name=name,
                role=role,
                persona_source="plan",
                tools=None if tools is None else tuple(tools),
                max_steps=max_steps,
                max_cost=None if task_cost is None else float(task_cost),
                provider=raw.get("provider"),
                model=raw.get("model"),
                effort=effort,
                after=tuple(after),
                generation=GenerationSettings(
                    max_output_tokens=raw.get("max_output_tokens"),
                    temperature=None if temperature is None else float(temperature),
                ),
            )
        )
    validate_graph(tasks, str(path))
    return RunSpec(
        request=request_text.strip(),
        tasks=tuple(tasks),
        chain_of_thought=mode,
        worker_backend=backend,
        source=str(path),
        max_cost=None if run_cost is None else float(run_cost),
    )


def validate_graph(tasks: list[TaskSpec], source: str) -> None:
    """Names unique, ``after`` names known, no cycles."""
    names = [task.name for task in tasks]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ConfigError(f"{source}: task names must be unique; repeated: {', '.join(duplicates)}")
    known = set(names)
    for task in tasks:
        for dependency in task.after:
            if dependency not in known:
                raise ConfigError(
                    f"{source}: task {task.name!r} runs after {dependency!r}, which is not a task "
                    f"of this plan. Tasks: {', '.join(names)}"
                )
    edges = {task.name: set(task.after) for task in tasks}
    done: set[str] = set()
    while edges:
        ready = [name for name, deps in edges.items() if deps <= done]
        if not ready:
            raise ConfigError(
                f"{source}: the tasks' 'after' lists form a cycle: {', '.join(sorted(edges))}"
            )
        for name in ready:
            done.add(name)
            del edges[name]
