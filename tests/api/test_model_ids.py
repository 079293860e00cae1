"""Model ids through the library API: one that could move a request off its wire's path
is refused with ``MODEL_ID_INVALID`` before anything is stored or sent (a model argument,
a ``TaskSpec``, a follow-up, the synchronous ``run``); real ids of every kind reach the
wire as given."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import thoughtline
from tests.support import HOSTILE_MODEL_IDS
from thoughtline import Orchestrator, ThoughtlineError
from thoughtline.model.requests import model_id_problem
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.testing import Simulator


@pytest.fixture
async def orchestrator(user_env: dict[str, str]) -> AsyncIterator[Orchestrator]:
    async with Orchestrator.open(thoughtline.Config(path=None), environ=user_env) as opened:
        yield opened


async def test_a_model_id_that_is_not_one_is_refused_before_anything_is_stored_or_sent(
    sim: Simulator, orchestrator: Orchestrator
) -> None:
    earlier = await orchestrator.start("Design a cache", provider="gemini", model="gemini-2.5-pro")
    assert earlier.status == "completed"
    sent = list(sim.requests)
    for model in (*HOSTILE_MODEL_IDS, ""):
        for request, options in (
            ("x", {"provider": "gemini", "model": model}),
            ("x", {"roles": ["architect", "reviewer"], "model": model}),
            ("x", {"continues": earlier.id, "model": model}),
            (
                RunSpec(
                    request="x",
                    tasks=(
                        TaskSpec(name="a", role="architect", provider="gemini"),
                        TaskSpec(name="b", role="reviewer", provider="gemini", model=model),
                    ),
                ),
                {},
            ),
        ):
            with pytest.raises(ThoughtlineError) as raised:
                orchestrator.start(request, **options)
            assert (raised.value.code, raised.value.message) == (
                "MODEL_ID_INVALID",
                model_id_problem(model),
            )
    assert [run.id for run in orchestrator.runs()] == [earlier.id]
    assert sim.requests == sent
    assert sim.unrouted == []


def test_the_synchronous_run_refuses_it_too(sim: Simulator, user_env: dict[str, str]) -> None:
    with pytest.raises(ThoughtlineError) as raised:
        thoughtline.run("x", provider="gemini", model="../../../evil", environ=user_env)
    assert raised.value.code == "MODEL_ID_INVALID"
    assert raised.value.message.startswith("Model id '../../../evil' is not valid (")
    assert sim.requests == [] and sim.unrouted == []


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("gemini", "models/gemini-2.5-pro"),
        ("openrouter", "deepseek/deepseek-r1:free"),
        ("vllm", "meta-llama/Llama-3.3-70B-Instruct"),
        ("ollama", "hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M"),
        ("openai", "gpt-5.1"),
        ("anthropic", "claude-3-5-sonnet@20240620"),
    ],
)
async def test_real_model_ids_of_every_kind_reach_the_wire_as_given(
    sim: Simulator, orchestrator: Orchestrator, provider: str, model: str
) -> None:
    run = await orchestrator.start("Design a cache", provider=provider, model=model)
    assert run.status == "completed", run.tasks[0].error
    assert run.tasks[0].model == model
    (request,) = sim.requests
    assert request.profile == provider
    if provider == "gemini":
        assert request.path == "/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent"
        assert request.model == "gemini-2.5-pro"
    else:
        assert request.body is not None and request.body["model"] == model
    assert sim.unrouted == []
