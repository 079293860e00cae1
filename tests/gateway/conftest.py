"""A real daemon with its gateway on (uvicorn on 127.0.0.1, the provider simulator
upstream with its strict round-trip rules), and clients made as `gateway add-client`
makes them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import StartDaemon, home, start_daemon  # noqa: F401  (fixtures)
from tests.server.support import LiveDaemon
from thoughtline.config import Config
from thoughtline.config.gateway import GatewayClient, GatewaySettings, new_token, token_digest
from thoughtline.records import ChainOfThought


@dataclass(frozen=True, slots=True)
class Gateway:
    daemon: LiveDaemon
    tokens: dict[str, str]

    @property
    def openai_url(self) -> str:
        return f"{self.daemon.url}/openai/v1"

    def openai(self, client: str = "app", **options: Any) -> Any:
        import openai

        options.setdefault("api_key", self.tokens[client])
        return openai.OpenAI(base_url=self.openai_url, max_retries=0, **options)

    def anthropic(self, client: str = "app") -> Any:
        import anthropic

        return anthropic.Anthropic(
            base_url=f"{self.daemon.url}/anthropic", api_key=self.tokens[client], max_retries=0
        )


StartGateway = Callable[..., Gateway]


@pytest.fixture
def start_gateway(
    start_daemon: StartDaemon,  # noqa: F811
    home: Path,  # noqa: F811
    environ: dict[str, str],
) -> StartGateway:
    def start(
        clients: dict[str, dict[str, Any]] | None = None,
        models: dict[str, str] | None = None,
        tokens: dict[str, str] | None = None,
        stream_backlog_max: int | None = None,
        **config: Any,
    ) -> Gateway:
        tokens = dict(tokens or {})
        made: dict[str, GatewayClient] = {}
        for name, settings in (clients or {"app": {}}).items():
            token = tokens.setdefault(name, new_token())
            made[name] = GatewayClient(name=name, token_sha256=token_digest(token), **settings)
        gateway = GatewaySettings(enabled=True, clients=made, models=models or {})
        if stream_backlog_max is not None:
            gateway = replace(gateway, stream_backlog_max=stream_backlog_max)
        config.setdefault("trace_provider_raw", True)
        # The daemon's home holds the gateway's key and carrier digests.
        env = {**environ, "THOUGHTLINE_HOME": str(home)}
        daemon = start_daemon(env=env, config=Config(path=None, gateway=gateway, **config))
        return Gateway(daemon=daemon, tokens=tokens)

    return start


def mode_client(mode: ChainOfThought) -> dict[str, dict[str, Any]]:
    return {"app": {"chain_of_thought": mode}}
