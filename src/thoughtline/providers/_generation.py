"""The warning every adapter gives when it leaves a caller's temperature out."""

from __future__ import annotations

from thoughtline.model.events import StreamWarning
from thoughtline.model.requests import ModelRequest


def temperature_not_sent(request: ModelRequest, label: str, why: str) -> StreamWarning:
    """``TEMPERATURE_UNSUPPORTED``: the model would refuse (or fix) ``request.temperature``,
    so it was not sent and the model's own sampling applies."""
    return StreamWarning(
        code="TEMPERATURE_UNSUPPORTED",
        message=f"temperature={request.temperature:g} was not sent to {request.model} "
        f"({label}): {why}. The model's own sampling applies.",
    )
