"""The store's upkeep, written once for SQLite and PostgreSQL: deleting what expired,
the meta table, and the runs a dead process left unfinished."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from thoughtline.records import TRACE_LAYERS, Task, TraceEvent, TraceLayer
from thoughtline.store import _rows as rows
from thoughtline.store._sql_writes import ConnectionT, SqlWrites
from thoughtline.store.base import (
    UnfinishedRun,
)

UNFINISHED = "('planned', 'running')"


SET_META = (
    "INSERT INTO meta (key, value) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


class SqlUpkeep(SqlWrites[ConnectionT]):
    """Retention deletes, meta and crash recovery's queries on connections of type
    ``ConnectionT``."""

    # -- deleting what expired -------------------------------------------------------
    def delete_trace_before(
        self, cutoffs: Mapping[TraceLayer, float], *, dry_run: bool = False
    ) -> dict[TraceLayer, int]:
        counts: dict[TraceLayer, int] = dict.fromkeys(TRACE_LAYERS, 0)
        where = " trace_events WHERE layer = ? AND at_epoch < ?"
        if dry_run:
            with self._reading() as conn:
                for layer, cutoff in cutoffs.items():
                    found = conn.execute(
                        self.dialect.sql("SELECT COUNT(*) AS n FROM" + where), (layer, cutoff)
                    ).fetchone()
                    counts[layer] = int(found["n"])
            return counts
        sql = self.dialect.sql
        with self._purging() as conn:
            for layer, cutoff in cutoffs.items():
                counts[layer] = conn.execute(sql("DELETE FROM" + where), (layer, cutoff)).rowcount
            # Conversation threads (not counted: the counts are trace events): the answer
            # layer's messages go with that layer, the carriers kept beside them with the
            # reasoning layer.
            threads = 0
            if (answer_cutoff := cutoffs.get("answer")) is not None:
                threads += conn.execute(
                    sql("DELETE FROM task_threads WHERE at_epoch < ?"), (answer_cutoff,)
                ).rowcount
            if (reasoning_cutoff := cutoffs.get("reasoning")) is not None:
                threads += conn.execute(
                    sql(
                        "UPDATE task_threads SET carriers_json = NULL, carriers_cleared = 1 "
                        "WHERE at_epoch < ? AND carriers_json IS NOT NULL"
                    ),
                    (reasoning_cutoff,),
                ).rowcount
        touched = {"trace_events"} if any(counts.values()) else set()
        if threads:
            touched.add("task_threads")
        if touched:
            self._deleted(touched)  # erased from every file of the store (SQLite)
        return counts

    def clear_displayed_reasoning(
        self, finished_before: str, notice: str, *, dry_run: bool = False
    ) -> int:
        sql = self.dialect.sql
        select = sql(
            "SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < ? "
            "AND (reasoning IS NOT NULL OR (reasoning_parts_json IS NOT NULL "
            "AND reasoning_parts_json != '[]'))"
        )
        if dry_run:
            with self._reading() as conn:
                return len(conn.execute(select, (finished_before,)).fetchall())
        with self._purging() as conn:
            task_ids = [row["id"] for row in conn.execute(select, (finished_before,)).fetchall()]
            touched = {"tasks"} if task_ids else set()
            self._execute_many(
                conn,
                sql(
                    "UPDATE tasks SET reasoning = NULL, reasoning_parts_json = '[]', "
                    "reasoning_notice = COALESCE(reasoning_notice || ' ', '') || ? WHERE id = ?"
                ),
                [(notice, task_id) for task_id in task_ids],
            )
            deltas = conn.execute(
                sql("DELETE FROM run_events WHERE type = 'reasoning.delta' AND at < ?"),
                (finished_before,),
            )
            if deltas.rowcount > 0:
                touched.add("run_events")
            snapshots = conn.execute(
                sql(
                    "SELECT run_id, seq, data_json FROM run_events WHERE at < ? AND type != "
                    "'reasoning.delta' AND data_json LIKE '%\"reasoning\":%'"
                ),
                (finished_before,),
            ).fetchall()
            for snapshot in snapshots:
                data = json.loads(snapshot["data_json"])
                if rows.without_reasoning(data):
                    conn.execute(
                        sql("UPDATE run_events SET data_json = ? WHERE run_id = ? AND seq = ?"),
                        (rows.dump(data), snapshot["run_id"], snapshot["seq"]),
                    )
                    touched.add("run_events")
        if touched:
            self._deleted(touched)
        return len(task_ids)

    # -- small shared values ---------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._reading() as conn:
            found = conn.execute(
                self.dialect.sql("SELECT value FROM meta WHERE key = ?"), (key,)
            ).fetchone()
        return None if found is None else str(found["value"])

    def set_meta(self, key: str, value: str) -> None:
        with self._writing() as conn:
            conn.execute(self.dialect.sql(SET_META), (key, value))

    def replace_meta(self, key: str, expected: str | None, value: str) -> bool:
        # One statement each way: the unique key (insert) or the row lock and re-check
        # of the WHERE clause (update) let exactly one of racing processes through.
        sql = self.dialect.sql
        with self._writing() as conn:
            if expected is None:
                cursor = conn.execute(
                    sql("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING"),
                    (key, value),
                )
            else:
                cursor = conn.execute(
                    sql("UPDATE meta SET value = ? WHERE key = ? AND value = ?"),
                    (value, key, expected),
                )
            return cursor.rowcount == 1

    # -- runs whose owner may be gone ------------------------------------------------
    def unfinished_runs(self) -> list[UnfinishedRun]:
        with self._reading() as conn:
            found = conn.execute(
                "SELECT id, owner_host, owner_pid, owner_start_time, owner_boot_id, "
                "heartbeat_at, created_at, "
                "(SELECT COUNT(*) FROM run_events WHERE run_id = runs.id) AS event_count, "
                "(SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = runs.id) "
                f"AS last_event_seq FROM runs WHERE status IN {UNFINISHED}"
            ).fetchall()
        return [
            UnfinishedRun(
                run_id=row["id"],
                owner_host=row["owner_host"],
                owner_pid=row["owner_pid"],
                owner_start_time=row["owner_start_time"],
                owner_boot_id=row["owner_boot_id"],
                heartbeat_at=row["heartbeat_at"],
                created_at=row["created_at"],
                event_count=int(row["event_count"]),
                last_event_seq=int(row["last_event_seq"]),
            )
            for row in found
        ]

    def interrupt_run(
        self,
        seen: UnfinishedRun,
        *,
        finished_at: str,
        tasks: Sequence[Task],
        event: TraceEvent,
    ) -> bool:
        sql = self.dialect.sql
        with self._writing() as conn:
            # Every write of a run updates its row first, so holding the row's lock
            # orders this check after any write in flight, on any machine.
            locked = conn.execute(
                sql(
                    f"SELECT heartbeat_at FROM runs WHERE id = ? AND status IN {UNFINISHED}"
                    f"{self.dialect.lock_row}"
                ),
                (seen.run_id,),
            ).fetchone()
            if locked is None or locked["heartbeat_at"] != seen.heartbeat_at:
                return False
            log = conn.execute(
                sql(
                    "SELECT COUNT(*) AS n, COALESCE(MAX(seq), 0) AS last FROM run_events "
                    "WHERE run_id = ?"
                ),
                (seen.run_id,),
            ).fetchone()
            if (log["n"], log["last"]) != (seen.event_count, seen.last_event_seq):
                return False
            conn.execute(
                sql("UPDATE runs SET status = 'interrupted', finished_at = ? WHERE id = ?"),
                (finished_at, seen.run_id),
            )
            statements = self.statements
            self._execute_many(
                conn, statements.update_task, [self.task_row(task) for task in tasks]
            )
            calls = [
                self.tool_call_row(task, position)
                for task in tasks
                for position in range(len(task.tool_calls or ()))
            ]
            if calls:
                self._tool_call_rows(conn, calls)
            costs = [row for task in tasks for row in self.step_cost_rows.rows(task, rows.dump)]
            if costs:
                self._execute_many(conn, statements.insert_step_cost, costs)
            conn.execute(statements.insert_trace, rows.trace_params(event))
        return True
