"""A long conversation's follow-up: loading its history and building the next request.

A conversation of N turns (runs that each continue the one before, one task, about 1 KB
of prompt and answer a turn, with a thinking block and its signature kept, as a
``surface`` Claude turn stores them) is written to a store. Then what the default path
does before the next turn calls its model is timed, end to end:

- ``load``: the chain of runs and their threads from the store
  (:func:`~thoughtline.runtime.planning.conversation.load_continuation`), the task's earlier turns
  decoded (:func:`~thoughtline.runtime.planning.conversation.earlier_turns`);
- ``build``: the history assembled by the provider's rules
  (:func:`~thoughtline.runtime.planning.conversation.assemble`) and the request body built by the
  Anthropic adapter, as bytes.

Each size is measured in both stores; the best of ``--rounds`` rounds is kept (the
machine is shared). The history grows linearly when ``ms / KB`` stays flat across sizes.
PostgreSQL is a throwaway local cluster (``initdb``/``pg_ctl``) unless ``--dsn`` names
one.

    .venv/bin/python bench/bench_conversation.py [--turns 50,100,200] [--rounds 15]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_store import _fresh_schema, postgres

from thoughtline.model import threads
from thoughtline.model.parts import ReasoningPart, TextPart
from thoughtline.model.requests import Message, ModelRequest, ReasoningRequest
from thoughtline.model.threads import TaskThread
from thoughtline.providers.anthropic import WIRE
from thoughtline.providers.base import CallContext
from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.records import Run, Task, new_id, now_iso
from thoughtline.runtime.planning.conversation import assemble, earlier_turns, load_continuation
from thoughtline.store.base import Store
from thoughtline.store.postgres import PostgresStore
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.wire.jsonio import dumps_bytes

MODEL = "claude-opus-5-5"
SYSTEM = "You are a senior software engineer."


def write_conversation(store: Store, turns: int) -> tuple[str, int]:
    """``turns`` runs in one conversation; the last run's id and the threads' bytes."""
    previous: Run | None = None
    size = 0
    for number in range(turns):
        request = f"Turn {number}: " + "ask " * 120  # ~0.5 KB
        answer = f"Answer {number}: " + "word " * 100  # ~0.5 KB
        run = Run(
            id=new_id("run"),
            request=request,
            chain_of_thought="surface",
            chain_of_thought_source="explicit",
            worker_backend="provider",
            status="completed",
            finished_at=now_iso(),
        )
        run.conversation_id = previous.conversation_id if previous else run.id
        run.continues = previous.id if previous else None
        task = Task(
            id=new_id("task"),
            run_id=run.id,
            position=0,
            name="t",
            role="engineer",
            provider="anthropic",
            model=MODEL,
            chain_of_thought="surface",
            chain_of_thought_source="explicit",
            status="done",
            output=answer,
        )
        run.tasks.append(task)
        store.create_run(run)
        sent = (
            Message(role="user", content=request),
            Message(
                role="assistant",
                parts=[
                    ReasoningPart(
                        kind="summary",
                        text="Thinking about it.",
                        provider_metadata={"signature": f"sig-{number:040d}"},
                        provider="anthropic",
                        model=MODEL,
                    ),
                    TextPart(text=answer),
                ],
            ),
        )
        task.thread = TaskThread(
            answer=threads.answer_layer(sent),
            carriers=sent,
            system_digest=threads.digest(SYSTEM),
            tools_digest=threads.tools_digest(()),
        )
        size += len(threads.encode(sent).encode())
        store.update_task(task)
        previous = run
    assert previous is not None
    return previous.id, size


def follow_up(store: Store, last: str) -> tuple[float, float]:
    """Milliseconds to load the history, and to build the next request's bytes."""
    registry = EndpointRegistry({}, environ={})
    endpoint = registry.resolve("anthropic")
    capability = builtin_capabilities().lookup("anthropic", MODEL)
    adapter = WIRE
    started = time.perf_counter()
    turns = earlier_turns(load_continuation(store, last), "t")
    loaded = time.perf_counter()
    built = assemble(
        turns,
        Message(role="user", content="And now?"),
        endpoint=endpoint,
        capability=capability,
        model=MODEL,
        system_digest=threads.digest(SYSTEM),
        tools_digest=threads.tools_digest(()),
        requests_reasoning=True,
        fixed_bytes=100,
        max_output_tokens=None,
    )
    request = ModelRequest(
        model=MODEL,
        system=SYSTEM,
        messages=built.messages,
        reasoning=ReasoningRequest(enabled=True),
    )
    wire = adapter.build_request(request, CallContext(endpoint=endpoint, capability=capability))
    body = dumps_bytes(wire.body)
    assert built.history["reasoning_turns"] == len(turns), built.history
    assert body
    ended = time.perf_counter()
    return (loaded - started) * 1000, (ended - loaded) * 1000


def best(store: Store, last: str, rounds: int) -> tuple[float, float]:
    results = [follow_up(store, last) for _ in range(rounds)]
    return min(r[0] + r[1] for r in results), min(r[0] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="50,100,200")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    sizes = [int(value) for value in args.turns.split(",")]
    with ExitStack() as stack:
        dsn = stack.enter_context(postgres(args.dsn))
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        stores: dict[str, Callable[[int], Store]] = {
            "SQLite": lambda n: SQLiteStore(scratch / f"c{n}.db"),
            "PostgreSQL": lambda n: PostgresStore(_fresh_schema(dsn, f"conv_{n}", "on")),
        }
        print(f"{'store':<12}{'turns':>6}{'KB':>8}{'total ms':>10}{'load ms':>9}{'ms/KB':>8}")
        for name, opening in stores.items():
            for turns in sizes:
                store = opening(turns)
                try:
                    last, size = write_conversation(store, turns)
                    total, load = best(store, last, args.rounds)
                finally:
                    store.close()
                kb = size / 1024
                print(f"{name:<12}{turns:>6}{kb:>8.0f}{total:>10.2f}{load:>9.2f}{total / kb:>8.4f}")


if __name__ == "__main__":
    main()
