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


def test_a_gateway_clients_runs_are_filtered_and_its_usage_summed(backend: StoreBackend) -> None:
    gateway_runs = []
    for run_id, client in (("run_ed1", "editor"), ("run_ed2", "editor"), ("run_bot", "bot")):
        run = _run(run_id, "hi", "completed", 60, model="deepseek-v4-pro")
        run.client, run.client_asked = client, "effort=high"
        run.tasks[0].timings.started_at = ago(60)  # the usage report sums started tasks
        gateway_runs.append(run)
    store = backend.open()
    try:
        store.write_prepared([store.prepare(create=run) for run in [*RUNS, *gateway_runs]])
        assert sorted(_ids(store, client="editor")) == ["run_ed1", "run_ed2"]
        assert _ids(store, client="bot", status="completed") == ["run_bot"]
        assert _ids(store, client="nobody") == []
        stored = store.get_run("run_ed1")
        assert stored is not None
        assert (stored.client, stored.client_asked) == ("editor", "effort=high")
        assert stored.snapshot()["source"] == "gateway"
        old = store.get_run("run_old")
        assert old is not None and old.client is None
        by_client = {group.key: group.tasks for group in store.usage("client")}
        assert by_client == {"bot": 1, "editor": 2}  # the other runs' tasks never started
    finally:
        store.close()
