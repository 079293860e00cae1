"""Pricing a call's reported usage: one model per wire API against figures computed by
hand from the pinned genai-prices data (0.2.3), config prices that win over the data,
``unknown`` with a reason where nothing can be known, and ``[prices]`` mistakes that
name the file and the key."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from tests.store.builders import make_task
from thoughtline.config import load_config
from thoughtline.config.pricing import ConfiguredPrice, Pricer, data_version, format_amount
from thoughtline.errors import ConfigError
from thoughtline.records import (
    Cost,
    CostParts,
    Run,
    RunningCost,
    TaskUsage,
    total_cost,
)

NOON = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
# 10,000 input tokens: 2,000 read from the cache, 1,000 written to it, 7,000 uncached.
# 2,000 output tokens, 640 of them reasoning.
USAGE = TaskUsage(
    input_tokens=10_000,
    output_tokens=2_000,
    reasoning_tokens=640,
    cached_input_tokens=2_000,
    cache_write_tokens=1_000,
)
LOCAL = {"ollama/qwen3:8b": ConfiguredPrice(input=Decimal("0.1"), output=Decimal("0.4"))}


def test_the_pinned_data_is_the_version_the_figures_were_computed_from() -> None:
    assert data_version() == "0.2.3"


@pytest.mark.parametrize(
    ("provider", "model", "parts", "amount"),
    [
        # anthropic-messages. claude-sonnet-4-5: $3 input, $15 output, $0.30 cache read,
        # $3.75 cache write per million tokens.
        #   7,000 x 3 = 21,000; 2,000 x 0.30 = 600; 1,000 x 3.75 = 3,750;
        #   2,000 x 15 = 30,000 (of it 640 x 15 = 9,600 reasoning)   [µ$ → ÷ 10⁶]
        (
            "anthropic",
            "claude-sonnet-4-5",
            CostParts(
                input=0.021, cached_input=0.0006, cache_write=0.00375, output=0.03, reasoning=0.0096
            ),
            0.021 + 0.0006 + 0.00375 + 0.03,  # 0.05535
        ),
        # openai-responses. o4-mini: $1.10 input, $4.40 output, $0.275 cache read, no
        # cache-write price (written tokens are input).
        #   7,000 x 1.1 = 7,700; 2,000 x 0.275 = 550; 1,000 x 1.1 = 1,100;
        #   2,000 x 4.4 = 8,800 (640 x 4.4 = 2,816 reasoning)
        (
            "openai",
            "o4-mini",
            CostParts(
                input=0.0077,
                cached_input=0.00055,
                cache_write=0.0011,
                output=0.0088,
                reasoning=0.002816,
            ),
            0.01815,
        ),
        # openai-chat through OpenRouter: anthropic/claude-sonnet-4.5 at OpenRouter's
        # prices, the same as Anthropic's own.
        (
            "openrouter",
            "anthropic/claude-sonnet-4.5",
            CostParts(
                input=0.021, cached_input=0.0006, cache_write=0.00375, output=0.03, reasoning=0.0096
            ),
            0.05535,
        ),
        # openai-chat at DeepSeek: deepseek-reasoner's daytime prices (00:30-16:30 UTC):
        # $0.55 input, $2.19 output, $0.14 cache read.
        #   7,000 x 0.55 = 3,850; 2,000 x 0.14 = 280; 1,000 x 0.55 = 550;
        #   2,000 x 2.19 = 4,380 (640 x 2.19 = 1,401.6 reasoning)
        (
            "deepseek",
            "deepseek-reasoner",
            CostParts(
                input=0.00385,
                cached_input=0.00028,
                cache_write=0.00055,
                output=0.00438,
                reasoning=0.0014016,
            ),
            0.00906,
        ),
        # gemini. gemini-2.5-flash: $0.30 input, $2.50 output, $0.03 cache read.
        #   7,000 x 0.3 = 2,100; 2,000 x 0.03 = 60; 1,000 x 0.3 = 300;
        #   2,000 x 2.5 = 5,000 (640 x 2.5 = 1,600 reasoning)
        (
            "gemini",
            "gemini-2.5-flash",
            CostParts(
                input=0.0021,
                cached_input=0.00006,
                cache_write=0.0003,
                output=0.005,
                reasoning=0.0016,
            ),
            0.00746,
        ),
        # ollama, priced by config: $0.10 input, $0.40 output (cache reads and writes at
        # the input price, reasoning at the output price).
        #   7,000 x 0.1 = 700; 2,000 x 0.1 = 200; 1,000 x 0.1 = 100;
        #   2,000 x 0.4 = 800 (640 x 0.4 = 256 reasoning)
        (
            "ollama",
            "qwen3:8b",
            CostParts(
                input=0.0007,
                cached_input=0.0002,
                cache_write=0.0001,
                output=0.0008,
                reasoning=0.000256,
            ),
            0.0018,
        ),
    ],
)
def test_known_usage_costs_what_the_pinned_prices_say(
    provider: str, model: str, parts: CostParts, amount: float
) -> None:
    cost = Pricer(LOCAL, config_path="/etc/tl.toml").price(provider, model, USAGE, at=NOON)
    assert cost.parts == parts
    assert cost.amount == pytest.approx(amount, abs=1e-12)
    # The parts add up to the amount; reasoning is inside output, not added again.
    assert cost.amount == pytest.approx(
        parts.input + parts.cached_input + parts.cache_write + parts.output, abs=1e-12
    )
    assert cost.unknown_reason is None
    if provider == "ollama":
        assert cost.source == 'config /etc/tl.toml [prices."ollama/qwen3:8b"]'
    else:
        assert cost.source == "genai-prices 0.2.3"


def test_prices_that_change_with_the_time_of_day_are_those_of_the_call() -> None:
    # deepseek-reasoner at night (16:30-00:30 UTC): $0.135 input, $0.55 output, $0.035
    # cache read. 7,000 x 0.135 + 2,000 x 0.035 + 1,000 x 0.135 + 2,000 x 0.55
    # = 945 + 70 + 135 + 1,100 = 2,250 µ$.
    night = datetime(2026, 6, 1, 20, 0, tzinfo=UTC)
    cost = Pricer().price("deepseek", "deepseek-reasoner", USAGE, at=night)
    assert cost.amount == pytest.approx(0.00225, abs=1e-12)


def test_one_pricer_follows_the_time_of_day_from_call_to_call() -> None:
    # The prices read from the data are kept per model between calls: a call at night
    # after one by day, and one by day again, each pays the prices of its own time.
    pricer = Pricer()
    night = datetime(2026, 6, 1, 20, 0, tzinfo=UTC)
    amounts = [
        pricer.price("deepseek", "deepseek-reasoner", USAGE, at=at).amount
        for at in (NOON, night, NOON, night)
    ]
    assert amounts == pytest.approx([0.00906, 0.00225, 0.00906, 0.00225], abs=1e-12)


def test_a_long_context_call_is_charged_the_tier_above_its_threshold() -> None:
    # claude-sonnet-4-5 above 200,000 input tokens: $6 input, $22.50 output.
    # 250,000 x 6 + 1,000 x 22.5 = 1,500,000 + 22,500 µ$ = $1.5225.
    usage = TaskUsage(input_tokens=250_000, output_tokens=1_000)
    cost = Pricer().price("anthropic", "claude-sonnet-4-5", usage, at=NOON)
    assert cost.amount == pytest.approx(1.5225, abs=1e-12)


def test_a_configured_reasoning_price_charges_reasoning_apart_inside_output() -> None:
    # (2,000 - 640) x 0.4 + 640 x 1.0 = 544 + 640 = 1,184 µ$ of output.
    prices = {
        "ollama/qwen3:8b": ConfiguredPrice(
            input=Decimal(0), output=Decimal("0.4"), reasoning=Decimal(1)
        )
    }
    cost = Pricer(prices).price("ollama", "qwen3:8b", USAGE)
    assert cost.parts is not None
    assert cost.parts.output == pytest.approx(0.001184, abs=1e-12)
    assert cost.parts.reasoning == pytest.approx(0.00064, abs=1e-12)
    assert cost.amount == pytest.approx(0.001184, abs=1e-12)


def test_config_wins_over_the_data_and_a_star_covers_an_endpoint() -> None:
    prices = {
        "anthropic/claude-sonnet-4-5": ConfiguredPrice(input=Decimal(1), output=Decimal(2)),
        "vllm/*": ConfiguredPrice(input=Decimal(0), output=Decimal(0)),
    }
    pricer = Pricer(prices, config_path="/x/thoughtline.toml")
    usage = TaskUsage(input_tokens=1_000_000, output_tokens=1_000_000)
    own = pricer.price("anthropic", "claude-sonnet-4-5", usage)
    assert own.amount == 3.0
    assert own.source == 'config /x/thoughtline.toml [prices."anthropic/claude-sonnet-4-5"]'
    local = pricer.price("vllm", "any/model", usage)
    assert local.amount == 0.0
    assert local.source == 'config /x/thoughtline.toml [prices."vllm/*"]'
    assert pricer.price("anthropic", "claude-opus-4-5", usage).source == "genai-prices 0.2.3"


@pytest.mark.parametrize(
    ("provider", "model", "usage", "reason"),
    [
        (
            "anthropic",
            "claude-nonexistent-9",
            USAGE,
            "genai-prices 0.2.3 has no price for 'claude-nonexistent-9' at anthropic; "
            'set [prices."anthropic/claude-nonexistent-9"] in config',
        ),
        (
            "ollama",
            "qwen3:8b",
            USAGE,
            "ollama is a local server with no configured price; set "
            '[prices."ollama/qwen3:8b"] input = 0 and output = 0 in config if its calls '
            "cost nothing",
        ),
        (
            "my-proxy",
            "gpt-5",
            USAGE,
            "endpoint 'my-proxy' has no price data; set [prices.\"my-proxy/gpt-5\"] "
            "input = 0 and output = 0 (or its real prices) in config, or "
            '[providers.my-proxy] prices = one of "anthropic", "openai", "openrouter", '
            '"gemini", "deepseek" to price its models as that provider\'s',
        ),
        (
            "anthropic",
            "claude-sonnet-4-5",
            TaskUsage(input_tokens=None, output_tokens=None),
            "the provider did not report token usage for this call",
        ),
        (
            "openai",
            "o4-mini",
            TaskUsage(input_tokens=12, output_tokens=None),
            "the provider did not report token usage for this call",
        ),
    ],
)
def test_what_cannot_be_known_costs_unknown_with_a_reason(
    provider: str, model: str, usage: TaskUsage, reason: str
) -> None:
    cost = Pricer().price(provider, model, usage, at=NOON)
    assert cost.amount is None and cost.parts is None
    assert cost.unknown_reason == reason
    assert cost.to_dict()["amount"] is None


def test_a_task_and_a_run_add_up_their_calls_and_an_unknown_call_makes_them_unknown() -> None:
    one = Cost(amount=0.25, source="genai-prices 0.2.3", parts=CostParts(input=0.1, output=0.15))
    two = Cost(amount=0.5, source='config a [prices."b/c"]', parts=CostParts(output=0.5))
    summed = total_cost([one, two])
    assert summed.amount == 0.75
    assert summed.parts == CostParts(input=0.1, output=0.65)
    assert summed.source == 'genai-prices 0.2.3; config a [prices."b/c"]'
    task = make_task(
        "r", 0, provider="ollama", model="m", step_costs=[one, Cost.unknown("no usage")]
    )
    assert task.cost.amount is None
    assert task.cost.unknown_reason == "step 2: no usage"
    run = Run(
        id="r",
        request="x",
        chain_of_thought="hidden",
        chain_of_thought_source="default",
        worker_backend="provider",
        tasks=[task],
    )
    snapshot = run.snapshot()
    assert snapshot["cost"]["amount"] is None
    assert snapshot["cost"]["unknown_reason"] == "task engineer: step 2: no usage"
    assert snapshot["tasks"][0]["cost"]["currency"] == "USD"


def test_a_task_of_300_steps_sums_each_cost_once_and_as_summing_them_all_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tool loop reads its task's cost (and writes its row) at every step: the sum goes
    on from the last one, so 300 steps add 300 costs, not 45,000, to the same floats."""
    costs = [
        Cost(
            amount=0.1 * (step % 7) + 1e-7 * step,
            source=f'config a [prices."b/c{step % 3}"]',
            parts=CostParts(input=0.03 * step, output=0.1 * (step % 7), reasoning=1e-9 * step),
        )
        for step in range(300)
    ]
    expected = [total_cost(costs[: step + 1]) for step in range(len(costs))]
    added = 0
    add = RunningCost.add

    def counted(self: RunningCost, cost: Cost) -> None:
        nonlocal added
        added += 1
        add(self, cost)

    monkeypatch.setattr(RunningCost, "add", counted)
    task = make_task("r", 0)
    for step, cost in enumerate(costs):
        task.step_costs.append(cost)
        assert task.cost == expected[step], step
        assert task.step_cost_dicts() == [c.to_dict() for c in costs[: step + 1]]
    assert added == 300  # each cost once (45,150 if summed again at every step)
    # An unknown cost makes the rest unknown, naming its step.
    task.step_costs.append(Cost.unknown("no usage"))
    assert task.cost.amount is None and task.cost.unknown_reason == "step 301: no usage"


