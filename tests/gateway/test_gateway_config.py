"""``[gateway]`` read like every other section: each mistake names the file and the key,
and says what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from thoughtline.config import load_config
from thoughtline.config.gateway import token_digest
from thoughtline.errors import ConfigError

DIGEST = token_digest("tlgw_example")


@pytest.mark.parametrize(
    ("text", "key", "said"),
    [
        ('[gateway]\nenabled = "yes"\n', "gateway.enabled", "must be true or false"),
        ("[gateway]\nport = 1\n", "gateway.port", "unknown key. Allowed keys in [gateway]"),
        (
            f'[gateway.clients.ed]\ntoken_sha256 = "{DIGEST}"\ncolour = "red"\n',
            "gateway.clients.ed.colour",
            "unknown key",
        ),
        ("[gateway.clients.ed]\n", "gateway.clients.ed.token_sha256", "gateway add-client ed"),
        (
            f'[gateway.clients."Ed Two"]\ntoken_sha256 = "{DIGEST}"\n',
            "gateway.clients.Ed Two",
            "client names use 1 to 64 lowercase letters",
        ),
        (
            f'[gateway.clients.ed]\ntoken_sha256 = "{DIGEST}"\nchain_of_thought = "loud"\n',
            "gateway.clients.ed.chain_of_thought",
            "'loud' is not allowed",
        ),
        (
            f'[gateway.clients.ed]\ntoken_sha256 = "{DIGEST}"\nmodels = ["anthropic/../x"]\n',
            "gateway.clients.ed.models",
            "has a bad model id",
        ),
        (
            f'[gateway.clients.ed]\ntoken_sha256 = "{DIGEST}"\nendpoints = "anthropic"\n',
            "gateway.clients.ed.endpoints",
            "must be an array of strings",
        ),
        (
            f'[gateway.clients.ed]\ntoken_sha256 = "{DIGEST}"\nmax_active = 0\n',
            "gateway.clients.ed.max_active",
            "must be an integer from 1",
        ),
        (
            f'[gateway.clients.ed]\ntoken_sha256 = "{DIGEST}"\nmax_cost = -1\n',
            "gateway.clients.ed.max_cost",
            "",
        ),
        ('[gateway.models]\nfast = "claude"\n', "gateway.models.fast", 'must be "ENDPOINT/MODEL"'),
        ('[gateway.models]\n"a/b" = "x/y"\n', "gateway.models.a/b", "no '/'"),
        ("[gateway]\ncarriers_max = 0\n", "gateway.carriers_max", "must be an integer from 1"),
        (
            '[gateway]\nstream_backlog_max = "lots"\n',
            "gateway.stream_backlog_max",
            "must be an integer from 1 to 1000000",
        ),
    ],
)
def test_a_mistake_names_the_file_and_the_key(
    tmp_path: Path, text: str, key: str, said: str
) -> None:
    path = tmp_path / "thoughtline.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert refused.value.message.startswith(f"{path}: {key}: ")
    assert said in refused.value.message


def test_a_whole_gateway_section_is_read(tmp_path: Path) -> None:
    path = tmp_path / "thoughtline.toml"
    path.write_text(
        "[gateway]\nenabled = true\ncarriers_max = 50\ncarriers_ttl_s = 60\n"
        "stream_backlog_max = 64\n"
        '[gateway.models]\nfast = "deepseek/deepseek-v4-pro"\n'
        f'[gateway.clients.ed]\ntoken_sha256 = "{DIGEST}"\nchain_of_thought = "surface"\n'
        'models = ["fast", "anthropic/*"]\nendpoints = ["deepseek", "anthropic"]\n'
        "max_cost = 2.5\nmax_active = 3\n",
        encoding="utf-8",
    )
    gateway = load_config(path).gateway
    assert (gateway.enabled, gateway.carriers_max, gateway.carriers_ttl_s) == (True, 50, 60.0)
    assert gateway.stream_backlog_max == 64
    assert gateway.models == {"fast": "deepseek/deepseek-v4-pro"}
    client = gateway.clients["ed"]
    assert (client.chain_of_thought, client.models, client.endpoints) == (
        "surface",
        ("fast", "anthropic/*"),
        ("deepseek", "anthropic"),
    )
    assert (client.max_cost, client.max_active, client.token_sha256) == (2.5, 3, DIGEST)
