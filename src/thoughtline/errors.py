"""One exception tree; every error has a stable code, an actionable message and ``retryable``.

::

    ThoughtlineError              code, message, retryable
    ├── ConfigError               bad config file, key or value (names file and key)
    ├── OptionError               about a run option (each surface names it in its words)
    ├── UnknownEndpointError      no endpoint with that name
    └── ProviderError             anything a provider call can end with
        (status, provider_error_type, request_id, retry_after_s)

The codes are part of the public contract (docs/contracts.md); tests, the daemon and the MCP
and ACP servers report them unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, Literal, TypeAlias

ErrorCode: TypeAlias = Literal[
    "CONFIG_INVALID",
    "CONFIG_EXISTS",
    "CONFIG_WRITE_FAILED",
    "ENDPOINT_UNKNOWN",
    "PROVIDER_KEY_MISSING",
    "PROVIDER_AUTH_ERROR",
    "PROVIDER_PERMISSION_DENIED",
    "PROVIDER_PAYMENT_REQUIRED",
    "PROVIDER_NOT_FOUND",
    "PROVIDER_RATE_LIMITED",
    "PROVIDER_OVERLOADED",
    "PROVIDER_SERVER_ERROR",
    "PROVIDER_TIMEOUT",
    "PROVIDER_UNREACHABLE",
    "PROVIDER_BAD_REQUEST",
    "PROVIDER_REQUEST_TOO_LARGE",
    "PROVIDER_CONTENT_FILTERED",
    "PROVIDER_EMPTY_CONTENT",
    "PROVIDER_REASONING_ONLY",
    "PROVIDER_MALFORMED_RESPONSE",
    "PROVIDER_STREAM_INTERRUPTED",
    "PROVIDER_INCOMPLETE",
    "PROVIDER_ERROR",
    "STORE_UNAVAILABLE",
    "RUN_INTERRUPTED",
    "RUN_NOT_FOUND",
    "RUN_ID_AMBIGUOUS",
    "STORE_COPY_REFUSED",
    "TRACE_LAYER_UNKNOWN",
    "SHUTTING_DOWN",
    "ROLE_UNKNOWN",
    "ROLE_INVALID",
    "RUN_TOO_MANY_TASKS",
    "MODEL_MISSING",
    "MODEL_ID_INVALID",
    "CHAIN_OF_THOUGHT_UNKNOWN",
    "WORKER_BACKEND_UNKNOWN",
    "TASK_DEPENDENCY_FAILED",
    "TASK_NO_ANSWER",
    "EFFORT_UNKNOWN",
    "EXTRA_MISSING",
    "TELEMETRY_UNAVAILABLE",
    "INTERNAL_ERROR",
    # tool servers (MCP)
    "TOOL_SERVER_UNAVAILABLE",
    "TOOL_NOT_FOUND",
    "TOOL_TIMEOUT",
    "TOOL_NOT_ALLOWED",
    "TOOL_SERVER_UNKNOWN",
    "TOOL_CANCELLED",
    "TOOL_ARGUMENTS_INVALID",
    "TOOL_CALL_FAILED",
    "TOOL_NAME_TAKEN",
    "TOOL_SERVER_GONE",
    "MAX_STEPS_REACHED",
    # budgets
    "BUDGET_EXCEEDED",
    # conversations
    "CONVERSATION_RUN_ACTIVE",
    "CONVERSATION_HISTORY_GONE",
    "CONTEXT_WINDOW_EXCEEDED",
    "CONVERSATION_NOT_FOUND",
    "CHAT_NEEDS_TERMINAL",
    # daemon (HTTP API)
    "REQUEST_INVALID",
    "JSON_INVALID",
    "REQUEST_TOO_LARGE",
    "UNAUTHORIZED",
    "OPERATOR_TOKEN_REQUIRED",
    "NOT_FOUND",
    "METHOD_NOT_ALLOWED",
    "RUN_FINISHED",
    "RUN_IN_OTHER_PROCESS",
    "RUN_NOT_CANCELLABLE",
    "DAEMON_SHUTTING_DOWN",
    "SERVER_AT_CAPACITY",
    "SERVE_BIND_FAILED",
    "SERVE_ALLOWED_HOST_INVALID",
    "SERVE_TOKEN_FILE_INVALID",
    "HOST_NOT_ALLOWED",
    "HOST_MISSING",
    "CROSS_SITE_REQUEST",
    "UNSUPPORTED_MEDIA_TYPE",
    "REQUEST_TIMEOUT",
    "SERVE_FILE_LIMIT_LOW",
    "SERVE_TOKEN_WEAK",
    # the gateway's client dialects (Chat Completions, Messages, Responses)
    "GATEWAY_REQUEST_UNSUPPORTED",
    # ACP agent (the ``code`` in a JSON-RPC error's data)
    "SESSION_UNKNOWN",
    "SESSION_BUSY",
    "SESSION_SETTINGS_INVALID",
    "SESSION_MCP_SERVER_INVALID",
    "CONFIG_OPTION_UNKNOWN",
    "PROMPT_EMPTY",
    "PROMPT_CONTENT_UNSUPPORTED",
    # the provider simulator (``thoughtline simulate``)
    "SIMULATOR_SCRIPT_INVALID",
    # The gateway (server-side OpenAI- and Anthropic-compatible endpoints)
    "GATEWAY_DISABLED",
    "GATEWAY_CLIENT_EXISTS",
    "GATEWAY_CLIENT_UNKNOWN",
    "GATEWAY_MODEL_UNKNOWN",
    "GATEWAY_MODEL_NOT_ALLOWED",
    "GATEWAY_BUDGET_EXCEEDED",
    "GATEWAY_CLIENT_BUSY",
    "GATEWAY_CARRIERS_GONE",
    "GATEWAY_KEY_INVALID",
    "GATEWAY_CLIENT_STALLED",
]

RETRYABLE_CODES: Final[frozenset[str]] = frozenset(
    {
        "PROVIDER_RATE_LIMITED",
        "PROVIDER_OVERLOADED",
        "PROVIDER_SERVER_ERROR",
        "PROVIDER_TIMEOUT",
        "PROVIDER_UNREACHABLE",
    }
)


class ThoughtlineError(Exception):
    """Base of every error thoughtline raises on purpose."""

    code: ErrorCode
    message: str
    retryable: bool

    def __init__(self, code: ErrorCode, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable

    def __str__(self) -> str:
        return self.message


class OptionError(ThoughtlineError):
    """An error about a run option, raised where the caller's spelling of it is not
    known (planning). Its message names the option by its field name; each surface
    re-raises it with its own word (``--model`` on the command line, ``model`` over
    HTTP) and its own ``hints`` (by surface; ``""``: every other surface's):
    :func:`thoughtline.runtime.planning.options.spoken_as`."""

    def __init__(
        self,
        code: ErrorCode,
        template: str,
        *,
        option: str,
        hints: Mapping[str, str] | None = None,
    ) -> None:
        self.template = template
        self.option = option
        self.hints = dict(hints or {})
        super().__init__(code, self._render(option, ""))

    def spoken(self, word: str, surface: str) -> ThoughtlineError:
        """The same error, the option named ``word``, with ``surface``'s hint."""
        return ThoughtlineError(code=self.code, message=self._render(word, surface))

    def _render(self, word: str, surface: str) -> str:
        hint = self.hints.get(surface, self.hints.get("", ""))
        return self.template.replace("{option}", word).replace("{hint}", hint)


class ConfigError(ThoughtlineError):
    """A config file, key or value is wrong. The message names the file and the key."""

    def __init__(self, message: str) -> None:
        super().__init__("CONFIG_INVALID", message)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the known name closest to ``name`` (a likely typo, as
    ``difflib`` judges it), or nothing."""
    import difflib  # only on this error path

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return f" Did you mean {close[0]!r}?" if close else ""


class UnknownEndpointError(ThoughtlineError):
    """No endpoint has this name; the message lists the known ones."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(
            "ENDPOINT_UNKNOWN",
            f"Unknown provider {name!r}.{did_you_mean(name, known)} Known providers: "
            f"{', '.join(sorted(known))}. Define others under [providers.NAME] in "
            "thoughtline.toml.",
        )
        self.name = name


