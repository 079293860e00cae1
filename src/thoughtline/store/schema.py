"""The schema of both stores, written once as an ordered list of named migrations
(:data:`MIGRATIONS`); :mod:`thoughtline.store.migrations` applies them to SQLite and
:mod:`thoughtline.store._postgres_schema` to PostgreSQL.

How a migration is written and rendered for each dialect (:class:`Migration`,
:class:`Only`) is :mod:`thoughtline.store._migration`. The first nine, which lay out the
tables, are :mod:`thoughtline.store._schema_tables`; those since are here.

Rules for whoever adds a migration:

- Append to :data:`MIGRATIONS`; never rename, reorder or edit one that has shipped —
  databases in the wild already recorded it.
- Both schemas must keep the same tables, columns and indexes
  (``tests/store/test_schema_parity.py`` compares them); what differs on purpose is
  written here, next to why.
- SQLite: statements run with ``conn.execute`` only. ``executescript`` commits the open
  transaction first, which would break the all-or-nothing guarantee and let two
  processes migrate at once.
- Everything retention must reach gets real columns (no opaque blobs).
"""

from __future__ import annotations

from thoughtline.store._migration import Migration, Only
from thoughtline.store._schema_tables import TABLES

__all__ = ["MIGRATIONS", "Migration", "Only"]

MIGRATIONS: tuple[Migration, ...] = (
    *TABLES,
    Migration(
        "m010_task_costs",
        (
            # What each task's model calls cost, priced once as each call ends
            # (thoughtline/config/pricing.py): the amount in a column of its own, for sums in
            # the store, and each call's cost (parts, price source) as JSON. NULL: a task
            # stored before calls were priced (its cost reads as unknown).
            "ALTER TABLE tasks ADD COLUMN cost_amount {double}",
            "ALTER TABLE tasks ADD COLUMN cost_json TEXT",
        ),
    ),
    Migration(
        "m011_task_usage_index",
        (
            # The usage report (Store.usage) sums tokens and costs of the tasks started
            # since a moment, by day, model, role, mode or provider: this index holds
            # every column it reads, so the sum never reads the tasks' wide rows
            # (answers, reasoning). A task's entry changes when it starts and ends.
            "CREATE INDEX tasks_usage ON tasks (started_at, provider, model, role, "
            "chain_of_thought, input_tokens, cached_input_tokens, cache_write_tokens, "
            "output_tokens, reasoning_tokens, cost_amount)",
        ),
    ),
    Migration(
        "m012_budgets",
        (
            # max_cost: USD a run's tasks may spend together, and one task (its plan's or
            # role's budget); NULL: no budget.
            "ALTER TABLE runs ADD COLUMN max_cost {double}",
            "ALTER TABLE tasks ADD COLUMN max_cost {double}",
        ),
    ),
    Migration(
        "m013_personas",
        (
            # Where a task's persona came from (explicit, plan, config, system, default;
            # NULL: stored before it was recorded), and the persona given inline
            # (--system), sent instead of the role's prompt; NULL: the role's.
            "ALTER TABLE tasks ADD COLUMN persona_source TEXT",
            "ALTER TABLE tasks ADD COLUMN system_prompt TEXT",
        ),
    ),
    Migration(
        "m014_run_tool_servers",
        (
            # The tool servers a run's tasks may call, as JSON (tools/recorded.py: how
            # each is reached, its env and header names, never their values), so a
            # follow-up starts them again; NULL: stored before they were recorded.
            "ALTER TABLE runs ADD COLUMN tool_servers_json TEXT",
        ),
    ),
    Migration(
        "m015_task_step_costs",
        (
            # Each model call's cost, a row appended as the call ends: the task's row
            # carried them all in cost_json and was written whole at every step (60 KB
            # a write at step 300). The row keeps the totals: cost_amount, and in
            # cost_json how many calls were priced ({"steps":N}; NULL still a task
            # stored unpriced). cost_json is the call's Cost.to_dict().
            """
            CREATE TABLE task_step_costs (
                task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
                step INTEGER NOT NULL,
                run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                cost_json TEXT NOT NULL,
                PRIMARY KEY (task_id, step)
            ){without_rowid}
            """,
            # A run's costs in one range scan, in task and step order.
            "CREATE INDEX task_step_costs_run ON task_step_costs (run_id, task_id, step)",
            Only(
                "sqlite",
                """
                INSERT INTO task_step_costs (task_id, step, run_id, cost_json)
                SELECT tasks.id, CAST(cost.key AS INTEGER) + 1, tasks.run_id, cost.value
                FROM tasks, json_each(tasks.cost_json) AS cost
                WHERE tasks.cost_json LIKE '[%' AND json_type(cost.value) = 'object'
                """,
            ),
            Only(
                "sqlite",
                "UPDATE tasks SET cost_json = '{{\"steps\":' || json_array_length(cost_json) "
                "|| '}}' WHERE cost_json LIKE '[%'",
            ),
            Only(
                "postgres",
                """
                INSERT INTO task_step_costs (task_id, step, run_id, cost_json)
                SELECT tasks.id, cost.ord, tasks.run_id, cost.value::text
                FROM (SELECT * FROM tasks WHERE cost_json LIKE '[%') AS tasks,
                    LATERAL jsonb_array_elements(
                        replace(tasks.cost_json, '\\u0000', '\\ufffd')::jsonb
                    ) WITH ORDINALITY AS cost (value, ord)
                WHERE jsonb_typeof(cost.value) = 'object'
                """,
            ),
            Only(
                "postgres",
                "UPDATE tasks SET cost_json = '{{\"steps\":' || "
                "jsonb_array_length(replace(cost_json, '\\u0000', '\\ufffd')::jsonb) "
                "|| '}}' WHERE cost_json LIKE '[%'",
            ),
        ),
    ),
    Migration(
        "m016_budget_notices_and_known_costs",
        (
            # What a task's budget did to its calls' output ("Output capped at 612
            # tokens to fit the run's $0.010 budget."); NULL: it capped none.
            "ALTER TABLE tasks ADD COLUMN budget_notice TEXT",
            # Of a task whose cost is unknown (cost_amount NULL), what its calls of known
            # cost came to (a run stopped in step 2 keeps step 1's); NULL: none known.
            "ALTER TABLE tasks ADD COLUMN cost_known_amount {double}",
            # The usage report's sums read it too, from the index alone (as m011).
            "DROP INDEX tasks_usage",
            "CREATE INDEX tasks_usage ON tasks (started_at, provider, model, role, "
            "chain_of_thought, input_tokens, cached_input_tokens, cache_write_tokens, "
            "output_tokens, reasoning_tokens, cost_amount, cost_known_amount)",
        ),
    ),
    Migration(
        "m017_gateway_clients",
        (
            # The gateway client whose call a run answered ([gateway.clients.NAME]);
            # NULL: a run asked for on another surface.
            "ALTER TABLE runs ADD COLUMN client TEXT",
            # What that call asked of reasoning, as the client said it; NULL: nothing.
            "ALTER TABLE runs ADD COLUMN client_asked TEXT",
            # runs --client lists a client's runs newest first.
            "CREATE INDEX runs_client ON runs (client, created_at)",
        ),
    ),
    Migration(
        "m018_run_server_starts",
        (
            # The run's tool server starts as its snapshot's tool_server_starts (JSON,
            # records/server_starts.py), written with the run's row when they change;
            # NULL: none, or stored before they were kept.
            "ALTER TABLE runs ADD COLUMN tool_server_starts_json TEXT",
        ),
    ),
)
