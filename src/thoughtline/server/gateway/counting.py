"""``POST /anthropic/v1/messages/count_tokens``: the input tokens a call would send,
counted by the provider itself, never estimated.

The count is asked of the route's provider through its own count API (Anthropic's
``/v1/messages/count_tokens``, Gemini's ``countTokens``;
:meth:`~thoughtline.runtime.Runtime.count_tokens`), for
the request the gateway would send on the client's call: its system, history, tools,
tool choice and the thinking the client's mode asks for. A route whose wire API has no
count API is refused ``GATEWAY_REQUEST_UNSUPPORTED``, naming it. A count is not a run
and costs nothing: it is not billed to the client's day and does not take one of its
``max_active`` calls.

The client's policy applies: the carriers the gateway keeps are put back only for a
client that sees reasoning. For any other, the turn of the tool loop in progress would
count its reasoning (Anthropic counts the thinking of the current assistant turn), and
the count would tell the size of what the mode hides; its count is of what it sent.
Thinking blocks a client sends back itself go upstream on a call only when the gateway
handed them to that client for the route (:mod:`.provenance`), and are counted only then.
"""

from __future__ import annotations

from thoughtline.config.gateway import GatewayClient
from thoughtline.errors import ThoughtlineError
from thoughtline.gateway.call import GatewayCall
from thoughtline.model.requests import ModelRequest, ReasoningRequest, ToolChoice
from thoughtline.server.gateway.bridge import SHOWS_REASONING, Bridge, task_error_status
from thoughtline.server.gateway.failure import GatewayFailure
from thoughtline.server.gateway.routing import Route


def count_request(
    bridge: Bridge, client: GatewayClient, call: GatewayCall, route: Route
) -> ModelRequest:
    """The request a call with ``call``'s input would send upstream, as the client's
    policy lets it be counted (module docstring)."""
    messages = call.messages
    if client.chain_of_thought in SHOWS_REASONING:
        messages = bridge.carriers.restore(
            client.name,
            messages,
            endpoint=route.endpoint,
            model=route.model,
            accepts=bridge.accepts_for(client),
        ).messages
    choice = call.tool_choice
    reasoning = ReasoningRequest(enabled=client.chain_of_thought != "hidden")
    if call.reasoning.effort is not None:
        reasoning = ReasoningRequest(enabled=reasoning.enabled, effort=call.reasoning.effort)
    return ModelRequest(
        model=route.model,
        system=call.system,
        messages=messages,
        reasoning=reasoning,
        tools=call.tools,
        tool_choice=None if choice is None else ToolChoice(mode=choice.mode, name=choice.name),
        stream=False,
    )


async def count_tokens(
    bridge: Bridge, client: GatewayClient, call: GatewayCall, route: Route
) -> int:
    """The provider's count of the call's input tokens; refusals as
    :class:`GatewayFailure`."""
    runtime = bridge.daemon.runtime
    try:
        if not runtime.counts_tokens(route.endpoint):
            wire_api = runtime.registry.resolve(route.endpoint).wire_api
            raise GatewayFailure(
                400,
                "GATEWAY_REQUEST_UNSUPPORTED",
                f"The gateway counts tokens only with the provider's own count API, and "
                f"{route.endpoint} speaks {wire_api}, which has none; it never estimates a "
                f"count. Go without the count for {route.asked[:200]!r}, or count with a "
                f"model of an endpoint that speaks {' or '.join(runtime.counting_wires())}.",
            )
        counted = await runtime.count_tokens(
            route.endpoint, count_request(bridge, client, call, route)
        )
    except ThoughtlineError as exc:
        raise GatewayFailure(task_error_status(exc.code), exc.code, exc.message) from None
    assert counted is not None  # the wire API counts (checked above)
    return counted