class ProviderError(ThoughtlineError):
    """A provider call failed. ``retryable`` says whether the same call may succeed later."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        retryable: bool | None = None,
        status: int | None = None,
        provider_error_type: str | None = None,
        request_id: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(
            code, message, retryable=code in RETRYABLE_CODES if retryable is None else retryable
        )
        self.status = status
        self.provider_error_type = provider_error_type
        self.request_id = request_id
        self.retry_after_s = retry_after_s


def code_for_status(status: int) -> ErrorCode:
    """The stable code for an HTTP error status, before looking at the body."""
    if status == 400 or status == 422:
        return "PROVIDER_BAD_REQUEST"
    if status == 401:
        return "PROVIDER_AUTH_ERROR"
    if status == 402:
        return "PROVIDER_PAYMENT_REQUIRED"
    if status == 403:
        return "PROVIDER_PERMISSION_DENIED"
    if status == 404:
        return "PROVIDER_NOT_FOUND"
    if status == 408 or status == 504:
        return "PROVIDER_TIMEOUT"
    if status == 409:
        # Conflicts are transient on every provider that documents them.
        return "PROVIDER_SERVER_ERROR"
    if status == 413:
        return "PROVIDER_REQUEST_TOO_LARGE"
    if status == 429:
        return "PROVIDER_RATE_LIMITED"
    if status == 529 or status == 503:
        return "PROVIDER_OVERLOADED"
    if status >= 500:
        return "PROVIDER_SERVER_ERROR"
    return "PROVIDER_ERROR"


RETRYABLE_STATUSES: Final[frozenset[int]] = frozenset({408, 409, 429, 529})


def status_is_retryable(status: int) -> bool:
    return status in RETRYABLE_STATUSES or status >= 500


_ADVICE: Final[dict[str, str]] = {
    "PROVIDER_AUTH_ERROR": "Check the API key for this provider.",
    "PROVIDER_PERMISSION_DENIED": "The key is not allowed to do this; check its permissions.",
    "PROVIDER_PAYMENT_REQUIRED": "Add credits or check billing for this account.",
    "PROVIDER_NOT_FOUND": "Check the model name and the base URL.",
    "PROVIDER_RATE_LIMITED": "Wait and try again, or lower max_concurrency.",
    "PROVIDER_OVERLOADED": "The provider is overloaded; try again shortly.",
    "PROVIDER_SERVER_ERROR": "The provider failed; try again shortly.",
    "PROVIDER_TIMEOUT": "The provider did not answer in time; try again or raise the timeout.",
    "PROVIDER_BAD_REQUEST": "The provider rejected the request as sent.",
    "PROVIDER_REQUEST_TOO_LARGE": "Shorten the request.",
}


def advice_for(code: str) -> str:
    """A short next step for a person reading the error, or ``""``."""
    return _ADVICE.get(code, "")
