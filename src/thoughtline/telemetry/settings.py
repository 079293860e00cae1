"""Whether to export telemetry, where to, and whether message content may be attached.

Resolved from ``[telemetry]`` in ``thoughtline.toml`` and the standard ``OTEL_*``
variables, without importing OpenTelemetry (so a process without the ``[otel]`` extra can
tell whether it would need it):

- Export is on when ``[telemetry] exporter = "otlp"`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
  ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set. ``OTEL_SDK_DISABLED=true`` (or
  ``OTEL_TRACES_EXPORTER=none``) turns it off whatever else says.
- ``[telemetry] endpoint`` is the collector's OTLP/HTTP base URL, like
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` (``/v1/traces`` is appended unless present); it wins
  over the variables. Without it the exporter follows the variables, then the OTLP
  default ``http://localhost:4318/v1/traces``. Headers, timeouts, compression and TLS come
  from the standard variables.
- Content capture is off unless ``[telemetry] capture_content = true`` or
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` opts in (``true``, or the newer
  GenAI values ``SPAN_ONLY`` / ``SPAN_AND_EVENT``; ``false``, ``NO_CONTENT`` and
  ``EVENT_ONLY`` keep it off on spans). Any other value warns and stays off. Even when on,
  content is attached only to tasks whose mode records reasoning.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from thoughtline.config import Config

logger = logging.getLogger(__name__)

CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
TRACES_PATH = "/v1/traces"

# Values of the capture variable, case-insensitive. ``true``/``false`` is the original
# convention; the enum is the one GenAI instrumentations use with
# OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental. thoughtline records content
# on span attributes only (no events), so the event-only values keep spans clean.
_CAPTURE_ON = frozenset({"true", "span_only", "span_and_event"})
_CAPTURE_OFF = frozenset({"", "false", "no_content", "event_only"})
_SUPPORTED_PROTOCOLS = frozenset({"", "http/protobuf"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TelemetrySettings:
    """The resolved telemetry settings. ``traces_endpoint`` is the full OTLP/HTTP URL from
    the config, or ``None`` to let the exporter read the ``OTEL_*`` variables."""

    enabled: bool
    reason: str
    traces_endpoint: str | None = None
    capture_content: bool = False


def resolve_settings(config: Config, environ: Mapping[str, str] | None = None) -> TelemetrySettings:
    """Decide from the config and the environment (see the module docstring)."""
    env = os.environ if environ is None else environ
    capture = config.telemetry_capture_content or capture_from_env(env.get(CAPTURE_VARIABLE))
    if _truthy(env.get("OTEL_SDK_DISABLED")):
        return TelemetrySettings(enabled=False, reason="OTEL_SDK_DISABLED=true")
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return TelemetrySettings(enabled=False, reason="OTEL_TRACES_EXPORTER=none")
    if config.telemetry_exporter == "otlp":
        reason = "telemetry.exporter = otlp"
    else:
        variable = next((name for name in ENDPOINT_VARIABLES if env.get(name, "").strip()), None)
        if variable is None:
            return TelemetrySettings(enabled=False, reason="not configured")
        reason = f"{variable} is set"
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = env.get(name, "").strip().lower()
        if protocol not in _SUPPORTED_PROTOCOLS:
            logger.warning(
                "%s=%s is not supported: thoughtline exports traces over OTLP/HTTP "
                "(http/protobuf); point the endpoint at the collector's HTTP port (4318).",
                name,
                protocol,
            )
            break
    return TelemetrySettings(
        enabled=True,
        reason=reason,
        traces_endpoint=traces_url(config.telemetry_endpoint)
        if config.telemetry_endpoint
        else None,
        capture_content=capture,
    )


def capture_from_env(value: str | None) -> bool:
    """Whether the content-capture variable opts in; a bad value warns and means off."""
    if value is None:
        return False
    normalized = value.strip().lower()
    if normalized in _CAPTURE_ON:
        return True
    if normalized not in _CAPTURE_OFF:
        logger.warning(
            "%s=%r is not a recognised value (true, false, SPAN_ONLY, SPAN_AND_EVENT, "
            "EVENT_ONLY, NO_CONTENT); message content stays off.",
            CAPTURE_VARIABLE,
            value,
        )
    return False


def traces_url(endpoint: str) -> str:
    """A base OTLP/HTTP endpoint as the traces URL (``/v1/traces`` appended once)."""
    base = endpoint.rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"
