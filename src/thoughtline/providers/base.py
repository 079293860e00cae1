"""The contract every wire adapter implements, and the shared stream decoders.

An adapter is sans-IO. It never touches the network: it

1. shapes a :class:`~thoughtline.model.requests.ModelRequest` into a :class:`WireRequest`
   (URL, protocol headers, JSON body, warnings) — ``build_request``;
2. turns response bytes into :mod:`thoughtline.model.events` — ``new_decoder`` for streams,
   ``decode_body`` for a whole non-streaming body (which is translated into the same
   events, so both paths feed one accumulator);
3. maps an HTTP error response to a :class:`~thoughtline.errors.ProviderError` —
   ``parse_error``.

The transport (:mod:`thoughtline.providers.client`) does the I/O, retries, timing and
redaction for every adapter alike. Each built-in wire API implements it as one unit,
:class:`~thoughtline.providers.wire.Wire`, which also answers what else the rest of
thoughtline asks of a wire API.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from thoughtline.errors import ProviderError
from thoughtline.model.events import StreamError, StreamEvent, StreamWarning
from thoughtline.model.requests import ModelRequest
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.registry import WireApi
from thoughtline.wire.frames import (
    DEFAULT_MAX_FRAME_BYTES,
    FramingError,
    NDJSONDecoder,
    SSEDecoder,
    SSEFrame,
    event_and_data,
    parse_frame,
)
from thoughtline.wire.jsonio import MalformedJSON, loads_object
from thoughtline.wire.surrogates import SurrogateJoiner


@dataclass(frozen=True, slots=True, kw_only=True)
class CallContext:
    """Everything an adapter may consult besides the request itself."""

    endpoint: Endpoint
    capability: ModelCapability


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputBounds:
    """How many tokens a request, as a wire API sends it, lets the model generate
    (reasoning included), for a budget's worst case and output cap."""

    most: int | None
    """The output field the wire sends without a cap; ``None``: it sends none (the
    model's own limit applies)."""
    least: int = 1
    """The smallest :attr:`ModelRequest.output_cap` that keeps the request valid."""
    why: str | None = None
    """Why :attr:`least` is more than 1 (one clause, for a refusal)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WireRequest:
    """A request ready to send. ``headers`` hold protocol headers only, never credentials:
    the transport adds authentication from the endpoint, so adapters cannot leak keys."""

    url: str
    body: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    method: Literal["POST", "GET"] = "POST"
    warnings: tuple[StreamWarning, ...] = ()


class StreamDecoder(Protocol):
    """Bytes of one response stream in, events out."""

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """Events completed by this chunk (possibly none)."""
        ...

    def close(self) -> list[StreamEvent]:
        """The stream ended. Returns remaining events; if the protocol's terminal frame
        never arrived, ends with an ``StreamError`` of code ``PROVIDER_STREAM_INTERRUPTED``."""
        ...

    @property
    def finished(self) -> bool:
        """True once a terminal frame (or an error) has been decoded."""
        ...


class WireAdapter(Protocol):
    """One wire protocol. See the module docstring."""

    wire_api: WireApi

    def build_request(self, request: ModelRequest, context: CallContext) -> WireRequest: ...

    def new_decoder(self, request: ModelRequest, context: CallContext) -> StreamDecoder: ...

    def decode_body(
        self, body: bytes, request: ModelRequest, context: CallContext
    ) -> list[StreamEvent]: ...

    def parse_error(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        context: CallContext | None = None,
    ) -> ProviderError:
        """``context`` names the endpoint for messages (one adapter serves many)."""
        ...


class PayloadTranslator(ABC):
    """Turns one protocol's decoded JSON payloads into events, keeping per-stream state.

    Subclasses implement :meth:`translate` and :meth:`finish`; they set
    ``self.finished = True`` when the protocol's terminal payload arrives.
    """

    finished: bool = False

    @abstractmethod
    def translate(self, event_name: str, payload: dict[str, Any]) -> list[StreamEvent]:
        """Events for one payload. ``event_name`` is the SSE ``event:`` field or ``""``."""

    def finish(self) -> list[StreamEvent]:
        """Close parts still open after the terminal payload (called once, only when the
        stream ended properly; after an error, open parts are left open on purpose)."""
        return []


_KEPT = "What arrived is kept; try again for a full answer."
_NOTHING_KEPT = "Nothing of the answer had arrived; try again."


def interrupted_error(detail: str) -> StreamError:
    return StreamError(
        code="PROVIDER_STREAM_INTERRUPTED",
        message=f"The provider's stream ended before the response was complete ({detail}). "
        + _KEPT,
        retryable=True,
    )


def nothing_arrived(error: StreamError) -> StreamError:
    """``error`` for a call that delivered no content: an interruption must not claim
    that output was kept."""
    if error.code != "PROVIDER_STREAM_INTERRUPTED" or _KEPT not in error.message:
        return error
    return dataclasses.replace(error, message=error.message.replace(_KEPT, _NOTHING_KEPT))


def malformed_error(detail: str) -> StreamError:
    return StreamError(
        code="PROVIDER_MALFORMED_RESPONSE",
        message=f"The provider sent data thoughtline cannot read: {detail}",
        retryable=False,
    )


class _TranslatingDecoder:
    """Shared logic: framing errors, malformed JSON and missing terminal frames become
    error events; nothing is decoded after the first error."""

    __slots__ = ("_errored", "_surrogates", "_translator")

    def __init__(self, translator: PayloadTranslator) -> None:
        self._translator = translator
        self._errored = False
        self._surrogates: SurrogateJoiner | None = None  # made by the first frame needing it

    def _rescued(self, data: str | bytes) -> dict[str, Any] | None:
        """A frame the JSON parser refused, read again if it was for a lone surrogate
        (an emoji cut between two deltas: :mod:`thoughtline.wire.surrogates`)."""
        if self._surrogates is None:
            self._surrogates = SurrogateJoiner()
        return self._surrogates.loads_object(data)

    @property
    def finished(self) -> bool:
        return self._errored or self._translator.finished

    def _run(
        self, event_name: str, data: str, out: list[StreamEvent], *, tail: bool = False
    ) -> None:
        if self._errored:
            return
        try:
            payload = loads_object(data)
        except MalformedJSON as exc:
            rescued = self._rescued(data)
            if rescued is None:
                if tail:
                    # The last frame of a stream that stopped mid-frame: the connection
                    # broke, the provider did not send bad data.
                    error = interrupted_error("the stream stopped in the middle of a frame")
                    self._fail(error, out)
                else:
                    self._fail(malformed_error(str(exc)), out)
                return
            payload = rescued
        events = self._translator.translate(event_name, payload)
        out.extend(events)
        if events and isinstance(events[-1], StreamError):
            self._fail(None, out)

    def _fail(self, error: StreamError | None, out: list[StreamEvent]) -> None:
        # Parts still open stay open: the error is the last event, and the accumulator
        # marks those parts incomplete, which is the truth about them.
        self._errored = True
        if error is not None:
            out.append(error)

    def _close(self, out: list[StreamEvent]) -> list[StreamEvent]:
        if self._errored:
            return out
        if not self._translator.finished:
            self._fail(interrupted_error("no terminal event arrived"), out)
            return out
        out.extend(self._translator.finish())
        return out


_DONE = "[DONE]"
"""OpenAI's end-of-stream sentinel. Servers that serve the Responses API next to Chat
Completions (OpenRouter, LM Studio, proxies) send it after ``response.completed`` too. It
is never JSON, so it is skipped where it is not the protocol's own terminal frame: the
stream is complete when the protocol's terminal event arrived, and only then."""
_DONE_BYTES = _DONE.encode()


