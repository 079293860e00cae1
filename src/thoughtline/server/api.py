"""The JSON API under ``/v1`` and the SSE route."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from thoughtline.records import TraceLayer, short_run_id
from thoughtline.runtime import RETRY_AFTER_S
from thoughtline.schema.run import RunSnapshot
from thoughtline.server.auth import Credentials, is_operator, require_access
from thoughtline.server.daemon import Daemon, run_not_found
from thoughtline.server.errors import ApiError
from thoughtline.server.schemas import (
    CancelAccepted,
    ErrorResponse,
    Health,
    RunCreate,
    RunCreated,
    RunList,
    ToolServerList,
    TraceEventBody,
)
from thoughtline.server.sse import (
    HEADERS,
    MAX_EVENT_ID,
    MEDIA_TYPE,
    EventStreamResponse,
    run_stream,
)


def _errors(
    *statuses: int, described: dict[int, str] | None = None
) -> dict[int | str, dict[str, Any]]:
    """The error responses of a route; ``described`` replaces the common descriptions
    where a route's statuses mean something else."""
    descriptions = {
        400: "Bad input (unknown mode, role or provider; missing key; malformed JSON; the "
        "start of a run id that several runs share, RUN_ID_AMBIGUOUS).",
        401: "Missing or wrong bearer token.",
        403: "The operator token is required for this trace layer (OPERATOR_TOKEN_REQUIRED), "
        "or a state-changing request came from another origin (CROSS_SITE_REQUEST).",
        404: "No such run.",
        409: "The run cannot be cancelled (finished, or executing in another process).",
        413: "The request body, or the request text (orchestration.max_request_bytes, "
        "default 256 KiB), is too large (REQUEST_TOO_LARGE).",
        415: "The request body is not sent as application/json.",
        421: "The Host header names a host this daemon is not served under "
        "(HOST_NOT_ALLOWED; see --allowed-host).",
        422: "The request does not match the schema (REQUEST_INVALID).",
        429: "The daemon already runs its [server] max_active_runs (SERVER_AT_CAPACITY); "
        "send the run again after the Retry-After seconds, or to another daemon.",
        503: "The daemon is shutting down, its store is unavailable, or a tool server "
        "the run needs did not start (TOOL_SERVER_UNAVAILABLE).",
        **(described or {}),
    }
    return {
        status: {"model": ErrorResponse, "description": descriptions[status]}
        for status in (401, 421, 422, *statuses)
    }


router = APIRouter(prefix="/v1", dependencies=[Depends(require_access)], tags=["runs"])


health_router = APIRouter(prefix="/v1", tags=["health"])
"""Routes without the token: a load balancer asks them, and they show no run."""

HEALTH_STORE_WAIT_S = 2.0
"""How long the health route waits for the store to answer one read before it reports
the store unavailable (a load balancer's probe must not hang)."""


async def get_daemon(request: Request) -> Daemon:
    # async: a plain function dependency would run in a worker thread (see auth.py).
    daemon: Daemon = request.app.state.daemon
    return daemon


DaemonDep = Annotated[Daemon, Depends(get_daemon)]

RUN_ID_FORMS = (
    "its full id, short id, a unique start of either (run_ may be left out), or latest; "
    "several runs matching is a 400 RUN_ID_AMBIGUOUS naming them"
)
"""How every id a route takes may be given (thoughtline.store.run_ids resolves them)."""
AMBIGUOUS = "The start of a run id that several runs share (RUN_ID_AMBIGUOUS)."
RunIdPath = Annotated[str, Path(description=f"The run: {RUN_ID_FORMS}.")]


def _links(run_id: str) -> dict[str, str]:
    base = f"/v1/runs/{run_id}"
    return {
        "self": base,
        "events": f"{base}/events",
        "cancel": f"{base}/cancel",
        "trace": f"{base}/trace",
    }


