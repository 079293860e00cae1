"""The runtime: runs, tasks, disclosure, honest reasoning status, the layered trace.

This module is the runtime's face: the surfaces (the CLI, the daemon, the MCP server, the
ACP agent, telemetry and the Python API) import what they use of the runtime from here,
never from its modules (``tests/core/test_layers.py``). Each name loads its module on
first use, so a command that needs none of the runtime does not pay for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from thoughtline.runtime.engine.background import (
        RETRY_AFTER_S,
        ManagedRun,
        RunManager,
        RunManagerClosed,
        RunManagerFull,
    )
    from thoughtline.runtime.engine.opening import open_recovered
    from thoughtline.runtime.engine.runner import RunObserver, Runtime
    from thoughtline.runtime.engine.telemetry_hooks import CallReport, RequestedToolCall, StepReport
    from thoughtline.runtime.planning.options import (
        BY_NAME,
        OPTIONS,
        RunKeywords,
        RunOptions,
        SendKeywords,
        Surface,
        build_spec,
        spoken_as,
    )
    from thoughtline.runtime.planning.plan import (
        RunSpec,
        TaskSpec,
        load_plan,
        spec_from_roles,
        with_generation,
        with_system,
        with_tools,
    )
    from thoughtline.runtime.planning.roles import RoleCatalog
    from thoughtline.runtime.planning.run_tools import RunTools, ToolApproval
    from thoughtline.runtime.planning.toolbox import StartedTools, ToolServer
    from thoughtline.runtime.policy.budget import check_max_cost
    from thoughtline.runtime.policy.checks import WORKER_BACKENDS, check_effort, check_model_id
    from thoughtline.runtime.policy.disclosure import check_mode, shareable_carriers
    from thoughtline.runtime.policy.recovery import recover_on_open
    from thoughtline.runtime.policy.request_size import check_request_size, request_too_large
    from thoughtline.runtime.policy.retention import PurgeReport
    from thoughtline.runtime.policy.retention import apply as apply_retention
    from thoughtline.runtime.policy.trace import empty_layer_reason

# Each exported name: the module it lives in, and its name there.
_EXPORTS: dict[str, tuple[str, str]] = {
    "CallReport": ("thoughtline.runtime.engine.telemetry_hooks", "CallReport"),
    "ManagedRun": ("thoughtline.runtime.engine.background", "ManagedRun"),
    "PurgeReport": ("thoughtline.runtime.policy.retention", "PurgeReport"),
    "RETRY_AFTER_S": ("thoughtline.runtime.engine.background", "RETRY_AFTER_S"),
    "RequestedToolCall": ("thoughtline.runtime.engine.telemetry_hooks", "RequestedToolCall"),
    "RoleCatalog": ("thoughtline.runtime.planning.roles", "RoleCatalog"),
    "RunManager": ("thoughtline.runtime.engine.background", "RunManager"),
    "RunManagerClosed": ("thoughtline.runtime.engine.background", "RunManagerClosed"),
    "RunManagerFull": ("thoughtline.runtime.engine.background", "RunManagerFull"),
    "RunObserver": ("thoughtline.runtime.engine.runner", "RunObserver"),
    "RunSpec": ("thoughtline.runtime.planning.plan", "RunSpec"),
    "RunTools": ("thoughtline.runtime.planning.run_tools", "RunTools"),
    "Runtime": ("thoughtline.runtime.engine.runner", "Runtime"),
    "StartedTools": ("thoughtline.runtime.planning.toolbox", "StartedTools"),
    "StepReport": ("thoughtline.runtime.engine.telemetry_hooks", "StepReport"),
    "TaskSpec": ("thoughtline.runtime.planning.plan", "TaskSpec"),
    "ToolApproval": ("thoughtline.runtime.planning.run_tools", "ToolApproval"),
    "ToolServer": ("thoughtline.runtime.planning.toolbox", "ToolServer"),
    "apply_retention": ("thoughtline.runtime.policy.retention", "apply"),
    "check_effort": ("thoughtline.runtime.policy.checks", "check_effort"),
    "check_max_cost": ("thoughtline.runtime.policy.budget", "check_max_cost"),
    "check_mode": ("thoughtline.runtime.policy.disclosure", "check_mode"),
    "check_model_id": ("thoughtline.runtime.policy.checks", "check_model_id"),
    "check_request_size": ("thoughtline.runtime.policy.request_size", "check_request_size"),
    "empty_layer_reason": ("thoughtline.runtime.policy.trace", "empty_layer_reason"),
    "load_plan": ("thoughtline.runtime.planning.plan", "load_plan"),
    "open_recovered": ("thoughtline.runtime.engine.opening", "open_recovered"),
    "request_too_large": ("thoughtline.runtime.policy.request_size", "request_too_large"),
    "spec_from_roles": ("thoughtline.runtime.planning.plan", "spec_from_roles"),
    "with_generation": ("thoughtline.runtime.planning.plan", "with_generation"),
    "with_system": ("thoughtline.runtime.planning.plan", "with_system"),
    "with_tools": ("thoughtline.runtime.planning.plan", "with_tools"),
    "RunOptions": ("thoughtline.runtime.planning.options", "RunOptions"),
    "RunKeywords": ("thoughtline.runtime.planning.options", "RunKeywords"),
    "SendKeywords": ("thoughtline.runtime.planning.options", "SendKeywords"),
    "build_spec": ("thoughtline.runtime.planning.options", "build_spec"),
    "spoken_as": ("thoughtline.runtime.planning.options", "spoken_as"),
    "BY_NAME": ("thoughtline.runtime.planning.options", "BY_NAME"),
    "OPTIONS": ("thoughtline.runtime.planning.options", "OPTIONS"),
    "Surface": ("thoughtline.runtime.planning.options", "Surface"),
    "WORKER_BACKENDS": ("thoughtline.runtime.policy.checks", "WORKER_BACKENDS"),
    "recover_on_open": ("thoughtline.runtime.policy.recovery", "recover_on_open"),
    "shareable_carriers": ("thoughtline.runtime.policy.disclosure", "shareable_carriers"),
}

__all__ = [
    "BY_NAME",
    "OPTIONS",
    "RETRY_AFTER_S",
    "WORKER_BACKENDS",
    "CallReport",
    "ManagedRun",
    "PurgeReport",
    "RequestedToolCall",
    "RoleCatalog",
    "RunKeywords",
    "RunManager",
    "RunManagerClosed",
    "RunManagerFull",
    "RunObserver",
    "RunOptions",
    "RunSpec",
    "RunTools",
    "Runtime",
    "SendKeywords",
    "StartedTools",
    "StepReport",
    "Surface",
    "TaskSpec",
    "ToolApproval",
    "ToolServer",
    "apply_retention",
    "build_spec",
    "check_effort",
    "check_max_cost",
    "check_mode",
    "check_model_id",
    "check_request_size",
    "empty_layer_reason",
    "load_plan",
    "open_recovered",
    "recover_on_open",
    "request_too_large",
    "shareable_carriers",
    "spec_from_roles",
    "spoken_as",
    "with_generation",
    "with_system",
    "with_tools",
]


def __getattr__(name: str) -> Any:
    """Load an exported name's module on first use and keep the name here."""
    try:
        module_name, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module_name), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
