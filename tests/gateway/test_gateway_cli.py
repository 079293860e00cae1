"""``thoughtline gateway add-client``, ``list-clients`` and ``remove-client`` through the
real command line, and the token it prints working against ``thoughtline serve``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from tests.cli.test_run_cli import cli_env, thoughtline
from tests.support import daemon_url, start_process
from thoughtline.config import load_config
from thoughtline.config.gateway import token_digest
from thoughtline.testing import Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line in processes

BEFORE = """\
# my settings, kept as they are
[defaults]
provider = "deepseek"   # the one I use

[gateway]
enabled = true
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_add_client_prints_the_token_alone_and_keeps_the_rest_of_the_file(
    home: Path, environ: dict[str, str]
) -> None:
    config = home / "config.toml"
    config.write_text(BEFORE, encoding="utf-8")
    added = thoughtline(home, environ, "gateway", "add-client", "editor")
    assert added.returncode == 0, added.stderr
    token = added.stdout.removesuffix("\n")
    assert "\n" not in token and token.startswith("tlgw_") and len(token) > 40
    text = config.read_text(encoding="utf-8")
    assert text.startswith(BEFORE)
    assert token not in text  # only its digest is kept
    client = load_config(config).gateway.clients["editor"]
    assert (client.token_sha256, client.chain_of_thought) == (token_digest(token), "hidden")
    again = thoughtline(home, environ, "gateway", "add-client", "editor")
    assert again.returncode == 2 and again.stdout == ""
    assert "already has [gateway.clients.editor]" in again.stderr
    listed = thoughtline(home, environ, "gateway", "list-clients")
    assert listed.stdout.split("\t")[:2] == ["editor", "hidden"]
    assert token not in listed.stdout + listed.stderr
    removed = thoughtline(home, environ, "gateway", "remove-client", "editor")
    assert removed.returncode == 0, removed.stderr
    assert config.read_text(encoding="utf-8") == BEFORE
    unknown = thoughtline(home, environ, "gateway", "remove-client", "editor")
    assert unknown.returncode == 2 and "has no [gateway.clients.editor]" in unknown.stderr


def test_a_bad_client_name_or_mode_is_refused_and_the_file_left_alone(
    home: Path, environ: dict[str, str]
) -> None:
    config = home / "config.toml"
    config.write_text(BEFORE, encoding="utf-8")
    bad = thoughtline(home, environ, "gateway", "add-client", "My Editor")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "Client name 'My Editor'" in bad.stderr
    mode = thoughtline(home, environ, "gateway", "add-client", "ed", "--chain-of-thought", "loud")
    assert mode.returncode == 2 and mode.stdout == ""
    assert config.read_text(encoding="utf-8") == BEFORE


def test_a_config_mistake_in_a_client_names_the_file_and_the_key(
    home: Path, environ: dict[str, str]
) -> None:
    config = home / "config.toml"
    config.write_text(BEFORE + '[gateway.clients.ed]\ntoken_sha256 = "abc"\n', encoding="utf-8")
    shown = thoughtline(home, environ, "gateway", "list-clients")
    assert shown.returncode == 2
    assert f"{config}: gateway.clients.ed.token_sha256: must be 64 lowercase" in shown.stderr


def test_the_printed_token_reaches_thoughtline_serve_and_another_does_not(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    (home / "config.toml").write_text(BEFORE, encoding="utf-8")
    token = thoughtline(home, environ, "gateway", "add-client", "editor").stdout.strip()
    sim.script(Transcript(answer="Hello from the gateway."))
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
    )
    try:
        url = f"{daemon_url(process)}/openai/v1"
        client = openai.OpenAI(base_url=url, api_key=token, max_retries=0)
        answer = client.chat.completions.create(
            model="deepseek/deepseek-v4-pro", messages=[{"role": "user", "content": "Hi"}]
        )
        assert answer.choices[0].message.content == "Hello from the gateway."
        stranger = openai.OpenAI(base_url=url, api_key="tlgw_" + "x" * 43, max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            stranger.models.list()
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert token not in stderr


def test_config_shows_the_gateway_and_its_clients_but_no_token_hash(
    home: Path, environ: dict[str, str]
) -> None:
    config = home / "config.toml"
    config.write_text(BEFORE, encoding="utf-8")
    token = thoughtline(home, environ, "gateway", "add-client", "editor").stdout.strip()
    shown = thoughtline(home, environ, "config", "--json")
    assert shown.returncode == 0, shown.stderr
    settings = {item["key"]: item for item in json.loads(shown.stdout)["settings"]}
    assert settings["gateway.enabled"] == {
        "key": "gateway.enabled",
        "value": True,
        "source": str(config),
    }
    assert settings["gateway.clients.editor.chain_of_thought"]["value"] == "hidden"
    assert token_digest(token) not in shown.stdout and token not in shown.stdout


def test_serve_refuses_a_gateway_key_others_can_read_naming_the_file(
    home: Path, environ: dict[str, str]
) -> None:
    (home / "config.toml").write_text(BEFORE, encoding="utf-8")
    added = thoughtline(
        home, environ, "gateway", "add-client", "app", "--chain-of-thought", "surface"
    )
    assert added.returncode == 0, added.stderr
    key = home / "gateway.key"
    key.write_text("ab" * 32 + "\n", encoding="ascii")
    key.chmod(0o644)
    served = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
        timeout=60,  # a daemon that started anyway would serve until killed
    )
    assert served.returncode == 2, served.stderr
    assert served.stderr.startswith(f"thoughtline: The gateway's key file {key} can be read")
    assert "ab" * 32 not in served.stderr + served.stdout
