"""What each wire API takes back of an earlier turn's reasoning, once a new user prompt
follows it (a conversation's follow-up). Within one turn's tool loop every carrier goes
back (each wire's ``_history.py``); across turns the providers differ:

=========================  ================================================================
wire API / dialect         earlier turns' reasoning in a follow-up
=========================  ================================================================
Anthropic Messages         ``prefix``: on models with preserved thinking the blocks stay in
                           context, each bound to everything before it, so they go back
                           only while the prefix is unchanged (same system, tools, model
                           and earlier turns); ``never`` on the others, whose API removes
                           earlier turns' blocks from context anyway
OpenAI Responses           ``always``: reasoning items with their ``encrypted_content``
                           (``store: false`` keeps nothing server-side to point at)
Gemini                     ``always``: thought signatures on the parts they came on (the API
                           checks only the current turn's, so a missing one is allowed)
Chat, ``openrouter``       ``always``: ``reasoning_details`` as they came
Chat, DeepSeek (effort)    ``always``: ``reasoning_content`` on an assistant message with
                           tool calls must go back in every later request (an empty one
                           where the text was not kept); never on a plain answer
Chat, vLLM / llama.cpp     ``never``: their chat templates (Qwen3, DeepSeek-R1 and the
(toggle); Ollama           like) keep only the final answer of earlier turns, so earlier
                           reasoning is not sent
Chat, ``openai``           ``never``: hosted Chat Completions return no reasoning
=========================  ================================================================

Whatever the rule, a carrier goes back only to the endpoint and model that made it.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import Endpoint

EarlierReasoning: TypeAlias = Literal["always", "prefix", "never"]


def earlier_reasoning(endpoint: Endpoint, capability: ModelCapability) -> EarlierReasoning:
    """How ``endpoint``'s wire API takes back an earlier turn's reasoning (module doc)."""
    wire = endpoint.wire_api
    if wire == "anthropic-messages":
        return "prefix" if capability.preserved_thinking else "never"
    if wire in ("openai-responses", "gemini"):
        return "always"
    if wire == "openai-chat":
        if endpoint.dialect == "openrouter":
            return "always"
        if endpoint.dialect == "raw-reasoning" and capability.thinking_control == "effort":
            return "always"
    return "never"
