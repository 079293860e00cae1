"""JSON columns keep text exactly: non-ASCII as UTF-8 (not ``\\u`` escapes, which double
or triple its bytes), and a lone surrogate from provider text still storable."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

from tests.store.backends import StoreBackend
from tests.store.builders import make_run
from thoughtline.records import RunEventRecord, TaskError
from thoughtline.store._rows import dump
from thoughtline.store._storable import storable_text

TEXTS = ["thé ", "请审查 🧪", "[/INST]<script>", "half a pair \udcff"]


def test_dump_keeps_utf8_and_escapes_only_what_utf8_cannot_hold() -> None:
    assert dump({"text": "thé 🧪"}) == '{"text":"thé 🧪"}'
    assert dump({"text": "x\udcffy"}) == '{"text":"x\\udcffy"}'
    for value in [{"texts": TEXTS}, [1, None, True], {"n": 2**70}]:
        assert json.loads(dump(value)) == value


def test_event_log_text_round_trips_in_every_store(backend: StoreBackend) -> None:
    run = make_run("run_text")
    batch = RunEventRecord(
        run_id=run.id, seq=4, type="answer.delta", task_id=run.tasks[0].id, at=run.created_at,
        data={"texts": TEXTS},
    )  # fmt: skip
    plain = RunEventRecord(
        run_id=run.id, seq=5, type="answer.delta", task_id=run.tasks[0].id, at=run.created_at,
        data={"text": "thé"},
    )  # fmt: skip
    with closing(backend.open()) as store:
        store.create_run(run)
        store.append_run_events([batch, plain])
        read = store.run_events(run.id)
    assert [record.data for record in read] == [{"texts": TEXTS}, {"text": "thé"}]
    if backend.kind == "sqlite":
        with closing(sqlite3.connect(backend.location)) as conn:
            (stored,) = conn.execute("SELECT data_json FROM run_events WHERE seq = 5").fetchone()
        assert stored == '{"text":"thé"}'


def test_text_neither_database_takes_is_stored_escaped_with_the_rest_of_its_write(
    backend: StoreBackend,
) -> None:
    """A task error quoting a path that was not UTF-8 (the byte 0xff, handed over by
    Python as a lone surrogate) and another lone surrogate: written escaped, and the
    other rows of the same transaction are kept, not lost with it."""
    run = make_run("run_surrogate")
    task = run.tasks[0]
    with closing(backend.open()) as store:
        store.create_run(run)
        task.status, task.output = "failed", "kept as it was: thé 🧪"
        task.error = TaskError(
            code="CONFIG_INVALID", message="cannot read /tmp/bundle-\udcff.pem (\ud800)",
            retryable=False,
        )  # fmt: skip
        run.status = "failed"
        delta = RunEventRecord(
            run_id=run.id, seq=1, type="answer.delta", task_id=task.id, at=run.created_at,
            data={"text": "half a pair \udcff"},
        )  # fmt: skip
        store.write(events=[delta], run=run, tasks=[task])
        stored = store.get_run(run.id)
        events = store.run_events(run.id)
    assert stored is not None
    assert stored.status == "failed"
    error = stored.tasks[0].error
    assert error is not None
    assert error.message == "cannot read /tmp/bundle-\\xff.pem (\\ud800)"
    assert stored.tasks[0].output == "kept as it was: thé 🧪"
    assert [record.data for record in events] == [{"text": "half a pair \udcff"}]


def test_storable_text_escapes_only_what_utf8_cannot_hold() -> None:
    assert storable_text("thé 🧪 <b>") == "thé 🧪 <b>"
    assert storable_text("a\udcffb") == "a\\xffb"
    assert storable_text("a\ud800b\udcffc") == "a\\ud800b\\xffc"


def test_lone_surrogates_in_a_write_of_many_rows_are_stored_escaped(
    backend: StoreBackend,
) -> None:
    """Several runs' updates and events in one transaction (PostgreSQL sends each kind
    of row as one JSON array): text a database cannot take is written escaped there
    too, and no row of the transaction is lost."""
    runs = [make_run(f"run_many_{index}") for index in range(3)]
    with closing(backend.open()) as store:
        writes = [store.prepare(create=run) for run in runs]
        store.write_prepared(writes)
        writes = []
        for index, run in enumerate(runs):
            task = run.tasks[0]
            task.status, task.output = "failed", f"answer {index} \udcfe"
            task.error = TaskError(
                code="CONFIG_INVALID", message=f"cannot read /tmp/{index}-\udcff.pem",
                retryable=False,
            )  # fmt: skip
            run.status = "failed"
            deltas = [
                RunEventRecord(
                    run_id=run.id,
                    seq=seq,
                    type="answer.delta",
                    task_id=task.id,
                    at=run.created_at,
                    data={"text": f"half a pair \udcff {seq}"},
                )
                for seq in (1, 2)
            ]
            writes.append(store.prepare(events=deltas, run=run, tasks=[task]))
        store.write_prepared(writes)
        stored = [store.get_run(run.id) for run in runs]
        events = [store.run_events(run.id) for run in runs]
    for index, run in enumerate(stored):
        assert run is not None
        assert run.status == "failed"
        error = run.tasks[0].error
        assert error is not None
        assert error.message == f"cannot read /tmp/{index}-\\xff.pem"
        assert run.tasks[0].output == f"answer {index} \\xfe"
        assert [record.data for record in events[index]] == [
            {"text": f"half a pair \udcff {seq}"} for seq in (1, 2)
        ]
