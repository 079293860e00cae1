"""``[store]`` pool, lease, flush, statement timeout and application name: each checked
with one sentence naming the file and the key, and each reaching the store it tunes
(a real PostgreSQL server for the ones it takes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from thoughtline.config import StoreSettings, load_config
from thoughtline.errors import ConfigError
from thoughtline.store.opening import open_store


def config_with(tmp_path: Path, store: str) -> Path:
    path = tmp_path / "thoughtline.toml"
    path.write_text(f"[store]\n{store}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("pool_min = 0", "store.pool_min: must be an integer from 1 to 100, got 0"),
        ("pool_max = 2000", "store.pool_max: must be an integer from 1 to 1,000, got 2000"),
        (
            "pool_min = 4\npool_max = 2",
            "store.pool_max: must be at least store.pool_min (4), got 2",
        ),
        ('lease_s = "10s"', "store.lease_s: wrong type: must be a number of seconds from 1 to 600"),
        ("lease_s = 0.5", "store.lease_s: must be from 1 to 600 seconds, got 0.5"),
        ("live_flush_ms = 0", "store.live_flush_ms: must be an integer from 1 to 10,000, got 0"),
        (
            "statement_timeout_ms = -1",
            "store.statement_timeout_ms: must be an integer from 0 to 86,400,000, got -1",
        ),
        ('application_name = "tl\\u00e9"', "store.application_name: must be printable ASCII"),
        (f'application_name = "{"x" * 64}"', "at most 63 characters"),
        ("pool_size = 3", "store.pool_size: unknown key"),
    ],
)
def test_each_bad_value_is_one_sentence_naming_the_file_and_key(
    tmp_path: Path, line: str, expected: str
) -> None:
    path = config_with(tmp_path, line)
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert str(path) in refused.value.message
    assert expected in refused.value.message


def test_the_values_given_are_the_settings_and_the_rest_their_defaults(tmp_path: Path) -> None:
    path = config_with(
        tmp_path,
        'pool_min = 2\npool_max = 3\nlease_s = 5\nlive_flush_ms = 7\napplication_name = "api-b"',
    )
    config = load_config(path)
    assert config.store_settings == StoreSettings(
        pool_min=2,
        pool_max=3,
        lease_s=5.0,
        live_flush_ms=7,
        application_name="api-b",
        outage_limit_s=10.0,  # unset, it stays under three missed beats of the lease
    )
    assert config.sources["store.pool_min"] == str(path)
    assert load_config(config_with(tmp_path, "")).store_settings == StoreSettings()


def test_sqlite_takes_the_flush_interval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THOUGHTLINE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("THOUGHTLINE_STORE_URL", raising=False)
    store = open_store(load_config(config_with(tmp_path, "live_flush_ms = 250")))
    try:
        assert store.live_flush_s == 0.25
    finally:
        store.close()


@pytest.mark.slow
def test_postgres_takes_every_setting(
    tmp_path: Path, postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    monkeypatch.delenv("THOUGHTLINE_STORE_URL", raising=False)
    path = config_with(
        tmp_path,
        f'dsn = "{postgres_dsn}"\npool_min = 2\npool_max = 3\nlease_s = 4\n'
        'live_flush_ms = 9\nstatement_timeout_ms = 1500\napplication_name = "tl-daemon-b"',
    )
    path.write_text('[orchestration]\nstore = "postgres"\n' + path.read_text(), encoding="utf-8")
    store = open_store(load_config(path))
    try:
        from thoughtline.store.postgres import PostgresStore

        assert isinstance(store, PostgresStore)
        assert store.heartbeat_interval_s == 4.0
        assert store.live_flush_s == 0.009
        with store._transaction() as conn:  # a pooled connection, as every query gets
            assert conn.execute("SHOW application_name").fetchone() == {
                "application_name": "tl-daemon-b"
            }
            assert conn.execute("SHOW statement_timeout").fetchone() == {
                "statement_timeout": "1500ms"
            }
            with pytest.raises(psycopg.errors.QueryCanceled):
                conn.execute("SELECT pg_sleep(3)")
        assert store._pool is not None
        stats = store._pool.get_stats()
        assert (stats["pool_min"], stats["pool_max"]) == (2, 3)
    finally:
        store.close()
