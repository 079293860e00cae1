"""Sans-IO building blocks shared by the wire adapters: framing and JSON decoding."""

from thoughtline.wire.frames import FramingError, NDJSONDecoder, SSEDecoder, SSEFrame
from thoughtline.wire.jsonio import MalformedJSON, dumps, loads_object

__all__ = [
    "FramingError",
    "MalformedJSON",
    "NDJSONDecoder",
    "SSEDecoder",
    "SSEFrame",
    "dumps",
    "loads_object",
]