@router.post(
    "/runs",
    status_code=202,
    response_model=RunCreated,
    responses=_errors(
        400,
        403,
        404,
        409,
        410,
        413,
        415,
        429,
        503,
        described={
            404: "continues names no run (RUN_NOT_FOUND).",
            409: "The run continues names has not ended yet (CONVERSATION_RUN_ACTIVE).",
            410: "The run continues names keeps nothing to continue from: no task answered, "
            "or the answer retention removed its history (CONVERSATION_HISTORY_GONE); or a "
            "tool server it used cannot be started again (TOOL_SERVER_GONE).",
        },
    ),
    summary="Start a run",
)
async def create_run(
    body: RunCreate,
    daemon: DaemonDep,
    prefer: Annotated[
        str | None,
        Header(
            description="respond-async (RFC 7240): answer once the run is stored, "
            "before its tool servers start; the run starts them itself and tells each "
            "start (tool_server.start), and one that does not start, or a tool it does "
            "not offer, fails the run instead of the request. The answer then has "
            "Preference-Applied: respond-async."
        ),
    ] = None,
) -> JSONResponse:
    """Plan the run (bad input is a 400 with the thoughtline error code), start the tool
    servers it names and check its tool names against them (a tool a server does not
    offer is a 400), and start it in the daemon. Watch it at ``links.events``. With
    ``continues`` it is the next turn of that run's conversation; a refusal stores
    nothing. With ``Prefer: respond-async`` the answer comes before the servers start."""
    respond_async = prefers_respond_async(prefer)
    run = await daemon.start_run(body, respond_async=respond_async)
    headers = {"Location": f"/v1/runs/{run.id}"}
    if respond_async:
        headers["Preference-Applied"] = RESPOND_ASYNC
    return JSONResponse(
        {
            "id": run.id,
            "short_id": short_run_id(run.id),
            "status": "planned",
            "links": _links(run.id),
        },
        status_code=202,
        headers=headers,
    )


RESPOND_ASYNC = "respond-async"


def prefers_respond_async(prefer: str | None) -> bool:
    """Whether a ``Prefer`` header (RFC 7240: comma-separated preferences, each a token
    with an optional ``=value`` and ``;`` parameters, names case-insensitive) asks for
    ``respond-async``."""
    if not prefer:
        return False
    for preference in prefer.split(","):
        name = preference.split(";", 1)[0].split("=", 1)[0].strip()
        if name.lower() == RESPOND_ASYNC:
            return True
    return False


@router.get(
    "/runs",
    response_model=RunList,
    responses=_errors(
        400,
        404,
        described={
            400: AMBIGUOUS,
            404: "conversation names no conversation and no run (CONVERSATION_NOT_FOUND).",
        },
    ),
    summary="Recent runs, or one conversation's runs",
)
async def list_runs(
    daemon: DaemonDep,
    limit: Annotated[
        int | None,
        Query(
            ge=1,
            le=500,
            description="At most this many runs (default 20; with conversation, all of "
            "its runs, or its latest N).",
        ),
    ] = None,
    conversation: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=200,
            description="A conversation id, or any run of it given as a run id is: "
            f"{RUN_ID_FORMS}. That conversation's runs only, oldest first.",
        ),
    ] = None,
) -> JSONResponse:
    """Snapshots, newest first, including runs other processes wrote to the same store;
    with ``conversation``, that conversation's runs, oldest first (its turns in order)."""
    if conversation is not None:
        return JSONResponse({"runs": await daemon.conversation(conversation, limit)})
    return JSONResponse({"runs": await daemon.list_runs(20 if limit is None else limit)})


@router.get("/tools", response_model=ToolServerList, responses=_errors(), summary="Tool servers")
async def list_tool_servers(daemon: DaemonDep) -> JSONResponse:
    """The MCP servers configured on the daemon, by name (and their allowed tools): what
    ``tools`` of ``POST /v1/runs`` may name. A request never defines a server."""
    servers = daemon.runtime.config.mcp_servers
    listed = []
    for name in sorted(servers):
        allow = servers[name].allow
        listed.append({"name": name, "tools": None if allow is None else list(allow)})
    return JSONResponse({"servers": listed})


@router.get(
    "/runs/{run_id}",
    response_model=RunSnapshot,
    responses=_errors(400, 404, described={400: AMBIGUOUS}),
    summary="A run",
)
async def get_run(run_id: RunIdPath, daemon: DaemonDep) -> JSONResponse:
    """The run's snapshot; for runs executing in this daemon, with partial outputs."""
    return JSONResponse(await daemon.snapshot(await daemon.full_id(run_id)))


@router.post(
    "/runs/{run_id}/cancel",
    status_code=202,
    response_model=CancelAccepted,
    responses=_errors(400, 403, 404, 409, 415, described={400: AMBIGUOUS}),
    summary="Cancel a run",
)
async def cancel_run(run_id: RunIdPath, daemon: DaemonDep) -> JSONResponse:
    """Stop a run executing in this daemon; it ends ``cancelled`` with what arrived kept
    (the events stream ends with ``run.cancelled``)."""
    daemon.refuse_writes_if_damaged()  # before the store is read for a short id
    run_id = await daemon.full_id(run_id)
    await daemon.cancel(run_id)
    return JSONResponse({"id": run_id, "status": "cancelling"}, status_code=202)


