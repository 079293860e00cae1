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
    from thoughtline.runtime.background import (
        RETRY_AFTER_S,
        ManagedRun,
        RunManager,
        RunManagerClosed,
        RunManagerFull,
    )
    from thoughtline.runtime.budget import check_max_cost
    from thoughtline.runtime.checks import check_effort, check_model_id
    from thoughtline.runtime.disclosure import check_mode
    from thoughtline.runtime.opening import open_recovered
    from thoughtline.runtime.plan import (
        RunSpec,
        TaskSpec,
        load_plan,
        spec_from_roles,
        with_generation,
        with_system,
        with_tools,
    )
    from thoughtline.runtime.request_size import check_request_size, request_too_large
    from thoughtline.runtime.retention import PurgeReport
    from thoughtline.runtime.retention import apply as apply_retention
    from thoughtline.runtime.roles import RoleCatalog
    from thoughtline.runtime.run_tools import RunTools, ToolApproval
    from thoughtline.runtime.runner import RunObserver, Runtime
    from thoughtline.runtime.telemetry_hooks import CallReport, RequestedToolCall, StepReport
    from thoughtline.runtime.toolbox import StartedTools, ToolServer
    from thoughtline.runtime.trace import empty_layer_reason

# Each exported name: the module it lives in, and its name there.
_EXPORTS: dict[str, tuple[str, str]] = {
    "CallReport": ("thoughtline.runtime.telemetry_hooks", "CallReport"),
    "ManagedRun": ("thoughtline.runtime.background", "ManagedRun"),
    "PurgeReport": ("thoughtline.runtime.retention", "PurgeReport"),
    "RETRY_AFTER_S": ("thoughtline.runtime.background", "RETRY_AFTER_S"),
    "RequestedToolCall": ("thoughtline.runtime.telemetry_hooks", "RequestedToolCall"),
    "RoleCatalog": ("thoughtline.runtime.roles", "RoleCatalog"),
    "RunManager": ("thoughtline.runtime.background", "RunManager"),
    "RunManagerClosed": ("thoughtline.runtime.background", "RunManagerClosed"),
    "RunManagerFull": ("thoughtline.runtime.background", "RunManagerFull"),
    "RunObserver": ("thoughtline.runtime.runner", "RunObserver"),
    "RunSpec": ("thoughtline.runtime.plan", "RunSpec"),
    "RunTools": ("thoughtline.runtime.run_tools", "RunTools"),
    "Runtime": ("thoughtline.runtime.runner", "Runtime"),
    "StartedTools": ("thoughtline.runtime.toolbox", "StartedTools"),
    "StepReport": ("thoughtline.runtime.telemetry_hooks", "StepReport"),
    "TaskSpec": ("thoughtline.runtime.plan", "TaskSpec"),
    "ToolApproval": ("thoughtline.runtime.run_tools", "ToolApproval"),
    "ToolServer": ("thoughtline.runtime.toolbox", "ToolServer"),
    "apply_retention": ("thoughtline.runtime.retention", "apply"),
    "check_effort": ("thoughtline.runtime.checks", "check_effort"),
    "check_max_cost": ("thoughtline.runtime.budget", "check_max_cost"),
    "check_mode": ("thoughtline.runtime.disclosure", "check_mode"),
    "check_model_id": ("thoughtline.runtime.checks", "check_model_id"),
    "check_request_size": ("thoughtline.runtime.request_size", "check_request_size"),
    "empty_layer_reason": ("thoughtline.runtime.trace", "empty_layer_reason"),
    "load_plan": ("thoughtline.runtime.plan", "load_plan"),
    "open_recovered": ("thoughtline.runtime.opening", "open_recovered"),
    "request_too_large": ("thoughtline.runtime.request_size", "request_too_large"),
    "spec_from_roles": ("thoughtline.runtime.plan", "spec_from_roles"),
    "with_generation": ("thoughtline.runtime.plan", "with_generation"),
    "with_system": ("thoughtline.runtime.plan", "with_system"),
    "with_tools": ("thoughtline.runtime.plan", "with_tools"),
}

__all__ = [
    "RETRY_AFTER_S",
    "CallReport",
    "ManagedRun",
    "PurgeReport",
    "RequestedToolCall",
    "RoleCatalog",
    "RunManager",
    "RunManagerClosed",
    "RunManagerFull",
    "RunObserver",
    "RunSpec",
    "RunTools",
    "Runtime",
    "StartedTools",
    "StepReport",
    "TaskSpec",
    "ToolApproval",
    "ToolServer",
    "apply_retention",
    "check_effort",
    "check_max_cost",
    "check_mode",
    "check_model_id",
    "check_request_size",
    "empty_layer_reason",
    "load_plan",
    "open_recovered",
    "request_too_large",
    "spec_from_roles",
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
