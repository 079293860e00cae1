"""Fixtures of the run API's tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

OWN_VARIABLES = ("THOUGHTLINE_HOME", "THOUGHTLINE_CONFIG", "THOUGHTLINE_STORE_URL")


@pytest.fixture
def user_env(tmp_path: Path, environ: dict[str, str]) -> dict[str, str]:
    """What a user's shell would hold: keys, base URLs (the simulator), a fresh home."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in OWN_VARIABLES and not name.startswith("OTEL_")
    }
    env.update(environ)
    env["THOUGHTLINE_HOME"] = str(tmp_path / "home")
    return env