class SSEStreamDecoder(_TranslatingDecoder):
    """SSE framing + a translator. ``done_sentinel`` (``[DONE]``) marks the end for
    OpenAI-compatible chat streams. A frame longer than ``max_frame_bytes`` ends the
    stream with ``PROVIDER_MALFORMED_RESPONSE``."""

    __slots__ = ("_done_sentinel", "_frames", "_sentinel_bytes")

    def __init__(
        self,
        translator: PayloadTranslator,
        *,
        done_sentinel: str | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        super().__init__(translator)
        self._frames = SSEDecoder(max_frame_bytes=max_frame_bytes)
        self._done_sentinel = done_sentinel
        self._sentinel_bytes = None if done_sentinel is None else done_sentinel.encode()

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if self._errored:
            return out
        try:
            raws = self._frames.feed_raw(chunk)
        except FramingError as exc:
            self._fail(malformed_error(str(exc)), out)
            return out
        # The hot loop, written out flat: one call into the translator per frame. A frame
        # of the usual shape goes to the JSON parser as bytes (it checks the UTF-8); any
        # other, or one that does not parse, is read as text, which says what is wrong.
        translate = self._translator.translate
        sentinel = self._done_sentinel
        for raw in raws:
            shaped = event_and_data(raw)
            payload = None
            if shaped is not None:
                event_name, data = shaped
                if data and data != _DONE_BYTES and data != self._sentinel_bytes:
                    try:
                        payload = loads_object(data)
                    except MalformedJSON:
                        payload = None  # read as text below, for the error it says
            if payload is None:
                try:
                    frame = parse_frame(raw)
                except FramingError as exc:
                    self._fail(malformed_error(str(exc)), out)
                    return out
                if frame is None or not frame.data:
                    continue  # comments only, or e.g. "event: ping" with no data
                event_name, text = frame.event, frame.data
                if text == sentinel:
                    self._translator.finished = True
                    continue
                if text == _DONE:
                    continue  # see _DONE
                try:
                    payload = loads_object(text)
                except MalformedJSON as exc:
                    payload = self._rescued(text)
                    if payload is None:
                        self._fail(malformed_error(str(exc)), out)
                        return out
            events = translate(event_name, payload)
            if events:
                out += events
                if type(events[-1]) is StreamError:
                    self._errored = True
                    return out
        return out

    def _frame(self, frame: SSEFrame, out: list[StreamEvent], *, tail: bool = False) -> None:
        if self._errored:
            return
        data = frame.data
        if self._done_sentinel is not None and data == self._done_sentinel:
            self._translator.finished = True
            return
        if not data or data == _DONE:
            return  # e.g. "event: ping" with no data; see _DONE
        self._run(frame.event, data, out, tail=tail)

    def close(self) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if self._errored:
            return out
        try:
            frames = self._frames.flush()
        except FramingError:
            frames = []  # a character cut in half by the end of the stream
        for frame in frames:
            self._frame(frame, out, tail=True)
        return self._close(out)


class NDJSONStreamDecoder(_TranslatingDecoder):
    """NDJSON framing + a translator (Ollama native). A line longer than
    ``max_line_bytes`` ends the stream with ``PROVIDER_MALFORMED_RESPONSE``."""

    __slots__ = ("_lines",)

    def __init__(
        self, translator: PayloadTranslator, *, max_line_bytes: int = DEFAULT_MAX_FRAME_BYTES
    ) -> None:
        super().__init__(translator)
        self._lines = NDJSONDecoder(max_line_bytes=max_line_bytes)

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if self._errored:
            return out
        try:
            lines = self._lines.feed(chunk)
        except FramingError as exc:
            self._fail(malformed_error(str(exc)), out)
            return out
        for line in lines:
            self._run("", line, out)
        return out

    def close(self) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if self._errored:
            return out
        try:
            lines = self._lines.flush()
        except FramingError:
            lines = []  # a character cut in half by the end of the stream
        for line in lines:
            self._run("", line, out, tail=True)
        return self._close(out)


def decode_single_payload(body: bytes, translator: PayloadTranslator) -> list[StreamEvent]:
    """A non-streaming body that is shaped like one stream payload (Gemini, Ollama):
    the same translator, then ``finish``. An error stays the last event and leaves
    open parts open, exactly as in a stream."""
    try:
        payload = loads_object(body)
    except MalformedJSON as exc:
        return [malformed_error(str(exc))]
    events = translator.translate("", payload)
    if events and isinstance(events[-1], StreamError):
        return events
    events.extend(translator.finish())
    return events


def decode_whole(decoder: StreamDecoder, body: bytes) -> list[StreamEvent]:
    """Run a complete body through a stream decoder (used for recorded streams)."""
    return [*decoder.feed(body), *decoder.close()]
