"""A model's max output through the Python API, against the simulator on 127.0.0.1 (which
refuses an output field above it with each provider's own 400): what a wire sends never
asks for more than the model writes, and a budget prices a call at that max, not at the
model's context window."""

from __future__ import annotations

import thoughtline
from thoughtline.testing import Simulator


def test_a_thinking_budget_that_would_pass_the_models_max_output_is_fitted_within_it(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    # claude-opus-4-1 writes 32,000 tokens at most; the 8,192-token answer allowance plus
    # the 32,768-token thinking budget of effort "max" asked for 40,960, which Anthropic
    # refuses ("max_tokens: 40960 > 32000, ...").
    run = thoughtline.run(
        "Explain.",
        environ=user_env,
        provider="anthropic",
        model="claude-opus-4-1",
        chain_of_thought="surface",
        effort="max",
    )
    assert run.status == "completed", run.tasks[0].error
    (request,) = sim.requests
    assert request.body is not None
    assert request.body["max_tokens"] == 32_000
    assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 16_000}


def test_a_budget_prices_a_call_at_the_models_max_output_not_its_context_window(
    sim: Simulator, user_env: dict[str, str]
) -> None:
    # o4-mini reads 200,000 tokens and writes 100,000 at most ($4.40 per million): its
    # worst case is $0.44, so $0.60 sends the call as asked. Priced at its context window
    # ($0.88) it was capped at some 136,000 tokens, a max_output_tokens OpenAI refuses.
    run = thoughtline.run(
        "Explain.", environ=user_env, provider="openai", model="o4-mini", max_cost=0.6
    )
    assert run.status == "completed", run.tasks[0].error
    assert run.tasks[0].budget_notice is None
    (request,) = sim.requests
    assert request.body is not None and "max_output_tokens" not in request.body
