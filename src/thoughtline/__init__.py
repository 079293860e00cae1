"""thoughtline: run LLM specialist tasks and decide, once, what happens to their reasoning.

The provider layer in one import::

    from thoughtline import EndpointRegistry, ModelRequest, ProviderClient, ReasoningRequest

    endpoint = EndpointRegistry().resolve("anthropic")
    async with ProviderClient(endpoint) as client:
        request = ModelRequest.simple("claude-sonnet-4-6", "Why is the sky blue?",
                                      reasoning=ReasoningRequest(enabled=True, effort="low"))
        async with client.call(request) as call:
            async for event in call:          # thoughtline.events.StreamEvent
                ...
        call.response.reasoning_parts         # kinds, text, signatures kept byte-for-byte
        call.exchange                         # redacted request/response + timings
"""

from thoughtline.accumulator import (
    ModelResponse,
    ReasoningPart,
    ResponseAccumulator,
    ToolCall,
    accumulate,
)
from thoughtline.errors import ConfigError, ProviderError, ThoughtlineError, UnknownEndpointError
from thoughtline.events import (
    Error,
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningKind,
    ReasoningStart,
    ResponseStarted,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    Warning,
)
from thoughtline.providers.capabilities import ModelCapability, builtin_capabilities
from thoughtline.providers.client import ProviderCall, ProviderClient, RetryPolicy, Timeouts
from thoughtline.providers.endpoints import Endpoint, EndpointRegistry, EndpointSettings
from thoughtline.providers.exchange import Exchange
from thoughtline.providers.redaction import Redactor
from thoughtline.requests import Effort, Message, ModelRequest, ReasoningRequest, ToolSpec

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "Effort",
    "Endpoint",
    "EndpointRegistry",
    "EndpointSettings",
    "Error",
    "Exchange",
    "Finish",
    "Message",
    "ModelCapability",
    "ModelRequest",
    "ModelResponse",
    "ProviderCall",
    "ProviderClient",
    "ProviderError",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningKind",
    "ReasoningPart",
    "ReasoningRequest",
    "ReasoningStart",
    "Redactor",
    "ResponseAccumulator",
    "ResponseStarted",
    "RetryPolicy",
    "StreamEvent",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThoughtlineError",
    "Timeouts",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolSpec",
    "UnknownEndpointError",
    "Usage",
    "Warning",
    "accumulate",
    "builtin_capabilities",
]
