"""The ``StreamError`` events the transport itself produces: transport failures, the total
timeout, an oversized body, and a :class:`ProviderError` turned into an event."""

from __future__ import annotations

import httpx2

from thoughtline.errors import ProviderError
from thoughtline.model.events import StreamError
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.proxies import proxy_for
from thoughtline.providers.redaction import shown_url
from thoughtline.providers.timeouts import Timeouts


def error_event(exc: ProviderError) -> StreamError:
    return StreamError(
        code=exc.code,
        message=exc.message,
        retryable=exc.retryable,
        status=exc.status,
        provider_error_type=exc.provider_error_type,
        retry_after_s=exc.retry_after_s,
    )


def transport_error(endpoint: Endpoint, timeouts: Timeouts, exc: Exception) -> StreamError:
    """A failure before any content arrived (retryable: the next attempt may work)."""
    detail = shown_url(str(exc) or type(exc).__name__)
    where = f"{endpoint.name} at {shown_url(endpoint.base_url)}"
    proxy = proxy_for(str(endpoint.base_url))
    if proxy is not None:  # the proxy may be what cannot be reached
        where += f" through the proxy {proxy.variable}={proxy.shown}"
    name = endpoint.name
    if isinstance(exc, httpx2.ConnectTimeout):
        message = (
            f"Could not connect to {where} within {timeouts.connect:g} s. Check that the "
            f"server is reachable, or raise [timeouts] connect (or "
            f"[providers.{name}.timeouts] connect)."
        )
    elif isinstance(exc, httpx2.ReadTimeout):
        message = (
            f"{where} sent nothing for {timeouts.read:g} s (the read timeout). Try again, "
            f"or raise [timeouts] read (or [providers.{name}.timeouts] read) if the model "
            "needs longer before it starts answering."
        )
    elif isinstance(exc, httpx2.PoolTimeout):
        message = (
            f"No connection to {where} became free within {timeouts.pool:g} s. "
            "Lower max_concurrency."
        )
    elif isinstance(exc, httpx2.TimeoutException):
        message = f"{where} did not answer in time ({detail}). Try again."
    else:
        message = (
            f"Cannot reach {where} ({detail}). "
            "Check that the server is running and the base URL is right"
            + (", and that the proxy is." if proxy is not None else ".")
        )
    code = (
        "PROVIDER_TIMEOUT" if isinstance(exc, httpx2.TimeoutException) else "PROVIDER_UNREACHABLE"
    )
    return StreamError(code=code, message=message, retryable=True)


def lost_detail(timeouts: Timeouts, exc: Exception) -> str:
    """Why a stream that had delivered content stopped, for the interruption error."""
    if isinstance(exc, httpx2.ReadTimeout):
        return (
            f"nothing arrived for {timeouts.read:g} s, the read timeout; raise "
            "[timeouts] read to wait longer"
        )
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return f"connection lost: {shown_url(detail)}"


def total_timeout_error(
    endpoint: Endpoint, seconds: float | None, *, delivered: bool
) -> StreamError:
    """The error for an attempt stopped by its total timeout of ``seconds``."""
    kept = " What arrived before that is kept." if delivered else ""
    if endpoint.timeouts.total is not None:
        key = f"[providers.{endpoint.name}.timeouts] total"
    else:
        key = (
            f"[timeouts] total (or [providers.{endpoint.name}.timeouts] total for "
            "this endpoint alone)"
        )
    return StreamError(
        code="PROVIDER_TIMEOUT",
        message=f"The call to {endpoint.name} exceeded the total timeout of "
        f"{seconds:g} s and was stopped.{kept} If the provider needs longer, raise "
        f"{key} in thoughtline.toml.",
        retryable=True,
    )


def body_too_large(limit: int) -> StreamError:
    return StreamError(
        code="PROVIDER_MALFORMED_RESPONSE",
        message=f"The provider's response body is larger than {limit // (1024 * 1024)} MiB; "
        "thoughtline stopped reading it. Use streaming, or check the base URL points at "
        "the provider's API.",
        retryable=False,
    )
