"""Token counts a provider reports that no real call can have (negative, or larger than
any store or JSON reader holds exactly) read as not reported, instead of failing the
write of the task (served by a real loopback server)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.runtime.test_model_fallback import serving
from thoughtline.config import Config
from thoughtline.providers.client import RetryPolicy
from thoughtline.providers.endpoints import EndpointSettings
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.store.sqlite import SQLiteStore


def chunk(payload: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


STREAM = (
    chunk({"choices": [{"index": 0, "delta": {"content": "Fine."}}]})
    + chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    + chunk(
        {
            "choices": [],
            "usage": {"prompt_tokens": 10**30, "completion_tokens": -5, "total_tokens": 7},
        }
    )
    + b"data: [DONE]\n\n"
)


async def test_impossible_counts_read_as_not_reported(tmp_path: Path) -> None:
    async with serving(STREAM) as base_url:
        runtime = Runtime(
            config=Config(
                path=None,
                providers={"local": EndpointSettings(wire_api="openai-chat", base_url=base_url)},
            ),
            store=SQLiteStore(tmp_path / "thoughtline.db"),
            environ={},
            retry=RetryPolicy(max_retries=0),
        )
        spec = RunSpec(
            request="x",
            tasks=(TaskSpec(name="t", role="engineer", provider="local", model="m"),),
        )
        run = await runtime.run(spec, explicit_mode="hidden")
        stored = runtime.store.get_run(run.id)
        runtime.store.close()
    assert run.status == "completed", run.tasks[0].error
    assert stored is not None and stored.tasks[0].output == "Fine."
    usage = stored.tasks[0].usage
    assert (usage.input_tokens, usage.output_tokens) == (None, None)
