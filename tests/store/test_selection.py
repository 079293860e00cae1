"""Which store a config names: SQLite by default, PostgreSQL by [store] dsn, a URL as
orchestration.store, or THOUGHTLINE_STORE_URL (which wins); mistakes name their source."""

from __future__ import annotations

import sys
from contextlib import closing
from pathlib import Path

import pytest

from thoughtline.config import load_config
from thoughtline.errors import ConfigError, ThoughtlineError
from thoughtline.store._postgres_dsn import mask_password, server_location
from thoughtline.store.opening import open_store, store_dsn
from thoughtline.store.sqlite import SQLiteStore

URL = "postgresql://runs:s3cret-pw@db.internal:6543/thoughtline"


def _config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "thoughtline.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_sqlite_is_the_default(tmp_path: Path) -> None:
    environ = {"THOUGHTLINE_HOME": str(tmp_path / "home")}
    config = load_config(environ=environ, cwd=tmp_path)
    assert (config.store, config.store_dsn, store_dsn(config, environ)) == ("sqlite", None, None)
    with closing(open_store(config, environ)) as store:
        assert isinstance(store, SQLiteStore)
        assert store.path == tmp_path / "home" / "thoughtline.db"


def test_postgres_by_dsn_or_by_url_as_the_store(tmp_path: Path) -> None:
    by_dsn = _config_file(
        tmp_path, f'[orchestration]\nstore = "postgres"\n[store]\ndsn = "{URL}"\n'
    )
    config = load_config(by_dsn, environ={})
    assert (config.store, store_dsn(config, {})) == ("postgres", URL)
    by_url = _config_file(tmp_path, f'[orchestration]\nstore = "{URL}"\n')
    config = load_config(by_url, environ={})
    assert (config.store, config.store_dsn) == ("postgres", URL)
    assert config.sources["store.dsn"] == str(by_url)


def test_the_environment_overrides_the_file(tmp_path: Path) -> None:
    path = _config_file(tmp_path, '[orchestration]\nstore = "sqlite"\n')
    environ = {"THOUGHTLINE_STORE_URL": URL}
    config = load_config(path, environ=environ)
    assert (config.store, config.store_dsn) == ("postgres", URL)
    assert config.sources["orchestration.store"] == "THOUGHTLINE_STORE_URL"
    # A Config built in code is overridden the same way when a store is opened.
    assert store_dsn(load_config(path, environ={}), environ) == URL


def test_store_mistakes_name_their_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"THOUGHTLINE_STORE_URL: must be a postgresql://"):
        load_config(environ={"THOUGHTLINE_STORE_URL": "mysql://x"}, cwd=tmp_path)
    path = _config_file(tmp_path, '[orchestration]\nstore = "postgres"\n')
    with pytest.raises(ConfigError, match=r"thoughtline.toml: store.dsn: .*needs \[store\] dsn"):
        load_config(path, environ={})
    path = _config_file(tmp_path, f'[orchestration]\nstore = "{URL}"\n[store]\ndsn = "{URL}"\n')
    with pytest.raises(ConfigError, match=r"thoughtline.toml: store.dsn: .*given twice"):
        load_config(path, environ={})
    path = _config_file(tmp_path, '[orchestration]\nstore = "mysql"\n')
    with pytest.raises(ConfigError, match=r"thoughtline.toml: orchestration.store: .*sqlite"):
        load_config(path, environ={})


def test_without_the_extra_the_error_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "thoughtline.store.postgres", None)  # import fails
    path = _config_file(tmp_path, f'[orchestration]\nstore = "{URL}"\n')
    with pytest.raises(ThoughtlineError) as raised:
        open_store(load_config(path, environ={}), {})
    assert raised.value.code == "EXTRA_MISSING"
    assert raised.value.message.startswith(f"{path}: orchestration.store: ")
    assert "pip install 'thoughtline[postgres]'" in raised.value.message
    with pytest.raises(ThoughtlineError, match=r"^THOUGHTLINE_STORE_URL: the PostgreSQL"):
        open_store(load_config(environ={}, cwd=tmp_path), {"THOUGHTLINE_STORE_URL": URL})


@pytest.mark.parametrize(
    ("dsn", "masked", "location"),
    [
        (URL, "postgresql://runs:***@db.internal:6543/thoughtline", "db.internal:6543/thoughtline"),
        # A lone user name is masked as in every URL (it may be a token).
        ("postgresql://runs@db/x", "postgresql://***@db/x", "db:5432/x"),
        (
            "postgres://u:p%40ss@[::1]:7/d?sslmode=require",
            "postgres://u:***@[::1]:7/d?sslmode=require",
            "::1:7/d",
        ),
        ("postgresql:///x?host=h&password=pw", "postgresql:///x?host=h&password=***", "h:5432/x"),
        (
            "host=h port=6 dbname=d user=u password='a b'",
            "host=h port=6 dbname=d user=u password=***",
            "h:6/d",
        ),
    ],
)
def test_passwords_are_masked_and_servers_named_without_them(
    dsn: str, masked: str, location: str
) -> None:
    assert mask_password(dsn) == masked
    assert server_location(dsn) == location


def test_thoughtline_config_shows_the_store_with_its_password_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from thoughtline.cli.config_command import config_report

    monkeypatch.setenv("THOUGHTLINE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("THOUGHTLINE_STORE_URL", URL)
    monkeypatch.delenv("THOUGHTLINE_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    report = config_report(load_config())
    settings = {item["key"]: item for item in report["settings"]}
    masked = "postgresql://runs:***@db.internal:6543/thoughtline"
    assert settings["orchestration.store"]["value"] == "postgres"
    assert settings["store.dsn"] == {
        "key": "store.dsn",
        "value": masked,
        "source": "THOUGHTLINE_STORE_URL",
    }
    assert report["database"] == masked
    assert "s3cret-pw" not in str(report)


def test_a_connection_string_that_cannot_be_read_names_where_it_was_written(
    tmp_path: Path,
) -> None:
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    path = _config_file(
        tmp_path, '[orchestration]\nstore = "postgres"\n[store]\ndsn = "not a dsn"\n'
    )
    with pytest.raises(ConfigError) as raised:
        open_store(load_config(path, environ={}), {})
    assert raised.value.message.startswith(
        f"{path}: orchestration.store: The PostgreSQL connection string for the thoughtline "
        "store cannot be read ("
    )
