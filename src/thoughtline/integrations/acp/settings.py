"""Session settings: what a session's prompts run with, how a client changes them
(``_meta.thoughtline``, session modes, session config options) and the strict checks on
every value a client sends."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from acp import RequestError
from acp.schema import (
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

from thoughtline.errors import ThoughtlineError
from thoughtline.model.requests import EFFORTS
from thoughtline.records import CHAIN_OF_THOUGHT_MODES
from thoughtline.runtime import (
    BY_NAME,
    OPTIONS,
    RunOptions,
    Runtime,
    check_effort,
    check_mode,
    check_model_id,
)

META_KEY = "thoughtline"
SETTING_KEYS = tuple(
    option.name
    for option in OPTIONS
    if "acp" in option.surfaces and option.name not in ("request", "conversation_id")
)
"""The ``_meta.thoughtline`` keys: the run options an editor may set for a session (the
prompt is the request, the session id the conversation's)."""
MODE_OPTION = "chain_of_thought"
EFFORT_OPTION = "effort"

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

MODE_LABELS: Mapping[str, tuple[str, str]] = {
    "hidden": ("Hidden", "Reasoning is not requested from the model."),
    "surface": (
        "Surface",
        "Reasoning is requested and shown here; it is not written to the trace.",
    ),
    "telemetry_only": (
        "Telemetry only",
        "Reasoning is requested and written to the trace only; it is not shown here.",
    ),
    "surface_and_telemetry": (
        "Surface and telemetry",
        "Reasoning is requested, shown here, and written to the trace.",
    ),
}


def invalid_params(message: str, **data: Any) -> RequestError:
    """A JSON-RPC ``-32602`` error; ``data`` carries the thoughtline error ``code``."""
    return RequestError(INVALID_PARAMS, message, data or None)


def from_thoughtline(exc: ThoughtlineError) -> RequestError:
    """A thoughtline error (unknown role, missing key, ...) as a ``-32602`` error."""
    return invalid_params(exc.message, code=exc.code)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSettings:
    """What a session's prompts run with. ``chain_of_thought`` is ``None`` until someone
    chooses a mode: then the config decides (per role, then globally), as it does for
    ``thoughtline run`` without ``--chain-of-thought``."""

    chain_of_thought: str | None = None
    roles: tuple[str, ...] = ()
    provider: str | None = None
    model: str | None = None
    effort: str | None = None
    max_cost: float | None = None
    """USD each prompt's run may spend (``None``: the run continued from keeps its
    budget, a first run takes ``[orchestration] max_cost``)."""
    system: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    tools: tuple[str, ...] | None = None
    """Configured tool servers' tools every task may call, beside the editor's servers."""
    max_steps: int | None = None

    def options(self, request: str, **given: Any) -> RunOptions:
        """A prompt's run options: ``request`` with these settings."""
        settings: dict[str, Any] = {key: getattr(self, key) for key in SETTING_KEYS}
        return RunOptions(request=request, **settings, **given)

    def with_meta(self, meta: object) -> SessionSettings:
        """These settings overridden by a ``_meta.thoughtline`` object (strictly checked)."""
        if meta is None:
            return self
        where = f"_meta.{META_KEY}"
        if not isinstance(meta, Mapping):
            raise invalid_params(
                f"{where} must be an object with keys {', '.join(SETTING_KEYS)}.",
                code="SESSION_SETTINGS_INVALID",
            )
        unknown = sorted(str(key) for key in meta if key not in SETTING_KEYS)
        if unknown:
            raise invalid_params(
                f"{where}: unknown key(s) {', '.join(unknown)}. Allowed keys: {', '.join(SETTING_KEYS)}.",
                code="SESSION_SETTINGS_INVALID",
            )
        settings = self
        if "chain_of_thought" in meta:
            settings = replace(
                settings,
                chain_of_thought=parse_mode(meta["chain_of_thought"], f"{where}.chain_of_thought"),
            )
        if "roles" in meta:
            roles = meta["roles"]
            if not isinstance(roles, list) or not all(
                isinstance(role, str) and role for role in roles
            ):
                raise invalid_params(
                    f"{where}.roles must be a list of role names.", code="SESSION_SETTINGS_INVALID"
                )
            settings = replace(settings, roles=tuple(roles))
        if "provider" in meta:
            settings = replace(settings, provider=_name(meta["provider"], f"{where}.provider"))
        if "model" in meta:
            settings = replace(settings, model=parse_model(meta["model"], f"{where}.model"))
        if "effort" in meta:
            settings = replace(settings, effort=parse_effort(meta["effort"], f"{where}.effort"))
        for key in SETTING_KEYS:
            if key not in meta or key in _OWN_CHECKS:
                continue
            value = meta[key]
            option = BY_NAME[key]
            assert option.check is not None
            try:
                option.check(value, option.word("acp"))
            except ThoughtlineError as exc:
                # A value of the wrong shape is a bad session setting (the contract's
                # code for _meta.thoughtline); the message is every surface's sentence.
                code = "SESSION_SETTINGS_INVALID" if exc.code == "REQUEST_INVALID" else exc.code
                raise invalid_params(exc.message, code=code) from None
            if key == "tools":
                value = tuple(value)
            elif key in ("max_cost", "temperature"):
                value = float(value)
            settings = replace(settings, **{key: value})
        return settings


_OWN_CHECKS = frozenset({"chain_of_thought", "roles", "provider", "model", "effort"})
"""The keys with-meta checks with the ACP words they had; every other key is checked
as the run options' definition checks it."""
assert set(SETTING_KEYS) <= {item.name for item in fields(SessionSettings)}, (
    "every _meta.thoughtline key needs a SessionSettings field"
)


def _name(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise invalid_params(
            f"{where} must be a non-empty string.", code="SESSION_SETTINGS_INVALID"
        )
    return value


def parse_model(value: object, where: str) -> str:
    """A model id: a string (else ``SESSION_SETTINGS_INVALID``) that is a valid id (else
    ``MODEL_ID_INVALID``, the sentence every surface gives)."""
    if not isinstance(value, str):
        raise invalid_params(f"{where} must be a string.", code="SESSION_SETTINGS_INVALID")
    try:
        return check_model_id(value)
    except ThoughtlineError as exc:
        raise from_thoughtline(exc) from None


def parse_mode(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise invalid_params(
            f"{where}: chain_of_thought must be one of {', '.join(CHAIN_OF_THOUGHT_MODES)}.",
            code="CHAIN_OF_THOUGHT_UNKNOWN",
        )
    try:
        return check_mode(value, where)
    except ThoughtlineError as exc:
        raise from_thoughtline(exc) from None


def parse_effort(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise invalid_params(
            f"{where}: effort must be one of {', '.join(EFFORTS)}.", code="EFFORT_UNKNOWN"
        )
    try:
        return check_effort(value, where)
    except ThoughtlineError as exc:
        raise from_thoughtline(exc) from None


def validate_settings(runtime: Runtime, settings: SessionSettings) -> None:
    """Fail early (``ThoughtlineError``) on a role or provider the runtime does not know,
    or a model id that is not one, so a session cannot be created that every prompt
    would reject."""
    for role in settings.roles:
        runtime.roles.get(role)
    if settings.provider is not None:
        runtime.registry.resolve(settings.provider)
    if settings.model is not None:
        check_model_id(settings.model)


def mode_state(current_mode: str) -> SessionModeState:
    """The session modes offered to the client: the four ``chain_of_thought`` values."""
    return SessionModeState(
        current_mode_id=current_mode,
        available_modes=[
            SessionMode(id=mode, name=MODE_LABELS[mode][0], description=MODE_LABELS[mode][1])
            for mode in CHAIN_OF_THOUGHT_MODES
        ],
    )


def config_options(
    current_mode: str, current_effort: str
) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
    """The session config options: ``chain_of_thought`` (category ``mode``) and
    ``effort`` (category ``thought_level``)."""
    return [
        SessionConfigOptionSelect(
            type="select",
            id=MODE_OPTION,
            name="Chain of thought",
            description="What happens to the model's reasoning.",
            category="mode",
            current_value=current_mode,
            options=[
                SessionConfigSelectOption(
                    value=mode, name=MODE_LABELS[mode][0], description=MODE_LABELS[mode][1]
                )
                for mode in CHAIN_OF_THOUGHT_MODES
            ],
        ),
        SessionConfigOptionSelect(
            type="select",
            id=EFFORT_OPTION,
            name="Effort",
            description="How hard the model should think (separate from disclosure).",
            category="thought_level",
            current_value=current_effort,
            options=[SessionConfigSelectOption(value=effort, name=effort) for effort in EFFORTS],
        ),
    ]
