"""``Store.usage``: tokens summed in the database, by day, model, role, mode or
provider, each group split by model; the same figures from SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing

import pytest

from tests.store.backends import StoreBackend
from tests.store.builders import make_run, make_task
from thoughtline.records import Cost, Run, TaskUsage
from thoughtline.store.base import Store, UsageGroup, UsageKey


def _run(run_id: str, created_at: str, *tasks: tuple[str, str, str, str, TaskUsage | None]) -> Run:
    """A run whose tasks are (role, provider, model, mode, usage or None: not reported)."""
    run = make_run(run_id, created_at=created_at, status="completed")
    run.tasks = []
    for position, (role, provider, model, mode, usage) in enumerate(tasks):
        task = make_task(
            run_id, position, role=role, provider=provider, model=model, chain_of_thought=mode
        )
        task.usage = usage or TaskUsage()
        task.timings.started_at = created_at
        task.step_costs = [
            Cost(amount=usage.input_tokens / 1000)  # type: ignore[operator]
            if usage is not None
            else Cost.unknown("usage not reported")
        ]
        run.tasks.append(task)
    return run


def _usage(inp: int, out: int, reasoning: int = 0, cached: int = 0, written: int = 0) -> TaskUsage:
    return TaskUsage(
        input_tokens=inp,
        output_tokens=out,
        reasoning_tokens=reasoning,
        cached_input_tokens=cached,
        cache_write_tokens=written,
    )


RUNS = [
    _run(
        "run_a",
        "2026-11-30T10:00:00.000Z",
        ("architect", "anthropic", "claude-sonnet-4-6", "hidden", _usage(100, 50, 30, 40, 10)),
        ("reviewer", "openai", "gpt-5.5", "surface", _usage(200, 80, 60)),
    ),
    _run(
        "run_b",
        "2026-12-01T23:59:59.999Z",
        ("architect", "anthropic", "claude-sonnet-4-6", "hidden", _usage(10, 5, 1)),
        ("architect", "anthropic", "claude-sonnet-4-6", "hidden", None),
    ),
    _run(
        "run_c",
        "2026-12-02T00:00:00.000Z",
        ("reviewer", "openai", "gpt-5.5", "telemetry_only", _usage(1, 2, 1)),
    ),
]


@pytest.fixture
def store_with_runs(backend: StoreBackend) -> Iterator[Store]:
    with closing(backend.open()) as store:
        for run in RUNS:
            store.create_run(run)
        yield store


def _figures(groups: list[UsageGroup]) -> list[tuple[object, ...]]:
    return [
        (g.key, g.model, g.tasks, g.unreported, g.input_tokens, g.cached_input_tokens,
         g.cache_write_tokens, g.output_tokens, g.reasoning_tokens, round(g.cost, 6),
         g.unpriced)
        for g in groups
    ]  # fmt: skip


def test_usage_by_day_splits_each_day_by_model(store_with_runs: Store) -> None:
    assert _figures(store_with_runs.usage("day")) == [
        ("2026-11-30", "claude-sonnet-4-6", 1, 0, 100, 40, 10, 50, 30, 0.1, 0),
        ("2026-11-30", "gpt-5.5", 1, 0, 200, 0, 0, 80, 60, 0.2, 0),
        # A task without reported usage is counted as such, not as zero tokens; its
        # cost is unknown, counted apart from the known sum.
        ("2026-12-01", "claude-sonnet-4-6", 2, 1, 10, 0, 0, 5, 1, 0.01, 1),
        ("2026-12-02", "gpt-5.5", 1, 0, 1, 0, 0, 2, 1, 0.001, 0),
    ]


@pytest.mark.parametrize(
    ("by", "keys"),
    [
        ("model", ["anthropic/claude-sonnet-4-6", "openai/gpt-5.5"]),
        ("role", ["architect", "reviewer"]),
        ("mode", ["hidden", "surface", "telemetry_only"]),
        ("provider", ["anthropic", "openai"]),
    ],
)
def test_usage_by_each_key_sums_every_task_once(
    store_with_runs: Store, by: UsageKey, keys: list[str]
) -> None:
    groups = store_with_runs.usage(by)
    assert sorted({group.key for group in groups}) == keys
    assert sum(group.tasks for group in groups) == 5
    assert sum(group.input_tokens for group in groups) == 311
    assert sum(group.output_tokens for group in groups) == 137
    assert sum(group.reasoning_tokens for group in groups) == 92
    assert round(sum(group.cost for group in groups), 6) == 0.311
    assert sum(group.unpriced for group in groups) == 1


def test_usage_since_counts_tasks_started_then_or_later(store_with_runs: Store) -> None:
    since = store_with_runs.usage("role", since="2026-12-01T23:59:59.999Z")
    assert _figures(since) == [
        ("architect", "claude-sonnet-4-6", 2, 1, 10, 0, 0, 5, 1, 0.01, 1),
        ("reviewer", "gpt-5.5", 1, 0, 1, 0, 0, 2, 1, 0.001, 0),
    ]
    assert store_with_runs.usage("day", since="2027-01-01T00:00:00.000Z") == []


def test_a_task_that_never_started_spent_nothing_and_is_not_counted(backend: StoreBackend) -> None:
    with closing(backend.open()) as store:
        queued = make_run("run_queued", status="cancelled")
        store.create_run(queued)  # its task never started
        assert store.usage("role") == []
