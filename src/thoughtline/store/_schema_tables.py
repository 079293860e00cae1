"""The store's tables as first laid out, migrations ``m001`` to ``m009``: runs and
tasks, the trace, the store's own facts, the run event log, tool calls, conversations,
run ids in byte order and the checks of each log's rows against their run. What runs and
tasks came to record since (costs, budgets, personas, tool servers, gateway clients,
tool server starts) is :data:`thoughtline.store.schema.MIGRATIONS`, which starts with
these; the rules for adding one are there. Shipped: never edited."""

from __future__ import annotations

from thoughtline.store._migration import Migration, Only

__all__ = ["TABLES"]

TABLES: tuple[Migration, ...] = (
    Migration(
        "m001_runs_and_tasks",
        (
            # Owner columns identify the process that created the run, so a later open
            # can tell a crashed owner (mark the run interrupted) from a live one in
            # another process. The row order breaks ties between runs created in the
            # same millisecond (SQLite's rowid, a column of its own in PostgreSQL).
            """
            CREATE TABLE runs (
                id TEXT PRIMARY KEY,
                status TEXT NOT NULL,
                request TEXT NOT NULL,
                chain_of_thought TEXT NOT NULL,
                chain_of_thought_source TEXT NOT NULL,
                worker_backend TEXT NOT NULL,
                created_at TEXT NOT NULL,
                finished_at TEXT,
                owner_host TEXT,
                owner_pid {bigint},
                owner_start_time {bigint},
                owner_boot_id TEXT,
                heartbeat_at TEXT{row_order_column}
            )
            """,
            "CREATE INDEX runs_created_at ON runs (created_at{row_order_key})",
            "CREATE INDEX runs_status ON runs (status)",
            """
            CREATE TABLE tasks (
                id TEXT PRIMARY KEY,
                run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                position INTEGER NOT NULL,
                role TEXT NOT NULL,
                name TEXT NOT NULL,
                provider TEXT NOT NULL,
                model TEXT NOT NULL,
                chain_of_thought TEXT NOT NULL,
                chain_of_thought_source TEXT NOT NULL,
                effort TEXT NOT NULL,
                after_json TEXT NOT NULL,
                status TEXT NOT NULL,
                executor TEXT NOT NULL,
                output TEXT,
                reasoning TEXT,
                reasoning_parts_json TEXT,
                reasoning_status TEXT,
                reasoning_notice TEXT,
                input_tokens {bigint},
                output_tokens {bigint},
                reasoning_tokens {bigint},
                error_code TEXT,
                error_message TEXT,
                error_retryable INTEGER,
                started_at TEXT,
                finished_at TEXT,
                first_reasoning_ms {double},
                first_answer_ms {double},
                total_ms {double}{row_order_column}
            )
            """,
            "CREATE INDEX tasks_run ON tasks (run_id, position)",
        ),
    ),
    Migration(
        "m002_trace_events",
        (
            # ``seq`` is the write order (never handed out twice, even after purges
            # delete the newest rows). ``at_epoch`` is ``at`` parsed to seconds, so
            # retention compares numbers and is right whatever offset or precision
            # ``at`` was written with.
            """
            CREATE TABLE trace_events (
                seq {append_key},
                id TEXT NOT NULL UNIQUE,
                run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                task_id TEXT,
                type TEXT NOT NULL,
                layer TEXT NOT NULL CHECK (layer IN ('answer', 'reasoning', 'provider_raw')),
                at TEXT NOT NULL,
                at_epoch {double} NOT NULL,
                expires_at TEXT,
                metadata_json TEXT NOT NULL
            )
            """,
            "CREATE INDEX trace_events_run ON trace_events (run_id, seq)",
            "CREATE INDEX trace_events_layer_at ON trace_events (layer, at_epoch)",
        ),
    ),
    Migration(
        "m003_meta",
        # Small facts about the database itself, e.g. when retention last ran.
        ("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",),
    ),
    Migration(
        "m004_run_events",
        (
            # The live events of each run (task.started, answer.delta, reasoning.delta
            # when the mode displays it, task.completed, the terminal event) with their
            # per-run sequence numbers, so any process can replay or tail a run's stream
            # by event id. The payload stays in the table: a live-event notification
            # carries ids only.
            """
            CREATE TABLE run_events (
                run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                seq {bigint} NOT NULL,
                type TEXT NOT NULL,
                task_id TEXT,
                at TEXT NOT NULL,
                data_json TEXT NOT NULL,
                PRIMARY KEY (run_id, seq)
            ){without_rowid}
            """,
            # For a purge's scan of old reasoning deltas. Not in SQLite, where every
            # index would be kept up on the event loop at each append of a live event
            # (a purge scans at most once a day).
            Only("postgres", "CREATE INDEX run_events_type_at ON run_events (type, at)"),
        ),
    ),
    Migration(
        "m005_task_finish_generation_cache",
        # Why a task's answer ended, the generation settings its call sent, and the
        # cached and cache-written shares of its input (null in rows written before).
        tuple(
            f"ALTER TABLE tasks ADD COLUMN {column}"
            for column in (
                "finish_reason TEXT",
                "cached_input_tokens {bigint}",
                "cache_write_tokens {bigint}",
                "max_output_tokens {bigint}",
                "temperature {double}",
            )
        ),
    ),
    Migration(
        "m006_task_tool_calls",
        (
            # A task that may call tools: the tools it may call (a JSON array; null for a
            # task offered none), the model calls it may make and the calls it made.
            "ALTER TABLE tasks ADD COLUMN tools_json TEXT",
            "ALTER TABLE tasks ADD COLUMN max_steps INTEGER",
            "ALTER TABLE tasks ADD COLUMN steps INTEGER",
            # Each tool call of a task, numbered in the order the task made them (a
            # provider's call ids need not be unique), upserted as it starts and ends.
            # ``arguments`` and ``result`` hold what the task's record holds: credential
            # values redacted, the result cut to a preview.
            """
            CREATE TABLE task_tool_calls (
                task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
                position INTEGER NOT NULL,
                run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                call_id TEXT NOT NULL,
                step INTEGER NOT NULL,
                server TEXT,
                name TEXT NOT NULL,
                arguments TEXT NOT NULL,
                status TEXT NOT NULL,
                is_error INTEGER NOT NULL,
                result TEXT,
                result_truncated INTEGER NOT NULL,
                error TEXT,
                started_at TEXT NOT NULL,
                duration_ms {double},
                read_only INTEGER NOT NULL DEFAULT 0,
                destructive INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (task_id, position)
            ){without_rowid}
            """,
            # A run's calls in one range scan, in task and call order.
            "CREATE INDEX task_tool_calls_run ON task_tool_calls (run_id, task_id, position)",
            # Until now a task that may call tools kept all of this inside after_json,
            # as an object; move it out, and after_json holds the ids the task runs
            # after again (a JSON array, which the filters skip unparsed), as for every
            # other task. An escaped U+0000 in a call becomes U+FFFD: PostgreSQL's jsonb
            # holds none, and SQLite's JSON functions would cut the text there.
            Only(
                "sqlite",
                """
                INSERT INTO task_tool_calls (task_id, position, run_id, call_id, step,
                    server, name, arguments, status, is_error, result, result_truncated,
                    error, started_at, duration_ms)
                SELECT tasks.id, CAST(call.key AS INTEGER), tasks.run_id,
                    COALESCE(json_extract(call.value, '$.id'), ''),
                    COALESCE(json_extract(call.value, '$.step'), 1),
                    json_extract(call.value, '$.server'),
                    COALESCE(json_extract(call.value, '$.name'), ''),
                    COALESCE(json_extract(call.value, '$.arguments'), ''),
                    COALESCE(json_extract(call.value, '$.status'), 'running'),
                    COALESCE(json_extract(call.value, '$.is_error'), 0),
                    json_extract(call.value, '$.result'),
                    COALESCE(json_extract(call.value, '$.result_truncated'), 0),
                    json_extract(call.value, '$.error'),
                    COALESCE(json_extract(call.value, '$.started_at'), ''),
                    json_extract(call.value, '$.duration_ms')
                FROM tasks,
                    json_each(replace(tasks.after_json, '\\u0000', '\\ufffd'), '$.tool_calls')
                    AS call
                WHERE tasks.after_json NOT LIKE '[%' AND json_type(tasks.after_json) = 'object'
                """,
            ),
            Only(
                "sqlite",
                """
                UPDATE tasks SET
                    tools_json = COALESCE(json_extract(after_json, '$.tools'), '[]'),
                    max_steps = json_extract(after_json, '$.max_steps'),
                    steps = COALESCE(json_extract(after_json, '$.steps'), 0),
                    after_json = COALESCE(json_extract(after_json, '$.after'), '[]')
                WHERE after_json NOT LIKE '[%' AND json_type(after_json) = 'object'
                """,
            ),
            Only(
                "postgres",
                """
                INSERT INTO task_tool_calls (task_id, position, run_id, call_id, step,
                    server, name, arguments, status, is_error, result, result_truncated,
                    error, started_at, duration_ms)
                SELECT tasks.id, call.ord - 1, tasks.run_id,
                    COALESCE(call.value ->> 'id', ''),
                    COALESCE((call.value ->> 'step')::integer, 1),
                    call.value ->> 'server',
                    COALESCE(call.value ->> 'name', ''),
                    COALESCE(call.value ->> 'arguments', ''),
                    COALESCE(call.value ->> 'status', 'running'),
                    CASE WHEN (call.value ->> 'is_error')::boolean THEN 1 ELSE 0 END,
                    call.value ->> 'result',
                    CASE WHEN (call.value ->> 'result_truncated')::boolean THEN 1 ELSE 0 END,
                    call.value ->> 'error',
                    COALESCE(call.value ->> 'started_at', ''),
                    (call.value ->> 'duration_ms')::double precision
                FROM (SELECT * FROM tasks WHERE after_json NOT LIKE '[%') AS tasks,
                    LATERAL (SELECT replace(tasks.after_json, '\\u0000', '\\ufffd')::jsonb
                        AS after) AS tooled,
                    LATERAL jsonb_array_elements(
                        CASE WHEN jsonb_typeof(tooled.after) = 'object'
                        THEN COALESCE(tooled.after -> 'tool_calls', '[]'::jsonb)
                        ELSE '[]'::jsonb END
                    ) WITH ORDINALITY AS call (value, ord)
                """,
            ),
            Only(
                "postgres",
                """
                UPDATE tasks SET
                    tools_json = COALESCE(tooled.after -> 'tools', '[]'::jsonb)::text,
                    max_steps = (tooled.after ->> 'max_steps')::integer,
                    steps = COALESCE((tooled.after ->> 'steps')::integer, 0),
                    after_json = COALESCE(tooled.after -> 'after', '[]'::jsonb)::text
                FROM (
                    SELECT id, replace(after_json, '\\u0000', '\\ufffd')::jsonb AS after
                    FROM tasks WHERE after_json NOT LIKE '[%'
                ) AS tooled
                WHERE tasks.id = tooled.id AND jsonb_typeof(tooled.after) = 'object'
                """,
            ),
        ),
    ),
    Migration(
        "m007_conversations",
        (
            # The runs of one conversation share its id (the first run's); a follow-up
            # names the run it continues. Older runs are each a conversation of one.
            "ALTER TABLE runs ADD COLUMN conversation_id TEXT",
            "ALTER TABLE runs ADD COLUMN continues TEXT",
            "UPDATE runs SET conversation_id = id WHERE conversation_id IS NULL",
            "CREATE INDEX runs_conversation ON runs (conversation_id, created_at)",
            # What a follow-up task was sent of its conversation (the snapshot's history).
            "ALTER TABLE tasks ADD COLUMN history_json TEXT",
            # What each task added to its conversation (thoughtline/model/threads.py), written
            # once, when the task ends: the answer layer's messages, kept while that
            # layer is (``at_epoch``), and the messages with their reasoning carriers,
            # only for a mode that requested reasoning, cleared with the reasoning
            # retention (``carriers_cleared`` then says they existed).
            """
            CREATE TABLE task_threads (
                task_id TEXT PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
                run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                at_epoch {double} NOT NULL,
                system_digest TEXT NOT NULL,
                tools_digest TEXT NOT NULL,
                answer_json TEXT NOT NULL,
                carriers_json TEXT,
                carriers_cleared INTEGER NOT NULL DEFAULT 0
            ){without_rowid}
            """,
            "CREATE INDEX task_threads_run ON task_threads (run_id)",
            "CREATE INDEX task_threads_at ON task_threads (at_epoch)",
        ),
    ),
    Migration(
        "m008_run_ids_in_byte_order",
        (
            # Finding runs by the start of their id (Store.run_ids_with_prefix) is a range
            # over ids in byte order, newest first. PostgreSQL's primary key is in the
            # database's collation, which (en_US.UTF-8, even C.UTF-8) it cannot use for
            # that: every lookup read the whole table. SQLite's key is in byte order.
            Only("postgres", 'CREATE INDEX runs_id_bytes ON runs (id COLLATE "C")'),
        ),
    ),
    Migration(
        "m009_log_rows_checked_per_run",
        (
            # PostgreSQL checks a foreign key row by row (a trigger and a locking query
            # each): half the server's time for every run event and trace event
            # appended. Every write already locks its runs' rows first (the heartbeat
            # refresh, UPDATE ... RETURNING id), which is the same check once per run:
            # PostgresStore names a missing run from it. A run deleted by hand still
            # takes its logs with it (the trigger). SQLite's checks cost little: kept.
            Only("postgres", "ALTER TABLE run_events DROP CONSTRAINT run_events_run_id_fkey"),
            Only("postgres", "ALTER TABLE trace_events DROP CONSTRAINT trace_events_run_id_fkey"),
            Only(
                "postgres",
                """
                CREATE FUNCTION thoughtline_delete_run_logs() RETURNS trigger
                LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
                BEGIN
                    DELETE FROM run_events WHERE run_id IN (SELECT id FROM gone);
                    DELETE FROM trace_events WHERE run_id IN (SELECT id FROM gone);
                    RETURN NULL;
                END
                $$
                """,
            ),
            Only(
                "postgres",
                "CREATE TRIGGER runs_delete_logs AFTER DELETE ON runs "
                "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
                "EXECUTE FUNCTION thoughtline_delete_run_logs()",
            ),
            # A purge looks for old reasoning deltas only: the other events (most of
            # them) need not be in its index at all.
            Only("postgres", "DROP INDEX run_events_type_at"),
            Only(
                "postgres",
                "CREATE INDEX run_events_reasoning_at ON run_events (at) "
                "WHERE type = 'reasoning.delta'",
            ),
        ),
    ),
)
