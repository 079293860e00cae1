"""The Anthropic Messages wire API (``anthropic-messages``).

Split by verb: ``_request`` shapes bodies (thinking per model family), ``_stream``
translates SSE payloads, ``_response`` replays whole bodies through the same
translator, ``_errors`` maps error bodies and in-stream errors to stable codes.
"""

from thoughtline.providers.anthropic._adapter import (
    ANTHROPIC_VERSION,
    MESSAGES_PATH,
    AnthropicMessagesAdapter,
)
from thoughtline.providers.anthropic._request import BUDGET_FOR_EFFORT, DEFAULT_MAX_TOKENS
from thoughtline.providers.anthropic._stream import FINISH_FOR_STOP_REASON

__all__ = [
    "ANTHROPIC_VERSION",
    "BUDGET_FOR_EFFORT",
    "DEFAULT_MAX_TOKENS",
    "FINISH_FOR_STOP_REASON",
    "MESSAGES_PATH",
    "AnthropicMessagesAdapter",
]
