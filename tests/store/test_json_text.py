"""JSON columns keep text exactly: non-ASCII as UTF-8 (not ``\\u`` escapes, which double
or triple its bytes), and a lone surrogate from provider text still storable."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

from tests.store.backends import StoreBackend
from tests.store.builders import make_run
from thoughtline.records import RunEventRecord, TaskError
from thoughtline.store._rows import dump, storable_text

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
