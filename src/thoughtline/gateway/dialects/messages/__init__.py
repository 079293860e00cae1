"""Anthropic Messages (``POST …/v1/messages``) as the gateway speaks it.

Reading (``parse``): ``system`` (a string or text blocks, joined), ``messages`` of
``text``, ``tool_use`` (its ``input`` as the call's JSON arguments), ``tool_result``
(named after the ``tool_use`` it answers), and the ``thinking`` (its signature as the
carrier; empty text is Anthropic's "omitted" display, an ``encrypted`` part) and
``redacted_thinking`` (its ``data``) blocks a client sends back; ``max_tokens``
(required), ``tools`` (client tools: ``name``, ``description``, ``input_schema``),
``tool_choice`` (``any`` is ``required``; ``disable_parallel_tool_use``), ``thinking``
(``enabled`` with ``budget_tokens`` ≥ 1024, ``adaptive``, ``disabled``; ``display``),
``output_config.effort``, ``stop_sequences``, ``temperature`` (0 to 1), ``top_p``,
``stream``. ``metadata`` and ``service_tier`` are ignored, ``top_k`` is read and not
used; any other field is refused as the API refuses it ("Extra inputs are not
permitted"); images, documents, server tools, containers and MCP servers are
``GATEWAY_REQUEST_UNSUPPORTED``.

Rendering: streamed, the API's events (``message_start``, then per block
``content_block_start`` / ``_delta`` / ``_stop`` with its index, ``message_delta`` with
the stop reason and usage, ``message_stop``); a failure is an ``error`` event. Shown
reasoning is a ``thinking`` block (``thinking_delta``, its signature as a
``signature_delta`` when the provider gave one) or a ``redacted_thinking`` block; hidden,
there is no block, signature or thinking token count at all. Not streamed, one
``message``.

``count_tokens`` (``POST …/v1/messages/count_tokens``): ``parse_count_tokens`` reads the
same body less what only generation takes (no ``max_tokens``, ``stream``, sampling or
stop sequences, refused there as the API refuses them), and ``count_tokens_body`` writes
``{"input_tokens": N}``.
"""

from thoughtline.gateway.dialects.messages._read import (
    count_tokens_body,
    parse,
    parse_count_tokens,
    parse_object,
)
from thoughtline.gateway.dialects.messages._render import MessagesStream, error_response, render

__all__ = [
    "MessagesStream",
    "count_tokens_body",
    "error_response",
    "parse",
    "parse_count_tokens",
    "parse_object",
    "render",
]