def test_a_task_whose_costs_are_replaced_or_changed_sums_them_again() -> None:
    one = Cost(amount=0.25, source="s", parts=CostParts(input=0.25))
    two = Cost(amount=0.5, source="s", parts=CostParts(output=0.5))
    task = make_task("r", 0, step_costs=[one, two])
    assert task.cost.amount == 0.75
    task.step_costs = [two, two]  # a new list (a task read from the store)
    assert task.cost.amount == 1.0
    task.step_costs[-1] = one  # the last one changed in place
    assert task.cost.amount == 0.75
    del task.step_costs[-1]  # cut
    task.step_costs.append(Cost.unknown("gone"))
    assert task.cost.unknown_reason == "step 2: gone"
    assert task.step_cost_dicts()[-1]["unknown_reason"] == "gone"


@pytest.mark.parametrize(
    ("amount", "shown"),
    [(0.0064, "$0.0064"), (0.000064, "$0.000064"), (0.05535, "$0.055"), (12.5, "$12.50")],
)
def test_amounts_read_as_dollars(amount: float, shown: str) -> None:
    assert format_amount(amount) == shown


@pytest.mark.parametrize(
    ("toml", "key", "problem"),
    [
        ("prices = 3\n", "prices", "wrong type"),
        ('[prices."claude"]\ninput = 1\noutput = 1\n', 'prices."claude"', "provider and a model"),
        ('[prices."ollama/x"]\ninput = -1\noutput = 0\n', 'prices."ollama/x".input', "0 or more"),
        ('[prices."ollama/x"]\ninput = 0\noutput = "free"\n', 'prices."ollama/x".output', "number"),
        ('[prices."ollama/x"]\ninput = 0\n', 'prices."ollama/x".output', "missing"),
        (
            '[prices."ollama/x"]\ninput = 0\noutput = 0\ninptu = 1\n',
            'prices."ollama/x".inptu',
            "unknown key",
        ),
        (
            '[prices."ollama/x"]\ninput = 0\noutput = 0\ncurrency = "EUR"\n',
            'prices."ollama/x".currency',
            "USD",
        ),
        ('[prices."ollama/x"]\ninput = true\noutput = 0\n', 'prices."ollama/x".input', "number"),
        ('[prices."ollama/x"]\ninput = nan\noutput = 0\n', 'prices."ollama/x".input', "number"),
    ],
)
def test_a_bad_prices_entry_names_the_file_and_the_key(
    tmp_path: Path, toml: str, key: str, problem: str
) -> None:
    path = tmp_path / "thoughtline.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as raised:
        load_config(path, environ={})
    message = str(raised.value)
    assert message.startswith(f"{path}: {key}: "), message
    assert problem in message


def test_a_good_prices_entry_is_read_with_its_source(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.toml"
    path.write_text('[prices."ollama/*"]\ninput = 0\noutput = 0.5\ncurrency = "USD"\n')
    config = load_config(path, environ={})
    assert config.prices == {"ollama/*": ConfiguredPrice(input=Decimal(0), output=Decimal("0.5"))}
    assert config.sources['prices."ollama/*".output'] == str(path)


def test_the_starter_configs_price_example_loads_once_uncommented(tmp_path: Path) -> None:
    from thoughtline.cli.init_command import STARTER

    example = '# [prices."ollama/*"]\n# input = 0\n# output = 0\n'
    assert example in STARTER
    path = tmp_path / "thoughtline.toml"
    path.write_text(STARTER.replace(example, example.replace("# ", "")))
    config = load_config(path, environ={})
    assert config.prices == {"ollama/*": ConfiguredPrice(input=Decimal(0), output=Decimal(0))}
    usage = TaskUsage(input_tokens=10, output_tokens=5)
    assert Pricer(config.prices).price("ollama", "qwen3:8b", usage).amount == 0.0