@router.get(
    "/runs/{run_id}/trace",
    response_model=list[TraceEventBody],
    responses=_errors(400, 403, 404, described={400: AMBIGUOUS}),
    summary="A run's trace",
)
async def get_trace(
    run_id: RunIdPath,
    request: Request,
    daemon: DaemonDep,
    credentials: Credentials,
    layer: TraceLayer | None = None,
) -> JSONResponse:
    """Trace events in the order written. ``reasoning``, ``provider_raw`` and the
    unfiltered trace need the operator token when the daemon has one."""
    if layer != "answer" and not is_operator(request, credentials):
        raise ApiError(
            403,
            "OPERATOR_TOKEN_REQUIRED",
            "The reasoning and provider_raw layers (and the unfiltered trace) need the "
            "operator token; ask for ?layer=answer otherwise.",
        )
    events = await daemon.trace(await daemon.full_id(run_id), layer)
    return JSONResponse([event.to_dict() for event in events])


@router.get(
    "/runs/{run_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "Server-sent events: snapshot, task/answer/reasoning events, "
            "then the terminal event. Reconnect with Last-Event-ID to resume.",
            "content": {MEDIA_TYPE: {"schema": {"type": "string"}}},
        },
        **_errors(
            400,
            404,
            described={
                400: "A bad Last-Event-ID (REQUEST_INVALID), or the start of a run id "
                "that several runs share (RUN_ID_AMBIGUOUS)."
            },
        ),
    },
    summary="Live events of a run (SSE)",
)
async def run_events(
    run_id: RunIdPath,
    daemon: DaemonDep,
    last_event_id_header: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    last_event_id: Annotated[int | None, Query(ge=0, le=MAX_EVENT_ID)] = None,
) -> StreamingResponse:
    """``text/event-stream`` of the run. ``Last-Event-ID`` (or ``?last_event_id=``)
    resumes after that seq without a snapshot."""
    resume = last_event_id
    if last_event_id_header is not None and last_event_id_header.strip():
        resume = parse_event_id(last_event_id_header)
    run_id = await daemon.full_id(run_id)
    if not await daemon.exists(run_id):
        raise run_not_found(run_id)
    return EventStreamResponse(
        run_stream(daemon, run_id, resume), media_type=MEDIA_TYPE, headers=HEADERS
    )


def parse_event_id(value: str) -> int:
    """A ``Last-Event-ID`` header: ASCII digits only (``int()`` would also take ``1_0``,
    ``+1`` or other scripts' digits) and no larger than the store can hold."""
    text = value.strip()
    if not (text.isascii() and text.isdigit()):
        raise ApiError(
            400,
            "REQUEST_INVALID",
            "Last-Event-ID must be an event id: a whole number of at least 0.",
        )
    if len(text) > len(str(MAX_EVENT_ID)) or int(text) > MAX_EVENT_ID:
        raise ApiError(
            400,
            "REQUEST_INVALID",
            f"Last-Event-ID is larger than any event id (at most {MAX_EVENT_ID}).",
        )
    return int(text)


@health_router.get(
    "/health",
    response_model=Health,
    responses={503: {"model": Health, "description": "The daemon takes no runs now."}},
    summary="Whether the daemon takes runs",
)
async def health(daemon: DaemonDep) -> JSONResponse:
    """``ok`` when the daemon is serving, its store answers a read within 2 s and it
    runs fewer than ``[server] max_active_runs``; otherwise 503 (``at_capacity`` for the
    last). No token: a load balancer asks it, and it shows
    no run."""
    if daemon.closing.is_set():
        return JSONResponse({"status": "shutting_down", "store": "ok"}, status_code=503)
    problem = await daemon.store_problem(HEALTH_STORE_WAIT_S)
    if problem is not None:
        return JSONResponse(
            {"status": "unavailable", "store": problem},
            status_code=503,
            headers={"Retry-After": str(RETRY_AFTER_S)},
        )
    if daemon.runs.full:
        return JSONResponse(
            {"status": "at_capacity", "store": "ok"},
            status_code=503,
            headers={"Retry-After": str(RETRY_AFTER_S)},
        )
    return JSONResponse({"status": "ok", "store": "ok"})
