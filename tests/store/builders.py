"""Records for store tests, importable by child processes (spawned by multiprocessing)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from thoughtline.records import Run, Task, TraceEvent, TraceLayer, new_id


def ago(seconds: float) -> str:
    """An ``at`` value ``seconds`` in the past, in the runtime's timestamp format."""
    moment = datetime.now(UTC) - timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


DAY = 86_400


def make_task(run_id: str, position: int, **fields: Any) -> Task:
    values: dict[str, Any] = {
        "id": f"{run_id}_task{position}",
        "run_id": run_id,
        "position": position,
        "role": "engineer",
        "provider": "anthropic",
        "model": "claude-sonnet-4-6",
        "chain_of_thought": "surface",
        "chain_of_thought_source": "explicit",
    }
    values.update(fields)
    return Task(**values)


def make_run(run_id: str | None = None, *, tasks: int = 1, **fields: Any) -> Run:
    run_id = run_id or new_id("run")
    values: dict[str, Any] = {
        "id": run_id,
        "request": "review the patch",
        "chain_of_thought": "surface",
        "chain_of_thought_source": "explicit",
        "worker_backend": "provider",
        "status": "running",
    }
    values.update(fields)
    run = Run(**values)
    run.tasks = [make_task(run_id, position) for position in range(tasks)]
    return run


def make_event(
    run_id: str,
    *,
    event_id: str | None = None,
    layer: TraceLayer = "answer",
    type_: str = "task.started",
    at: str | None = None,
    task_id: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> TraceEvent:
    return TraceEvent(
        id=event_id or new_id("evt"),
        run_id=run_id,
        task_id=task_id,
        type=type_,
        layer=layer,
        at=at or ago(0),
        metadata=metadata if metadata is not None else {},
    )
