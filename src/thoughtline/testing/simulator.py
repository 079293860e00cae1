"""The provider simulator: a real HTTP server on loopback that speaks every wire API.

Use it to test code built on thoughtline without any network or key::

    from thoughtline.testing import Simulator, SimulatorServer, Transcript, Fault

    sim = Simulator()
    sim.script(Transcript(answer="42", reasoning=(SimReasoning(kind="summary", text="..."),)))
    sim.inject(Fault.rate_limited(retry_after_s=0.1))
    with SimulatorServer(sim) as server:
        os.environ.update(server.environ())  # ANTHROPIC_BASE_URL=http://127.0.0.1:PORT/anthropic
        ...
    sim.requests                                 # every request received, for assertions
    sim.unrouted                                 # paths of requests no provider lives at

Each provider lives under its own path prefix (``/anthropic``, ``/openai``, ...) so one
server stands in for all of them at once (their token counts too:
:mod:`thoughtline.testing.counting`); :class:`~thoughtline.testing.server.SimulatorServer`
serves it and gives the base URLs to point endpoints at. Requests are
routed on the path as sent, percent-encoding kept, as a provider's server routes them
(``models/a%2Fb:generateContent`` names the model ``a/b``, not a path below ``models/a``).

The app is plain ASGI (no framework) so that faults can be exact: a connection can be
cut after a given frame, a first byte delayed, a frame corrupted, a stream held open
with keep-alive pings or in silence, a line sent that never ends.

Faults that hold a connection open end when the client goes away (or after their
``max_s``), so a test that gives up never leaves the server busy.

With nothing scripted, the default model answers
(:mod:`thoughtline.testing.default_model`): it names the model, role and request in its
answer, and when the request offers tools it calls the one that fits best, then answers
quoting the results, on every wire. ``Simulator(default_transcript=DEFAULT_TRANSCRIPT)``
answers every unscripted request with one fixed transcript instead.

Tool loops: ``sim.script_turns(tool_step, answer)`` answers the next requests in order,
and each provider enforces its round-trip rule (:mod:`thoughtline.testing.round_trips`):
a later request whose history drops, reorders, blanks or alters a reasoning carrier the
simulator handed out, or (newer Claude models) edits what came before a thinking block,
gets the provider's own status and error body, as does a request asking for more output
than its model writes (:mod:`thoughtline.testing.output_limits`).
``Simulator(strict_round_trips=False)`` answers every history; :attr:`Simulator.carriers`
records what came back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote

from thoughtline.testing import default_model
from thoughtline.testing._asgi import (
    Receive,
    Scope,
    Send,
    hold_open,
    lifespan,
    plain,
    read_body,
    start_stream,
    until_disconnected,
)
from thoughtline.testing.counting import is_count, serve_count
from thoughtline.testing.default_model import PLAIN_ANSWER, PLAIN_REASONING
from thoughtline.testing.faults import (
    Fault,
    FaultKind,
    HoldPoint,
    apply_to_frames,
    frames_before_hold,
)
from thoughtline.testing.output_limits import output_refusal
from thoughtline.testing.renderers._json import loads_any
from thoughtline.testing.replay import SimScript
from thoughtline.testing.round_trips import CarrierBook, Rejection, RoundTripRule
from thoughtline.testing.served_models import ModelCatalogue
from thoughtline.testing.transcript import (
    FrameRole,
    SimReasoning,
    SimRequest,
    Transcript,
    WireRenderer,
)
from thoughtline.wire.jsonio import MalformedJSON, loads_object

__all__ = ["DEFAULT_TRANSCRIPT", "Fault", "FaultKind", "HoldPoint", "Profile", "Route", "Simulator"]

DEFAULT_TRANSCRIPT = Transcript(
    reasoning=(
        SimReasoning(
            kind="summary",
            text=PLAIN_REASONING,
            signature="EqQBCkYIBxgCKkDsimulatedSignature==",
        ),
    ),
    answer=PLAIN_ANSWER,
    input_tokens=40,
    reasoning_tokens=96,
)
"""One fixed turn, the same for every request: ``Simulator(default_transcript=...)``
answers with it where a test wants an answer that does not depend on the request."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """A path (regex, matched after the profile prefix) served by a renderer."""

    pattern: re.Pattern[str]
    renderer: WireRenderer
    rule: RoundTripRule | None = None  # what the provider demands back between steps


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """One simulated provider: a path prefix, its routes and its endpoint base URL suffix."""

    name: str
    base_path: str  # appended to the server URL to form the endpoint's base URL
    routes: tuple[Route, ...]
    base_url_env: str | None = None
    models: ModelCatalogue | None = None
    """The model ids it serves and how it refuses others; ``None`` serves any id (a
    llama.cpp server answers whatever a request names)."""


@dataclass(slots=True)
class _Script:
    transcript: Transcript
    profile: str | None
    model: str | None
    remaining: int | None


@dataclass(slots=True)
class _Injection:
    fault: Fault
    profile: str | None
    remaining: int


class Simulator:
    """Scripted provider behaviour. Thread-safe: the server runs in its own thread."""

    def __init__(
        self,
        *,
        default_transcript: Transcript | None = None,
        pace_s: float = 0.0,
        profiles: Mapping[str, Profile] | None = None,
        strict_round_trips: bool = True,
        any_model: bool = False,
        replay: SimScript | None = None,
    ) -> None:
        """``default_transcript`` answers every request nothing was scripted for; ``None``
        lets the default model answer each one from what it asks
        (:mod:`thoughtline.testing.default_model`). ``strict_round_trips`` makes each
        provider refuse a history whose reasoning carriers were dropped, reordered,
        blanked or altered, as the real one does (see
        :mod:`thoughtline.testing.round_trips`); off, every history is answered.
        Each provider serves the model ids thoughtline's data knows for it and refuses
        any other with its own not-found answer (:mod:`thoughtline.testing.served_models`);
        :meth:`add_models` adds ids, and ``any_model=True`` serves every id (tests that
        name made-up models). ``replay`` answers every unscripted request with a
        scripted conversation's next turn instead (:mod:`thoughtline.testing.replay`)."""
        from thoughtline.testing.profiles import default_profiles

        self.default_transcript = default_transcript
        self.pace_s = pace_s
        self.profiles: dict[str, Profile] = dict(profiles or default_profiles())
        self.requests: list[SimRequest] = []
        self.unrouted: list[str] = []
        """The path (as sent) of each request that reached no simulated provider (a 404)."""
        # Called after each streamed frame is handed to the server (benchmarks use it to
        # time delivery end to end); only for responses without an injected fault.
        self.on_frame_sent: Callable[[SimRequest, FrameRole], None] | None = None
        # What the simulated Anthropic model API reports (GET /v1/models/{id}).
        self.anthropic_models: dict[str, dict[str, Any]] = {}
        self.strict_round_trips = strict_round_trips
        self.any_model = any_model
        self.replay = replay
        # Model ids served beyond the data's: profile name (None: every profile) → ids.
        self._added_models: dict[str | None, set[str]] = {}
        # The carriers handed out and those that came back, for the round-trip rules.
        self.carriers = CarrierBook()
        self._scripts: list[_Script] = []
        self._faults: list[_Injection] = []
        self._lock = threading.Lock()

    # -- scripting ---------------------------------------------------------------
    def script(
        self,
        transcript: Transcript,
        *,
        profile: str | None = None,
        model: str | None = None,
        times: int | None = None,
    ) -> None:
        """Answer matching requests with ``transcript``; later scripts win.
        ``times=None`` keeps it for every matching request. A ``model`` named here is
        served (:meth:`add_models`)."""
        if model is not None:
            self.add_models(model, profile=profile)
        with self._lock:
            self._scripts.append(_Script(transcript, profile, model, times))

    def script_turns(
        self,
        *transcripts: Transcript,
        profile: str | None = None,
        model: str | None = None,
    ) -> None:
        """Answer the next matching requests with ``transcripts``, each once, in order:
        a tool loop's steps (e.g. a tool call, then the answer)."""
        for transcript in reversed(transcripts):
            self.script(transcript, profile=profile, model=model, times=1)

    def add_models(self, *models: str, profile: str | None = None) -> None:
        """Serve ``models`` on ``profile`` (every profile when ``None``) besides the ids
        thoughtline's data knows for it."""
        with self._lock:
            self._added_models.setdefault(profile, set()).update(models)

    def serves(self, profile: Profile, model: str) -> bool:
        """Whether ``profile`` answers a request naming ``model``."""
        if self.any_model or profile.models is None:
            return True
        with self._lock:
            added = self._added_models.get(None, set()) | self._added_models.get(
                profile.name, set()
            )
        replayed = self.replay.models if self.replay is not None else frozenset()
        return model in added or model in replayed or profile.models.knows(model)

    def inject(self, fault: Fault, *, profile: str | None = None, times: int = 1) -> None:
        """Apply ``fault`` to the next ``times`` matching requests."""
        with self._lock:
            self._faults.append(_Injection(fault, profile, times))

    def reset(self) -> None:
        with self._lock:
            self._scripts.clear()
            self._faults.clear()
            self.requests.clear()
            self.unrouted.clear()
            self._added_models.clear()
        self.carriers.clear()

    def requests_for(self, profile: str) -> list[SimRequest]:
        with self._lock:
            return [request for request in self.requests if request.profile == profile]

    def _take(self, profile: str, model: str | None) -> tuple[Transcript | None, Fault | None]:
        """The scripted (or fixed default) transcript for the request, ``None`` for the
        default model, and the fault to apply, if any."""
        with self._lock:
            transcript = self.default_transcript
            for script in reversed(self._scripts):
                if script.profile not in (None, profile):
                    continue
                if script.model not in (None, model):
                    continue
                transcript = script.transcript
                if script.remaining is not None:
                    script.remaining -= 1
                    if script.remaining <= 0:
                        self._scripts.remove(script)
                break
            return transcript, self._take_fault(profile)

    def take_fault(self, profile: str) -> Fault | None:
        """The fault injected for the next request to ``profile``, taken."""
        with self._lock:
            return self._take_fault(profile)

    def _take_fault(self, profile: str) -> Fault | None:
        for injection in self._faults:
            if injection.profile in (None, profile):
                injection.remaining -= 1
                if injection.remaining <= 0:
                    self._faults.remove(injection)
                return injection.fault
        return None

    def record(self, request: SimRequest) -> None:
        """Add ``request`` to :attr:`requests`."""
        with self._lock:
            self.requests.append(request)

    # -- ASGI ----------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        # The path as sent: ASGI's ``path`` has %2F decoded into a separator already.
        raw_path: bytes | None = scope.get("raw_path")
        path = scope["path"] if raw_path is None else raw_path.decode("latin-1")
        if scope["method"] == "GET" and path.startswith("/anthropic/v1/models"):
            await self._models(path, send)
            return
        if is_count(scope["method"], path):
            await serve_count(self, scope, receive, send, path)
            return
        match = self._route(path)
        if match is None:
            with self._lock:
                self.unrouted.append(path)
            await plain(send, 404, b'{"error": "no simulated provider at this path"}')
            return
        profile, route = match
        renderer = route.renderer
        raw_body = await read_body(receive)
        try:
            body: dict[str, Any] | None = loads_object(raw_body) if raw_body else None
        except MalformedJSON:
            await plain(send, 400, renderer.error_body(400, "request body is not JSON"))
            return
        headers = {
            key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope["headers"]
        }
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        partial = SimRequest(
            method=scope["method"],
            path=path,
            query=query,
            headers=headers,
            body=body,
            profile=profile.name,
            model=None,
            stream=False,
            raw_body=raw_body,
        )
        model = renderer.model_of(partial)
        request = SimRequest(
            method=partial.method,
            path=path,
            query=query,
            headers=headers,
            body=body,
            profile=profile.name,
            model=model,
            stream=renderer.is_stream(partial),
            raw_body=raw_body,
        )
        self.record(request)
        if model is not None and profile.models is not None and not self.serves(profile, model):
            refused: tuple[int, bytes] | None = profile.models.refuse(model)
        else:  # a model it serves: refused still when asked for more output than it writes
            refused = output_refusal(request)
        if refused is not None:
            await plain(send, *refused)
            return
        rule = route.rule if self.strict_round_trips else None
        verdict = None if rule is None else rule.check(request, self.carriers)
        if isinstance(verdict, Rejection):
            await plain(send, verdict.status, verdict.body)
            return
        scripted, fault = self._take(profile.name, model)
        if scripted is not None:
            transcript = scripted
        elif self.replay is not None:
            turn = self.replay.respond(renderer.conversation(request), model)
            if isinstance(turn, str):  # the script has no turn left for this request
                await plain(send, 400, renderer.error_body(400, turn))
                return
            transcript = turn
        else:
            transcript = default_model.respond(renderer.conversation(request), model)
        if verdict is not None:
            transcript = dataclasses.replace(
                transcript, input_transformations=verdict.input_transformations
            )
        if rule is not None and (fault is None or fault.kind != "http_error"):
            sent = loads_any(renderer.body(transcript, request))
            rule.remember(request, sent, self.carriers)
        await self._respond(send, renderer, transcript, request, fault, receive)

    async def _models(self, path: str, send: Send) -> None:
        """Anthropic's model API (``GET /v1/models`` and ``/v1/models/{id}``), answering
        from :attr:`anthropic_models` (model id → ``capabilities`` object)."""
        rest = unquote(path[len("/anthropic/v1/models") :].strip("/"))
        if not rest:
            data = [{"type": "model", "id": model_id} for model_id in self.anthropic_models]
            body = {"data": data, "has_more": False, "first_id": None, "last_id": None}
            await plain(send, 200, json.dumps(body).encode())
            return
        capabilities = self.anthropic_models.get(rest)
        if capabilities is None:
            error = {
                "type": "error",
                "error": {"type": "not_found_error", "message": f"model: {rest}"},
            }
            await plain(send, 404, json.dumps(error).encode())
            return
        info = {"type": "model", "id": rest, "display_name": rest, "capabilities": capabilities}
        await plain(send, 200, json.dumps(info).encode())

    def _route(self, path: str) -> tuple[Profile, Route] | None:
        for profile in self.profiles.values():
            prefix = f"/{profile.name}"
            if not path.startswith(prefix + "/"):
                continue
            rest = path[len(prefix) :]
            for route in profile.routes:
                if route.pattern.fullmatch(rest):
                    return profile, route
        return None

    async def _respond(
        self,
        send: Send,
        renderer: WireRenderer,
        transcript: Transcript,
        request: SimRequest,
        fault: Fault | None,
        receive: Receive,
    ) -> None:
        if fault is not None and fault.kind == "slow_first_byte":
            gone = asyncio.ensure_future(until_disconnected(receive))
            try:
                await asyncio.wait({gone}, timeout=fault.delay_s)
                if gone.done():
                    return  # the client gave up waiting
            finally:
                gone.cancel()
        if fault is not None and fault.kind == "http_error":
            headers: dict[str, str] = {}
            if fault.retry_after_s is not None:
                headers["retry-after"] = f"{fault.retry_after_s:g}"
            if fault.retry_after_ms is not None:
                headers["retry-after-ms"] = str(fault.retry_after_ms)
            await plain(
                send, fault.status, renderer.error_body(fault.status, fault.message), headers
            )
            return
        if fault is not None and fault.kind in ("keep_alive_forever", "stall", "endless_line"):
            await self._hostile(send, receive, renderer, transcript, request, fault)
            return
        if not request.stream:
            await plain(send, 200, renderer.body(transcript, request))
            return
        frames = renderer.stream_frames(transcript, request)
        await start_stream(send, renderer.stream_content_type)
        observer = self.on_frame_sent
        roles = [frame.role for frame in frames] if fault is None else None
        for index, data in enumerate(apply_to_frames(frames, renderer, fault)):
            if data is None:
                # Abort: uvicorn closes the socket without ending the chunked body, so
                # the client sees a broken stream, exactly like a dropped connection.
                raise ConnectionAbortedError("simulated connection cut")
            await send({"type": "http.response.body", "body": data, "more_body": True})
            if observer is not None and roles is not None:
                observer(request, roles[index])
            if self.pace_s:
                await asyncio.sleep(self.pace_s)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _hostile(
        self,
        send: Send,
        receive: Receive,
        renderer: WireRenderer,
        transcript: Transcript,
        request: SimRequest,
        fault: Fault,
    ) -> None:
        """Faults that keep the response going without ever finishing it."""
        content_type = renderer.stream_content_type if request.stream else "application/json"
        await start_stream(send, content_type)
        if fault.kind == "endless_line":
            block = b"data: " + b"x" * (64 * 1024 - 6)
            sent = 0
            while sent < fault.size_bytes:
                await send({"type": "http.response.body", "body": block, "more_body": True})
                sent += len(block)
                block = b"x" * len(block)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        if request.stream:
            frames = renderer.stream_frames(transcript, request)
            for data in frames_before_hold(frames, fault.at):
                await send({"type": "http.response.body", "body": data, "more_body": True})
        keep_alive = renderer.keep_alive_frame() if request.stream else b" "
        await hold_open(
            send,
            receive,
            keep_alive if fault.kind == "keep_alive_forever" else None,
            interval_s=fault.interval_s,
            max_s=fault.max_s,
        )
