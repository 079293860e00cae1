"""The simulator's half of each wire API, found by the wire's unit.

A wire package (``providers/<wire>/``) holds everything thoughtline knows of its
protocol; the simulator's renderer (transcripts → that protocol's bytes) and round-trip
rule (what the provider demands back) stay in the testing layer, so that no provider
package imports the testing layer, and are registered here, once per wire API.
:func:`simulated` finds them for a unit; ``tests/testing/test_simulated_wires.py`` fails
when a wire API has none. The profiles (:mod:`thoughtline.testing.profiles`) configure
them per simulated provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from thoughtline.providers.wire import Wire
from thoughtline.testing.renderers.anthropic import AnthropicRenderer
from thoughtline.testing.renderers.gemini import GeminiRenderer
from thoughtline.testing.renderers.ollama import OllamaRenderer
from thoughtline.testing.renderers.openai_chat import OpenAIChatRenderer
from thoughtline.testing.renderers.openai_responses import OpenAIResponsesRenderer
from thoughtline.testing.round_trips.anthropic import AnthropicRoundTrips
from thoughtline.testing.round_trips.chat import ChatRoundTrips
from thoughtline.testing.round_trips.gemini import GeminiRoundTrips
from thoughtline.testing.round_trips.openai_responses import ResponsesRoundTrips


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulatedWire:
    """A wire API's renderer class and round-trip rule class."""

    renderer: type
    round_trips: type


SIMULATED: Final[Mapping[str, SimulatedWire]] = {
    "anthropic-messages": SimulatedWire(
        renderer=AnthropicRenderer, round_trips=AnthropicRoundTrips
    ),
    "openai-responses": SimulatedWire(
        renderer=OpenAIResponsesRenderer, round_trips=ResponsesRoundTrips
    ),
    "openai-chat": SimulatedWire(renderer=OpenAIChatRenderer, round_trips=ChatRoundTrips),
    "gemini": SimulatedWire(renderer=GeminiRenderer, round_trips=GeminiRoundTrips),
    # Ollama checks nothing of its own: its route uses the lenient Chat rule.
    "ollama": SimulatedWire(renderer=OllamaRenderer, round_trips=ChatRoundTrips),
}
"""Wire API name → its simulator half."""


def simulated(wire: Wire) -> SimulatedWire:
    """The simulator's renderer and round-trip rule for ``wire``."""
    return SIMULATED[wire.wire_api]
