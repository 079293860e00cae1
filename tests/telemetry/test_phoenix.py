"""A real Phoenix (``arize-phoenix`` from the package index, in a virtualenv of its own,
served on 127.0.0.1) receives thoughtline's spans over OTLP and shows the run's cost:
Phoenix prices each OpenInference LLM span itself, from its model and token counts, and
its project's cost summary must equal the cost thoughtline computed. Read back through
Phoenix's own APIs. A hidden run's reasoning reaches none of its spans.

Slow: the first test installs Phoenix (minutes; its dependency tree is kept apart from
the development extras, with which it is not meant to share a virtualenv).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import venv
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.store.postgres_cluster import free_port
from tests.support import start_process
from thoughtline.testing import SimReasoning, Simulator, Transcript

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # it installs Phoenix

PHOENIX = "arize-phoenix==20.26.1"
CANARY = "PHOENIX-REASONING-CANARY-71c3"
COSTLY = Transcript(
    answer="A priced answer.",
    reasoning=(SimReasoning(kind="summary", text=f"Thinking {CANARY}.", signature="s"),),
    input_tokens=10_000,
    output_tokens=2_000,
    reasoning_tokens=640,
)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Phoenix's base URL: installed into a virtualenv of its own, then served."""
    root = tmp_path_factory.mktemp("phoenix")
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    installed = subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", PHOENIX],
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(root / "work"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
    }
    log = (root / "serve.log").open("wb")
    server = start_process(
        [str(env_dir / "bin" / "phoenix"), "serve"], stdout=log, stderr=log, env=env
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, (root / "serve.log").read_text(errors="replace")[-3000:]
            try:
                if httpx2.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert time.monotonic() < deadline, "Phoenix did not start within 180 s"
            time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _run(tmp_path: Path, environ: dict[str, str], phoenix: str, mode: str) -> dict[str, object]:
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.update(environ)
    env["THOUGHTLINE_HOME"] = str(tmp_path / "home")
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = phoenix
    done = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "run", "Price this.", "-p", "openai",
         "-m", "o4-mini", "-e", "low", "--chain-of-thought", mode, "--json"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    snapshot: dict[str, object] = json.loads(done.stdout)
    return snapshot


def _spans(phoenix: str, run_id: str) -> list[dict[str, object]]:
    """The spans of ``run_id`` Phoenix stored, waiting for the export to land."""
    deadline = time.monotonic() + 60
    while True:
        found = httpx2.get(
            f"{phoenix}/v1/projects/default/spans", params={"limit": 1000}, timeout=10
        ).json()["data"]
        mine = [
            span
            for span in found
            if dict(span.get("attributes") or {}).get("thoughtline.run.id") == run_id
        ]
        if len(mine) >= 2:  # the run's span and its call's
            return mine
        assert time.monotonic() < deadline, f"Phoenix holds no spans of {run_id}"
        time.sleep(0.5)


def _project_cost(phoenix: str) -> float | None:
    query = "{ projects { edges { node { name costSummary { total { cost } } } } } }"
    answer = httpx2.post(f"{phoenix}/graphql", json={"query": query}, timeout=10).json()
    for edge in answer["data"]["projects"]["edges"]:
        if edge["node"]["name"] == "default":
            cost = edge["node"]["costSummary"]["total"]["cost"]
            return None if cost is None else float(cost)
    return None


def test_phoenix_shows_the_cost_thoughtline_computed_and_no_hidden_reasoning(
    tmp_path: Path, sim: Simulator, environ: dict[str, str], phoenix: str
) -> None:
    sim.default_transcript = COSTLY
    before = _project_cost(phoenix) or 0.0
    snapshot = _run(tmp_path, environ, phoenix, "hidden")
    cost = snapshot["cost"]
    assert isinstance(cost, dict)
    # o4-mini in genai-prices: 10,000 x $1.10 + 2,000 x $4.40 per million = $0.0198.
    assert cost["amount"] == pytest.approx(0.0198, abs=1e-12)
    run_id = str(snapshot["id"])
    spans = _spans(phoenix, run_id)
    (chat,) = [span for span in spans if span["name"] == "chat o4-mini"]
    assert chat["span_kind"] == "LLM"  # Phoenix keeps openinference.span.kind here
    attributes = dict(chat["attributes"])  # type: ignore[call-overload]
    assert attributes["llm.cost.total"] == pytest.approx(0.0198, abs=1e-12)
    # Phoenix priced the span itself: its project's cost grew by the run's cost.
    deadline = time.monotonic() + 60
    while (after := _project_cost(phoenix) or 0.0) - before < 0.0198 - 1e-9:
        assert time.monotonic() < deadline, f"Phoenix's cost stayed at {after}"
        time.sleep(0.5)
    assert after - before == pytest.approx(0.0198, abs=1e-9)
    # Hidden: the reasoning was never requested, and no span carries it.
    assert CANARY not in json.dumps(spans)
