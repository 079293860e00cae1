"""OpenTelemetry export of runs and model calls (GenAI semantic conventions).

Importing this package needs nothing beyond thoughtline: the settings decide whether
export is on, and OpenTelemetry itself (the ``[otel]`` extra) is imported only when it is.

>>> from thoughtline.telemetry import open_telemetry
>>> runtime.telemetry = open_telemetry(config, redactor=runtime.redactor)  # doctest: +SKIP

See :mod:`thoughtline.telemetry.settings` for what turns export and content capture on,
and :mod:`thoughtline.telemetry.attributes` for the attributes each span carries.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from thoughtline.config import Config
from thoughtline.errors import ThoughtlineError
from thoughtline.providers.redaction import Redactor
from thoughtline.telemetry.settings import TelemetrySettings, resolve_settings

if TYPE_CHECKING:
    from thoughtline.telemetry.otel import OtelTelemetry

__all__ = ["OtelTelemetry", "TelemetrySettings", "open_telemetry", "resolve_settings"]

logger = logging.getLogger(__name__)


def open_telemetry(
    config: Config,
    *,
    redactor: Redactor | None = None,
    environ: Mapping[str, str] | None = None,
) -> OtelTelemetry | None:
    """An OTLP/HTTP exporter when the config or ``OTEL_*`` variables turn export on,
    else ``None``. Call ``shutdown()`` on it before the process exits (it flushes).

    Raises ``TELEMETRY_UNAVAILABLE`` when ``[telemetry] exporter = "otlp"`` is configured
    but the ``[otel]`` extra is missing; when only an ``OTEL_*`` variable asked for export
    (it may be meant for another program), that case logs a warning instead.
    """
    env = os.environ if environ is None else environ
    settings = resolve_settings(config, env)
    if not settings.enabled:
        return None
    try:
        from thoughtline.telemetry.otel import OtelTelemetry
    except ThoughtlineError:
        if config.telemetry_exporter == "otlp":
            raise
        logger.warning(
            "OpenTelemetry export requested (%s) but the otel extra is not installed: "
            "pip install 'thoughtline[otel]'. Continuing without telemetry.",
            settings.reason,
        )
        return None
    return OtelTelemetry.otlp(settings, redactor=redactor)


def __getattr__(name: str) -> object:
    # ``from thoughtline.telemetry import OtelTelemetry`` imports OpenTelemetry lazily.
    if name == "OtelTelemetry":
        from thoughtline.telemetry.otel import OtelTelemetry

        return OtelTelemetry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
