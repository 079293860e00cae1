"""The tool list cache's key and files, through the Python API: what makes two server
definitions one, and what is never read into the key or written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from thoughtline.tools.list_cache import CACHE_DIR, ToolListCache, definition_key
from thoughtline.tools.mcp_client import ToolInfo
from thoughtline.tools.settings import McpServerSettings

ENVIRON = {"PATH": str(Path(sys.executable).parent)}
ECHO = (ToolInfo(server="probe", name="echo", input_schema={"type": "object"}),)


def stdio(**changes: object) -> McpServerSettings:
    fields: dict[str, object] = {
        "name": "probe",
        "command": sys.executable,
        "args": ("-m", "probe"),
        "env": {"TOKEN": "first-value"},
    }
    fields |= changes
    return McpServerSettings(**fields)  # type: ignore[arg-type]


def http(**changes: object) -> McpServerSettings:
    fields: dict[str, object] = {
        "name": "remote",
        "url": "https://user:first-password@mcp.example/mcp",
        "headers": {"Authorization": "Bearer first-token"},
    }
    fields |= changes
    return McpServerSettings(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        pytest.param(stdio(), stdio(env={"TOKEN": "second-value"}), True, id="env value"),
        pytest.param(stdio(), stdio(env={"OTHER": "first-value"}), False, id="env name"),
        pytest.param(stdio(), stdio(args=("-m", "other")), False, id="args"),
        pytest.param(stdio(), stdio(cwd="/"), False, id="cwd"),
        pytest.param(stdio(), stdio(command="sh"), False, id="executable"),
        pytest.param(
            http(),
            http(url="https://user:second-password@mcp.example/mcp"),
            True,
            id="url password",
        ),
        pytest.param(http(), http(url="https://mcp.example/other"), False, id="url path"),
        pytest.param(
            http(), http(headers={"Authorization": "Bearer second"}), True, id="header value"
        ),
        pytest.param(http(), http(headers={"X-Key": "first-token"}), False, id="header name"),
    ],
)
def test_the_key_follows_the_definition_never_a_value(
    first: McpServerSettings, second: McpServerSettings, same: bool
) -> None:
    assert (definition_key(first, ENVIRON) == definition_key(second, ENVIRON)) is same


def test_a_changed_script_is_another_definition(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text("print('one')\n")
    settings = stdio(args=(str(script),))
    before = definition_key(settings, ENVIRON)
    script.write_text("print('two, longer')\n")
    assert definition_key(settings, ENVIRON) != before


def test_a_list_comes_back_for_its_own_definition_only(tmp_path: Path) -> None:
    cache = ToolListCache.under(tmp_path, ENVIRON)
    cache.store(stdio(), ECHO)
    assert cache.load(stdio(env={"TOKEN": "second-value"})) == ECHO
    assert cache.load(stdio(args=("-m", "other"))) is None
    (path,) = (tmp_path / CACHE_DIR).glob("*.json")
    written = path.read_text()
    assert "first-value" not in written
    # A file moved onto another definition's name is not that definition's list.
    other = stdio(args=("-m", "other"))
    path.rename(path.with_name(f"{cache.key(other)[:32]}.json"))
    assert cache.load(other) is None


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"{",
        b"[]",
        b'{"format": 2}',
        b'{"format": 1, "key": "KEY", "tools": [{"name": 3}]}',
        b'{"format": 1, "key": "KEY", "tools": "echo"}',
        b"\xff\xfe",
    ],
)
def test_a_damaged_file_is_ignored(tmp_path: Path, damage: bytes) -> None:
    cache = ToolListCache.under(tmp_path, ENVIRON)
    cache.store(stdio(), ECHO)
    (path,) = (tmp_path / CACHE_DIR).glob("*.json")
    path.write_bytes(damage.replace(b"KEY", cache.key(stdio()).encode()))
    assert cache.load(stdio()) is None
    cache.store(stdio(), ECHO)  # and replaced by the next start
    assert json.loads(path.read_text())["tools"][0]["name"] == "echo"
    assert cache.load(stdio()) == ECHO
