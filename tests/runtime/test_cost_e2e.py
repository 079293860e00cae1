"""What runs cost, end to end: real runs against the provider simulator on 127.0.0.1
price the usage each wire reported (figures computed by hand from genai-prices 0.2.3),
the reasoning notice says what reasoning cost, telemetry carries it, and the store keeps
it (a task stored before calls were priced reads as unknown)."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from tests.runtime.test_disclosure_e2e import CANARY, make_runtime
from tests.runtime.test_tool_loop import FINAL, calling, one_task, tooled_runtime
from tests.telemetry.support import by_name, traced_runtime
from thoughtline.config.pricing import ConfiguredPrice
from thoughtline.records import NOT_PRICED
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.testing import SimReasoning, Simulator, SimulatorServer, Transcript

# 10,000 input tokens, 2,000 output tokens of which 640 reasoning, on every wire.
COSTLY = Transcript(
    reasoning=(SimReasoning(kind="summary", text=f"Weighing it; {CANARY}.", signature="s"),),
    answer="The answer.",
    input_tokens=10_000,
    output_tokens=2_000,
    reasoning_tokens=640,
)
LOCAL_PRICE = {"ollama/*": ConfiguredPrice(input=Decimal("0.1"), output=Decimal("0.4"))}

# name -> (endpoint, model, amount, reasoning part when the wire counts reasoning apart),
# from prices per million tokens:
EXPECTED = {
    # anthropic-messages, claude-sonnet-4-5 at $3 / $15:
    #   10,000 x 3 + 2,000 x 15 = 60,000 µ$; reasoning 640 x 15 = 9,600 µ$.
    "anthropic": ("anthropic", "claude-sonnet-4-5", 0.06, 0.0096),
    # openai-responses, o4-mini at $1.10 / $4.40:
    #   10,000 x 1.1 + 2,000 x 4.4 = 19,800 µ$; reasoning 640 x 4.4 = 2,816 µ$.
    "openai": ("openai", "o4-mini", 0.0198, 0.002816),
    # openai-chat at OpenRouter, anthropic/claude-sonnet-4.5 at $3 / $15: as Anthropic.
    "openrouter": ("openrouter", "anthropic/claude-sonnet-4.5", 0.06, 0.0096),
    # gemini, gemini-2.5-flash at $0.30 / $2.50:
    #   10,000 x 0.3 + 2,000 x 2.5 = 8,000 µ$; reasoning 640 x 2.5 = 1,600 µ$.
    "gemini": ("gemini", "gemini-2.5-flash", 0.008, 0.0016),
    # ollama, priced by config at $0.10 / $0.40:
    #   10,000 x 0.1 + 2,000 x 0.4 = 1,800 µ$ (Ollama counts no reasoning apart).
    "ollama": ("ollama", "qwen3:8b", 0.0018, 0.0),
}
# Anthropic counts thinking tokens only when thinking was asked for; Ollama never does.
UNCOUNTED_REASONING = {"hidden": {"anthropic", "ollama"}, "surface": {"ollama"}}
# Hidden mode switches Ollama's thinking off (think: false): the model writes only its
# 1,360 answer tokens, 10,000 x 0.1 + 1,360 x 0.4 = 1,544 µ$.
HIDDEN_OUTPUT = {"ollama": (1_360, 0.001544)}


def spec(names: list[str]) -> RunSpec:
    return RunSpec(
        request="Explain.",
        tasks=tuple(
            TaskSpec(
                name=name, role="engineer", provider=EXPECTED[name][0], model=EXPECTED[name][1]
            )
            for name in names
        ),
    )


@pytest.mark.parametrize("mode", ["hidden", "surface"])
async def test_every_wire_prices_the_usage_it_reported(
    tmp_path: Path,
    sim: Simulator,
    sim_server: SimulatorServer,
    environ: dict[str, str],
    mode: str,
) -> None:
    sim.script(COSTLY)
    runtime, store = make_runtime(tmp_path / "home", sim_server, environ, prices=LOCAL_PRICE)
    run = await runtime.run(spec(list(EXPECTED)), explicit_mode=mode)
    assert run.status == "completed", [(t.name, t.error) for t in run.tasks]
    amounts = {name: amount for name, (_, _, amount, _) in EXPECTED.items()}
    for task in run.tasks:
        _endpoint, _model, amount, reasoning = EXPECTED[task.name]
        output = 2_000
        if mode == "hidden" and task.name in HIDDEN_OUTPUT:
            output, amount = HIDDEN_OUTPUT[task.name]
            amounts[task.name] = amount
        assert (task.usage.input_tokens, task.usage.output_tokens) == (10_000, output), task.name
        if task.name in UNCOUNTED_REASONING[mode]:
            assert task.usage.reasoning_tokens is None
            reasoning = 0.0  # inside output all the same, at the output price
        else:
            assert task.usage.reasoning_tokens == 640, task.name
        cost = task.to_dict()["cost"]
        assert cost["amount"] == pytest.approx(amount, abs=1e-12), task.name
        assert cost["parts"] is not None
        assert cost["parts"]["reasoning"] == pytest.approx(reasoning, abs=1e-12), task.name
        assert cost["unknown_reason"] is None
    snapshot = run.snapshot()
    assert snapshot["cost"]["amount"] == pytest.approx(sum(amounts.values()), abs=1e-12)
    assert snapshot["cost"]["source"] == 'genai-prices 0.2.3; config [prices."ollama/*"]'
    # The store gives back what was priced, without pricing again.
    stored = store.get_run(run.id)
    assert stored is not None
    assert stored.snapshot()["cost"] == snapshot["cost"]
    assert [task.to_dict()["cost"] for task in stored.tasks] == [
        task["cost"] for task in snapshot["tasks"]
    ]
    await runtime.aclose()
    store.close()


async def test_hidden_withholds_the_text_not_the_bill(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(COSTLY)
    runtime, store = make_runtime(tmp_path / "home", sim_server, environ)
    run = await runtime.run(spec(["openai"]), explicit_mode="hidden")
    (task,) = run.tasks
    # 640 x $4.40 per million = $0.002816.
    assert task.reasoning_notice == (
        "Reasoning was not requested (chain_of_thought is hidden). "
        "The model reasoned for 640 tokens ($0.0028)."
    )
    assert CANARY not in str(run.snapshot())
    await runtime.aclose()
    store.close()


async def test_a_model_without_a_price_costs_unknown_and_says_why(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(COSTLY)
    runtime, store = make_runtime(tmp_path / "home", sim_server, environ)
    run = await runtime.run(spec(["anthropic", "ollama"]), explicit_mode="hidden")
    snapshot = run.snapshot()
    anthropic, ollama = snapshot["tasks"]
    assert anthropic["cost"]["amount"] == pytest.approx(0.06, abs=1e-12)
    reason = (
        "ollama is a local server with no configured price; set "
        '[prices."ollama/qwen3:8b"] input = 0 and output = 0 in config if its calls cost nothing'
    )
    assert ollama["cost"] == {
        "amount": None,
        "currency": "USD",
        "source": None,
        "parts": None,
        "unknown_reason": reason,
    }
    assert snapshot["cost"]["amount"] is None
    assert snapshot["cost"]["unknown_reason"] == f"task ollama: {reason}"
    # The notice gives no figure it does not know.
    assert ollama["reasoning_notice"] is not None and "$" not in ollama["reasoning_notice"]
    await runtime.aclose()
    store.close()


async def test_a_task_stored_before_calls_were_priced_reads_as_unknown(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(COSTLY)
    home = tmp_path / "home"
    runtime, store = make_runtime(home, sim_server, environ)
    run = await runtime.run(spec(["anthropic"]), explicit_mode="hidden")
    await runtime.aclose()
    store.close()
    with sqlite3.connect(home / "thoughtline.db") as conn:
        assert conn.execute("SELECT cost_amount FROM tasks").fetchone() == (
            pytest.approx(0.06, abs=1e-12),
        )
        conn.execute("UPDATE tasks SET cost_amount = NULL, cost_json = NULL")
    runtime, store = make_runtime(home, sim_server, environ)
    stored = store.get_run(run.id)
    assert stored is not None
    cost = stored.snapshot()["tasks"][0]["cost"]
    assert cost["amount"] is None and cost["unknown_reason"] == NOT_PRICED
    store.close()


async def test_each_chat_span_carries_its_calls_cost_as_phoenix_and_langfuse_read_it(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(COSTLY)
    runtime, store, exporter, _ = traced_runtime(
        tmp_path / "home", sim_server, environ, capture=False
    )
    run = await runtime.run(spec(["openai"]), explicit_mode="hidden")
    store.close()
    spans = exporter.get_finished_spans()
    (chat,) = by_name(spans, "chat o4-mini")
    attributes = dict(chat.attributes or {})
    # o4-mini: 10,000 x $1.10 = $0.011 of prompt; 2,000 x $4.40 = $0.0088 of completion,
    # 640 x $4.40 = $0.002816 of it reasoning.
    assert attributes["llm.cost.total"] == pytest.approx(0.0198, abs=1e-12)
    assert attributes["llm.cost.prompt"] == pytest.approx(0.011, abs=1e-12)
    assert attributes["llm.cost.completion"] == pytest.approx(0.0088, abs=1e-12)
    assert attributes["llm.cost.completion_details.reasoning"] == pytest.approx(0.002816, abs=1e-12)
    assert attributes["llm.cost.prompt_details.cache_read"] == 0.0
    assert attributes["llm.cost.prompt_details.cache_write"] == 0.0
    assert attributes["gen_ai.usage.cost"] == pytest.approx(0.0198, abs=1e-12)
    assert attributes["thoughtline.cost.source"] == "genai-prices 0.2.3"
    # What Phoenix prices a span from: an OpenInference LLM span, its model and counts.
    assert attributes["openinference.span.kind"] == "LLM"
    assert (attributes["llm.model_name"], attributes["llm.provider"]) == ("o4-mini", "openai")
    assert attributes["llm.token_count.prompt"] == 10_000
    assert attributes["llm.token_count.completion"] == 2_000
    assert attributes["llm.token_count.total"] == 12_000
    assert attributes["llm.token_count.completion_details.reasoning"] == 640
    (root,) = by_name(spans, "thoughtline run")
    assert "openinference.span.kind" not in dict(root.attributes or {})
    assert (
        dict(root.attributes or {})["thoughtline.cost.amount"] == run.snapshot()["cost"]["amount"]
    )
    # Only the call's span carries the figures a backend sums.
    assert "llm.cost.total" not in dict(root.attributes or {})


async def test_an_unknown_cost_sends_no_figure_to_telemetry(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    sim.script(COSTLY)
    runtime, store, exporter, _ = traced_runtime(
        tmp_path / "home", sim_server, environ, capture=False
    )
    await runtime.run(spec(["ollama"]), explicit_mode="hidden")
    store.close()
    (chat,) = by_name(exporter.get_finished_spans(), "chat qwen3:8b")
    attributes = dict(chat.attributes or {})
    assert not [name for name in attributes if name.startswith("llm.cost")]
    assert "gen_ai.usage.cost" not in attributes
    assert str(attributes["thoughtline.cost.unknown_reason"]).startswith(
        "ollama is a local server with no configured price"
    )


async def test_a_tool_loop_prices_each_step_and_the_task_adds_them_up(
    tmp_path: Path, sim: Simulator, sim_server: SimulatorServer, environ: dict[str, str]
) -> None:
    step_one = replace(
        calling("repeat", {"text": "ab", "times": 2}),
        input_tokens=1_000,
        output_tokens=500,
        reasoning_tokens=100,
    )
    step_two = replace(FINAL, input_tokens=2_000, output_tokens=300, reasoning_tokens=30)
    sim.script(step_two)
    sim.script(step_one, times=1)
    home = tmp_path / "home"
    runtime, store = tooled_runtime(home, sim_server, environ)
    run = await runtime.run(one_task(provider="openai", model="o4-mini"), explicit_mode="hidden")
    await runtime.aclose()
    (task,) = run.snapshot()["tasks"]
    assert task["status"] == "done" and task["steps"] == 2
    # o4-mini at $1.10 / $4.40 per million tokens:
    #   step 1: 1,000 x 1.1 + 500 x 4.4 = 3,300 µ$ (reasoning 100 x 4.4 = 440 µ$)
    #   step 2: 2,000 x 1.1 + 300 x 4.4 = 3,520 µ$ (reasoning 30 x 4.4 = 132 µ$)
    one, two = task["step_costs"]
    assert one["amount"] == pytest.approx(0.0033, abs=1e-12)
    assert one["parts"] is not None
    assert one["parts"]["reasoning"] == pytest.approx(0.00044, abs=1e-12)
    assert two["amount"] == pytest.approx(0.00352, abs=1e-12)
    assert task["cost"]["amount"] == pytest.approx(0.00682, abs=1e-12)
    assert task["cost"]["parts"] is not None
    assert task["cost"]["parts"]["reasoning"] == pytest.approx(0.000572, abs=1e-12)
    stored = store.get_run(run.id)
    store.close()
    assert stored is not None
    assert stored.snapshot()["tasks"][0]["step_costs"] == [one, two]
