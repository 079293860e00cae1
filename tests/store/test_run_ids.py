"""Finding runs by the start of their id, on each store: through the index, old runs as
well as new, wildcard characters taken literally, newest first."""

from __future__ import annotations

from tests.store.backends import StoreBackend
from tests.store.builders import make_run


def test_runs_are_found_by_the_start_of_their_id(backend: StoreBackend) -> None:
    store = backend.open()
    try:
        ids = ["run_a1", "run_a2", "run_b1", "run_%x", "run__y"]
        ids += [f"run_f{n:04d}" for n in range(1200)]  # more than a screenful of newer runs
        store.write_prepared([store.prepare(create=make_run(run_id)) for run_id in ids])
        assert store.run_ids_with_prefix("run_a", 10) == ["run_a2", "run_a1"]
        assert store.run_ids_with_prefix("run_a1", 10) == ["run_a1"]
        assert store.run_ids_with_prefix("run_%", 10) == ["run_%x"]
        assert store.run_ids_with_prefix("run__", 10) == ["run__y"]
        assert store.run_ids_with_prefix("run_f", 3) == ["run_f1199", "run_f1198", "run_f1197"]
        assert store.run_ids_with_prefix("run_f0000", 3) == ["run_f0000"]
        assert store.run_ids_with_prefix("run_z", 3) == []
    finally:
        store.close()
