"""``thoughtline serve``: the HTTP daemon (JSON API, SSE, web page)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from thoughtline._process import freeze_startup_heap, load_what_runs_use
from thoughtline.cli._context import open_runtime

if TYPE_CHECKING:
    from thoughtline.server.app import DaemonServer


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="0 = any free port.",
)
@click.option(
    "--token",
    envvar="THOUGHTLINE_TOKEN",
    help="Bearer token every /v1 request must carry (env THOUGHTLINE_TOKEN). "
    "Required to listen on a non-loopback address.",
)
@click.option(
    "--operator-token",
    envvar="THOUGHTLINE_OPERATOR_TOKEN",
    help="Bearer token for the reasoning and provider_raw trace layers "
    "(env THOUGHTLINE_OPERATOR_TOKEN); it also grants access.",
)
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    help="Allow browser requests from this origin (repeatable). No CORS by default.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests whose Host is NAME (repeatable; env THOUGHTLINE_ALLOWED_HOSTS, "
    "comma-separated). localhost, loopback addresses and --host are always answered.",
)
def serve_command(
    host: str,
    port: int,
    token: str | None,
    operator_token: str | None,
    cors_origins: tuple[str, ...],
    allowed_hosts: tuple[str, ...],
) -> None:
    """Serve runs over HTTP: /v1 JSON API, SSE live events, the web page.

    Requests naming another Host are refused (a web page could otherwise reach a
    loopback daemon through a hostname it points at 127.0.0.1); on 0.0.0.0 or :: any
    Host is answered, since a token is required there, unless --allowed-host is given.
    """
    from thoughtline.server.app import DaemonServer, bind_socket, is_loopback
    from thoughtline.server.daemon import Daemon, ServerSettings
    from thoughtline.server.guard import normalize_allowed_host

    token = token or None
    operator_token = operator_token or None
    from_env = os.environ.get("THOUGHTLINE_ALLOWED_HOSTS", "").split(",")
    names = [name for name in (*from_env, *allowed_hosts) if name.strip()]
    for name in names:
        normalize_allowed_host(name)  # a bad value stops here, with what is allowed
    if not is_loopback(host) and token is None:
        click.echo(
            f"thoughtline: refusing to listen on {host} without a token: pass --token "
            "(or set THOUGHTLINE_TOKEN), or listen on 127.0.0.1.",
            err=True,
        )
        sys.exit(2)
    settings = ServerSettings(
        host=host,
        port=port,
        token=token,
        operator_token=operator_token,
        cors_origins=cors_origins,
        allowed_hosts=tuple(dict.fromkeys(name.strip() for name in names)),
    )
    sock = bind_socket(host, port)
    _config, store, runtime = open_runtime()
    server = DaemonServer(Daemon(runtime=runtime, store=store, settings=settings), sock)
    click.echo(f"thoughtline: serving on {server.url} (API {server.url}/v1, Ctrl-C to stop)")
    sys.stdout.flush()
    load_what_serving_uses(server)
    freeze_startup_heap()
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn re-raises Ctrl-C once the shutdown is complete
        click.echo("thoughtline: daemon stopped.", err=True)
        sys.exit(130)


def load_what_serving_uses(server: DaemonServer) -> None:
    """Load uvicorn's protocol classes now, and what runs use
    (:func:`~thoughtline._process.load_what_runs_use`): about 140 modules that the first
    request and the first run imported on the event loop while other runs streamed, and
    whose objects every full garbage collection then walked. Loaded here, they are part
    of the startup heap the freeze takes out of the collector's reach."""
    server.server.config.load()
    load_what_runs_use()
