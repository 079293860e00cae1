"""OpenAI Responses (``POST …/responses``) as the gateway speaks it.

Reading (``parse``): ``instructions`` and ``system``/``developer`` input messages join
the call's instructions; ``input`` (a string, or items) becomes messages: user messages
and ``function_call_output`` items (named after the ``function_call`` they answer) are
user turns, and the assistant's messages (their ``phase`` kept), ``reasoning`` items and
``function_call`` items are one assistant turn, read as the Responses wire's decoder
reads them: a part per summary and raw text, the ``encrypted_content`` as an
``encrypted`` part, all with the item's ``id``. ``tools`` are function tools;
``tool_choice``, ``parallel_tool_calls``, ``stream``, ``store`` (recorded: the gateway
keeps no responses either way), ``include`` (``reasoning.encrypted_content`` is the one
value that changes a reply; an unknown value is refused), ``reasoning.effort`` and
``.summary``, ``max_output_tokens``, ``temperature``, ``top_p`` are read. ``metadata``,
``user``, ``truncation`` and the like are ignored; an unknown field is refused as the
API refuses it ("Unknown parameter"); ``previous_response_id``, ``conversation``,
``prompt``, ``background: true``, ``item_reference`` items, hosted tools, images and files
are ``GATEWAY_REQUEST_UNSUPPORTED``, the message saying what to send instead.

Rendering: streamed, the API's typed events, each with its ``sequence_number``:
``response.created`` and ``.in_progress``, per output item ``output_item.added``, its
deltas (``output_text``, ``function_call_arguments``, ``reasoning_summary_text``,
``reasoning_text``) with their ``.done`` and ``output_item.done``, then
``response.completed`` (``response.incomplete`` when the output was cut,
``response.failed`` after a failure) holding the whole response. Shown reasoning is a
``reasoning`` item with its summaries (raw reasoning, from servers that return it, as
``content``), and its ``encrypted_content`` only when ``include`` asked for it; hidden,
no reasoning item at all and ``reasoning_tokens: 0`` (the schema requires the number).
Not streamed, the same ``response`` object.
"""

from thoughtline.gateway.dialects.responses._read import parse, parse_object
from thoughtline.gateway.dialects.responses._render import ResponsesStream, error_response, render

__all__ = ["ResponsesStream", "error_response", "parse", "parse_object", "render"]
