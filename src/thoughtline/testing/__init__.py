"""Offline testing tools: the provider simulator and its transcripts.

Needs the ``testing`` extra (``pip install 'thoughtline[testing]'``) for the HTTP server.
"""

from thoughtline.testing.conversation import SimConversation, SimTool, SimToolResult
from thoughtline.testing.round_trips import ReturnedCarrier
from thoughtline.testing.server import SimulatorServer
from thoughtline.testing.simulator import DEFAULT_TRANSCRIPT, Fault, Simulator
from thoughtline.testing.transcript import SimReasoning, SimRequest, SimToolCall, Transcript

__all__ = [
    "DEFAULT_TRANSCRIPT",
    "Fault",
    "ReturnedCarrier",
    "SimConversation",
    "SimReasoning",
    "SimRequest",
    "SimTool",
    "SimToolCall",
    "SimToolResult",
    "Simulator",
    "SimulatorServer",
    "Transcript",
]
