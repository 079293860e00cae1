"""A hostile server cannot make a call use unbounded memory.

The simulator on 127.0.0.1 streams 300 MB of one line that never ends; a child process
makes the call and reports its own peak resident set size. A decoder that buffered the
line would need more than 300 MB; the frame cap keeps the child far below 200 MB. This
measures memory, not time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from thoughtline.testing import Fault, Simulator

from .conftest import CANARY_KEY, ENDPOINT_MODELS

pytestmark = pytest.mark.slow  # children reading 300 MB endless lines

HOSTILE_BYTES = 300 * 1024 * 1024
PEAK_LIMIT_MB = 200

CHILD = """
import asyncio, json, os
from thoughtline import EndpointRegistry, ModelRequest, ProviderClient, RetryPolicy

def peak_mb() -> float:
    # VmHWM belongs to this process image alone; ru_maxrss would also count the parent's
    # peak, which Linux carries into a child across fork and exec.
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")

async def main() -> None:
    endpoint = EndpointRegistry(environ=os.environ).resolve(os.environ["TL_ENDPOINT"])
    client = ProviderClient(
        endpoint,
        retry=RetryPolicy(max_retries=0),
        max_body_bytes=int(os.environ["TL_MAX_BODY_BYTES"]),
    )
    stream = os.environ["TL_STREAM"] == "1"
    request = ModelRequest.simple(os.environ["TL_MODEL"], "Why?", stream=stream)
    async with client:
        call = await client.complete(request)
    error = call.response.error
    print(json.dumps({
        "code": None if error is None else error.code,
        "message": "" if error is None else error.message,
        "captured": len(call.exchange.response_body or b""),
        "peak_mb": peak_mb(),
    }))

asyncio.run(main())
"""


def run_child(environ: dict[str, str], tmp_path: Path, **settings: str) -> dict[str, object]:
    env = {**os.environ, **environ, "THOUGHTLINE_HOME": str(tmp_path)}
    env.update({f"TL_{key.upper()}": value for key, value in settings.items()})
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("endpoint", ["anthropic", "ollama"])
def test_an_endless_streamed_line_is_refused_with_bounded_memory(
    sim: Simulator, environ: dict[str, str], tmp_path: Path, endpoint: str
) -> None:
    sim.inject(Fault.endless_line(HOSTILE_BYTES))
    result = run_child(
        environ,
        tmp_path,
        endpoint=endpoint,
        model=ENDPOINT_MODELS[endpoint],
        stream="1",
        max_body_bytes=str(64 * 1024 * 1024),
    )
    assert result["code"] == "PROVIDER_MALFORMED_RESPONSE"
    assert "exceeds the limit of 16 MiB" in str(result["message"])
    assert isinstance(result["peak_mb"], float) and result["peak_mb"] < PEAK_LIMIT_MB, result
    # Reading stopped at the cap: the rest of the 300 MB was never taken in.
    assert isinstance(result["captured"], int) and result["captured"] < 32 * 1024 * 1024
    assert CANARY_KEY not in str(result["message"])


def test_an_endless_body_is_refused_with_bounded_memory(
    sim: Simulator, environ: dict[str, str], tmp_path: Path
) -> None:
    sim.inject(Fault.endless_line(HOSTILE_BYTES))
    result = run_child(
        environ,
        tmp_path,
        endpoint="openai",
        model=ENDPOINT_MODELS["openai"],
        stream="0",
        max_body_bytes=str(16 * 1024 * 1024),
    )
    assert result["code"] == "PROVIDER_MALFORMED_RESPONSE"
    assert "larger than 16 MiB" in str(result["message"])
    assert isinstance(result["peak_mb"], float) and result["peak_mb"] < PEAK_LIMIT_MB, result
