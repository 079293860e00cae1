"""A daemon following a run of another process is woken by the store's announcement of
each append (PostgreSQL LISTEN/NOTIFY), not by its next poll; SQLite streams poll."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from tests.store.builders import make_run
from thoughtline.records import RunEventRecord
from thoughtline.server.announcements import Announcements
from thoughtline.store.sqlite import SQLiteStore


def delta(run_id: str, task_id: str, seq: int) -> RunEventRecord:
    return RunEventRecord(
        run_id=run_id, seq=seq, type="answer.delta", task_id=task_id, at="x", data={"text": "x"}
    )


async def test_each_append_wakes_the_followers_of_its_run(postgres_dsn: str) -> None:
    from thoughtline.store.postgres import PostgresStore

    with (
        closing(PostgresStore(postgres_dsn)) as mine,
        closing(PostgresStore(postgres_dsn)) as other,
    ):
        announcements = Announcements(mine)
        announcements.start()
        try:
            assert announcements.active
            run, bystander = make_run("run_followed"), make_run("run_other")
            other.create_run(run)
            other.create_run(bystander)
            follower = announcements.follow(run.id)
            unrelated = announcements.follow(bystander.id)
            for seq in range(1, 4):
                follower.ready()
                unrelated.ready()
                other.append_run_events([delta(run.id, run.tasks[0].id, seq)])
                # Far longer than an announcement takes: returning woken means it arrived.
                await follower.wait(30.0)
                assert follower.woken.is_set(), seq
                assert not unrelated.woken.is_set()
            follower.close()
            unrelated.close()
        finally:
            announcements.stop()


def test_a_store_without_announcements_leaves_streams_polling(tmp_path: Path) -> None:
    with closing(SQLiteStore(tmp_path / "thoughtline.db")) as store:
        announcements = Announcements(store)
        announcements.start()
        assert not announcements.active
        announcements.stop()
