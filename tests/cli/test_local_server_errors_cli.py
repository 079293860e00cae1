"""llama.cpp's server answering that the model's output did not parse in its chat format
(HTTP 500 "The model produced output that does not match the expected peg-native format",
seen from the real server on a prefilled half tool call), as a user meets it through
``thoughtline run``: one clear sentence naming the server, no retries, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_run_cli import home, thoughtline
from thoughtline.testing import Fault, Simulator

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

__all__ = ["home"]

SAID = "The model produced output that does not match the expected peg-native format"
ADVICE = (
    "llama.cpp's server could not read what the model wrote in its chat template's format "
    "(a tool call or reasoning its syntax does not accept); retrying the same request does "
    "not help: run without tools, or serve a model whose chat template supports tool calls."
)


@pytest.mark.parametrize(
    ("fault", "prefix"),
    [
        (Fault.http_error(500, SAID), f"llamacpp returned HTTP 500: {SAID}."),
        (
            Fault.stream_error("server_error", SAID),
            f"llamacpp reported an error during the response (server_error): {SAID}.",
        ),
    ],
    ids=["http-500", "in-stream"],
)
def test_llama_cpp_output_that_does_not_parse_is_one_clear_error_without_retries(
    home: Path, sim: Simulator, environ: dict[str, str], fault: Fault, prefix: str
) -> None:
    sim.inject(fault, profile="llamacpp", times=5)
    failed = thoughtline(home, environ, "run", "hi", "-p", "llamacpp", "-m", "local", "--json")
    assert failed.returncode == 1, failed.stderr
    [task] = json.loads(failed.stdout)["tasks"]
    assert task["error"]["code"] == "PROVIDER_MALFORMED_RESPONSE"
    assert task["error"]["message"] == f"{prefix} {ADVICE}"
    assert task["error"]["retryable"] is False
    assert len(sim.requests_for("llamacpp")) == 1  # the same request would fail again
    assert "Traceback" not in failed.stderr
    assert f"PROVIDER_MALFORMED_RESPONSE: {prefix} {ADVICE}" in failed.stderr
