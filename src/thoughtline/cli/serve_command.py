"""``thoughtline serve``: the HTTP daemon (JSON API, SSE, web page)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from thoughtline._process import freeze_startup_heap, load_what_runs_use
from thoughtline.cli._context import open_runtime
from thoughtline.config import thoughtline_home

if TYPE_CHECKING:
    from thoughtline.server.app import DaemonServer
    from thoughtline.store.base import Store


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
    help="Bearer token every /v1 request must carry (env THOUGHTLINE_TOKEN). Without it, "
    "a token is generated once and kept in $THOUGHTLINE_HOME/daemon.token.",
)
@click.option(
    "--no-token",
    is_flag=True,
    help="Serve without a token (loopback only): every local account can then read runs "
    "and start runs on your keys.",
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
    no_token: bool,
    operator_token: str | None,
    cors_origins: tuple[str, ...],
    allowed_hosts: tuple[str, ...],
) -> None:
    """Serve runs over HTTP: /v1 JSON API, SSE live events, the web page.

    Every /v1 request carries a bearer token: --token (or THOUGHTLINE_TOKEN), else one
    generated on first use and kept in $THOUGHTLINE_HOME/daemon.token (0600). The page's
    address is printed with the token after '#', which browsers never send to a server.

    Requests naming another Host are refused (a web page could otherwise reach a
    loopback daemon through a hostname it points at 127.0.0.1); on 0.0.0.0 or :: any
    Host is answered, since a token is required there, unless --allowed-host is given.
    """
    from thoughtline.server.app import DaemonServer, bind_socket, is_loopback
    from thoughtline.server.connections import raise_open_file_limit
    from thoughtline.server.daemon import Daemon, ServerSettings
    from thoughtline.server.daemon_token import refuse_weak_tokens, token_file
    from thoughtline.server.guard import normalize_allowed_host

    token = token or None
    operator_token = operator_token or None
    from_env = os.environ.get("THOUGHTLINE_ALLOWED_HOSTS", "").split(",")
    names = [name for name in (*from_env, *allowed_hosts) if name.strip()]
    for name in names:
        normalize_allowed_host(name)  # a bad value stops here, with what is allowed
    if no_token and token is not None:
        click.echo("thoughtline: --no-token and --token (or THOUGHTLINE_TOKEN) "
                   "contradict each other; give one.", err=True)  # fmt: skip
        sys.exit(2)
    if not is_loopback(host) and token is None:
        click.echo(
            f"thoughtline: refusing to listen on {host} without a token: pass --token "
            "(or set THOUGHTLINE_TOKEN), or listen on 127.0.0.1.",
            err=True,
        )
        sys.exit(2)
    if not is_loopback(host):
        refuse_weak_tokens(host, token, operator_token)
    sock = bind_socket(host, port)
    config, store, runtime = open_runtime()
    raise_open_file_limit(config.max_connections)
    # After the store opened: a home whose database is damaged is left as it was.
    generated, created = (None, False) if token is not None or no_token else _generated(store)
    settings = ServerSettings(
        host=host,
        port=port,
        token=token or generated,
        operator_token=operator_token,
        cors_origins=cors_origins,
        allowed_hosts=tuple(dict.fromkeys(name.strip() for name in names)),
    )
    server = DaemonServer(Daemon(runtime=runtime, store=store, settings=settings), sock)
    click.echo(f"thoughtline: serving on {server.url} (API {server.url}/v1, Ctrl-C to stop)")
    if generated is not None:
        kept = token_file(thoughtline_home())
        if created or sys.stdout.isatty():
            # The one place the token is shown: in the fragment, which no request carries;
            # only when it is made, or to a person: not at every start into a service log.
            click.echo(f"thoughtline: open {server.url}/#token={generated} (the token is "
                       f"kept in {kept})")  # fmt: skip
        else:
            click.echo(f"thoughtline: open {server.url}/#token=... with the token kept in "
                       f"{kept} (shown whole only when it is made, or on a terminal)")  # fmt: skip
    elif no_token:
        click.echo(
            "thoughtline: warning: serving without a token: every account on this machine "
            "can read the runs and their reasoning, and start runs on your API keys.",
            err=True,
        )
    sys.stdout.flush()
    load_what_serving_uses(server)
    freeze_startup_heap()
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn re-raises Ctrl-C once the shutdown is complete
        click.echo("thoughtline: daemon stopped.", err=True)
        sys.exit(130)


def _generated(store: Store) -> tuple[str, bool]:
    """The daemon's kept token, and whether it was generated now."""
    from thoughtline.server.daemon_token import load_or_create

    try:
        return load_or_create(thoughtline_home())
    except BaseException:
        store.close()
        raise


def load_what_serving_uses(server: DaemonServer) -> None:
    """Load uvicorn's protocol classes and the event loop's module (uvloop) now, and what
    runs use (:func:`~thoughtline._process.load_what_runs_use`): about 140 modules that
    the first request and the first run imported on the event loop while other runs
    streamed, and whose objects every full garbage collection then walked. Loaded here,
    they are part of the startup heap the freeze takes out of the collector's reach."""
    server.server.config.load()
    server.server.config.get_loop_factory()
    load_what_runs_use()
