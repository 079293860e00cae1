"""``Store.find_runs``: the filters of ``thoughtline runs`` done in SQL, on each store:
every field given must hold, a task's model or role selects its run, ``since`` compares
creation times, and a search is a case-insensitive substring with no wildcards."""

from __future__ import annotations

from tests.store.backends import StoreBackend
from tests.store.builders import DAY, ago, make_run, make_task
from thoughtline.records import Run
from thoughtline.store.base import RunFilter, Store


def _run(run_id: str, request: str, status: str, created: float, **task: str) -> Run:
    run = make_run(run_id, request=request, status=status, created_at=ago(created))
    run.tasks = [make_task(run_id, 0, **task)]
    if run_id == "run_mixed":  # a second task: its model and role select the run too
        run.tasks.append(make_task(run_id, 1, model="gpt-5", role="critic"))
    return run


RUNS = [
    _run("run_old", "Review the PATCH", "succeeded", 10 * DAY, model="claude-sonnet-4-6"),
    _run("run_fail", "summarise the log", "failed", 2 * DAY, model="gpt-5", role="critic"),
    _run("run_mixed", "review 100% of it", "succeeded", 3600, model="claude-opus-4-7"),
    _run("run_new", "write a_poem", "running", 60, model="claude-sonnet-4-6"),
]


def _ids(store: Store, **fields: str) -> list[str]:
    return [run.id for run in store.find_runs(RunFilter(**fields), 20)]


def test_runs_are_filtered_in_the_store(backend: StoreBackend) -> None:
    store = backend.open()
    try:
        store.write_prepared([store.prepare(create=run) for run in RUNS])
        assert _ids(store) == ["run_new", "run_mixed", "run_fail", "run_old"]
        assert _ids(store, status="succeeded") == ["run_mixed", "run_old"]
        assert _ids(store, model="claude-sonnet-4-6") == ["run_new", "run_old"]
        assert _ids(store, model="gpt-5") == ["run_mixed", "run_fail"]
        assert _ids(store, role="critic") == ["run_mixed", "run_fail"]
        assert _ids(store, role="critic", status="failed") == ["run_fail"]
        assert _ids(store, since=ago(3 * DAY)) == ["run_new", "run_mixed", "run_fail"]
        assert _ids(store, since=ago(2 * 3600), model="gpt-5") == ["run_mixed"]
        assert _ids(store, search="REVIEW") == ["run_mixed", "run_old"]
        assert _ids(store, search="patch", status="succeeded") == ["run_old"]
        # No wildcards: % and _ are the characters themselves.
        assert _ids(store, search="100%") == ["run_mixed"]
        assert _ids(store, search="%") == ["run_mixed"]
        assert _ids(store, search="a_p") == ["run_new"]
        assert _ids(store, search="e_w") == []
        assert _ids(store, model="claude") == []  # a model is named whole
        assert _ids(store, status="cancelled") == []
        # The limit counts runs, not tasks.
        assert [run.id for run in store.find_runs(RunFilter(), 2)] == ["run_new", "run_mixed"]
        listed = store.find_runs(RunFilter(model="gpt-5"), 20)
        assert [len(run.tasks) for run in listed] == [2, 1]  # every task of each run
    finally:
        store.close()
