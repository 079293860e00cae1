"""OpenAI Chat Completions (``POST …/chat/completions``) as the gateway speaks it.

Reading (:func:`parse`): ``system`` and ``developer`` messages join the call's
instructions in order; ``user`` text (a string or ``text`` parts) is a user message;
``tool`` messages are tool results, named after the earlier call they answer, and join
one user message with the user text that directly follows them; an ``assistant``
message is its reasoning (``reasoning_content``, or ``reasoning`` as vLLM and Ollama
spell it: raw reasoning a DeepSeek-style client sends back; or OpenRouter's
``reasoning_details``, read as the Chat Completions wire's decoder reads them), its text
and its ``tool_calls``, in that order. ``tools`` are function tools; ``tool_choice``,
``parallel_tool_calls``, ``stream``, ``stream_options.include_usage``,
``max_completion_tokens`` (or the older ``max_tokens``), ``temperature``, ``top_p``,
``stop``, ``reasoning_effort`` and DeepSeek's ``thinking`` switch are read. Fields that
change nothing here (``user``, ``metadata``, ``seed``, ``store``, penalties, …) are
ignored; a field the API does not know is refused as the API refuses it ("Unrecognized
request argument supplied"); one the gateway does not serve (images, audio, ``n`` > 1,
a response format, logprobs) is ``GATEWAY_REQUEST_UNSUPPORTED``.

Rendering: streamed, ``chat.completion.chunk`` frames (the role first, then
``content``, ``reasoning_content`` when the client's mode shows reasoning, ``tool_calls``
by index with the id and name on the first delta and the arguments as they come), a
finish chunk, a usage chunk when ``stream_options.include_usage`` asked for one, and
``data: [DONE]``; not streamed, one ``chat.completion``. A failure mid-stream is a
``data: {"error": …}`` frame, the API's own, with no ``[DONE]``.
"""

from thoughtline.gateway.dialects.chat_completions._read import parse, parse_object
from thoughtline.gateway.dialects.chat_completions._render import (
    ChatCompletionsStream,
    error_response,
    render,
)

__all__ = ["ChatCompletionsStream", "error_response", "parse", "parse_object", "render"]
