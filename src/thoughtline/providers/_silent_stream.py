"""A stream accepted and closed without a byte: asking the server why.

Some servers say why a request cannot succeed only when it is not streamed:
llama-cpp-python answers a prompt longer than its context with HTTP 200, stream headers
and no body at all (its words reach only its own log), and retrying the stream changes
nothing. Sent once unstreamed, asking for a single token (a probe must not generate a
whole answer), the same prompt gets the server's real error, which then ends the call.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import httpx2

from thoughtline.model.events import StreamError
from thoughtline.model.requests import ModelRequest
from thoughtline.providers._attempt import AttemptOutcome
from thoughtline.providers._transport_errors import error_event
from thoughtline.providers.base import CallContext
from thoughtline.wire.jsonio import dumps_bytes

if TYPE_CHECKING:
    from thoughtline.providers.client import ProviderClient

_ERROR_BODY_BYTES = 64 * 1024


def silent_stream(request: ModelRequest, outcome: AttemptOutcome) -> bool:
    """Whether this attempt was a stream the server accepted and closed without a byte."""
    error = outcome.error
    return (
        request.stream
        and error is not None
        and error.code == "PROVIDER_STREAM_INTERRUPTED"
        and outcome.status is not None
        and outcome.status < 400
        and outcome.received_bytes == 0
    )


async def ask_unstreamed(
    client: ProviderClient,
    request: ModelRequest,
    context: CallContext,
    headers: dict[str, str],
) -> StreamError | None:
    """The server's own error for ``request`` sent once unstreamed for one token;
    ``None`` when it answers that request or cannot be reached: the stream is then
    retried as usual."""
    probe = replace(request, stream=False, max_output_tokens=1)
    wire = client.adapter.build_request(probe, context)
    response = None
    # The pooled connection may be the one the server just dropped, and a server that
    # serves one request at a time may still be unwinding the stream: a few tries.
    for pause_s in (0.0, 0.1, 0.5):
        await client._sleep(pause_s)
        try:
            response = await client._http.post(
                wire.url,
                headers=headers,
                content=dumps_bytes(wire.body),
                timeout=client.timeouts.for_httpx(),
            )
            break
        except httpx2.TransportError:  # read, write or protocol error on that connection
            continue
        except httpx2.HTTPError:
            return None
    if response is None or response.status_code < 400:
        return None
    error = client.adapter.parse_error(
        response.status_code, response.headers, response.content[:_ERROR_BODY_BYTES], context
    )
    said = error_event(error)
    return replace(
        said,
        message=f"{said.message} (The server closed the stream without a byte; this is "
        "its answer to the same prompt sent unstreamed, asking for one token.)",
    )
