"""Any split of a recorded stream (even inside a UTF-8 character) decodes the same."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import byte_by_byte, decode_in_pieces
from thoughtline.providers.base import StreamDecoder

from .helpers import ADAPTER, FIXTURES, context, fixture_bytes, request

STREAMS = sorted(path.name for path in FIXTURES.glob("*.sse"))


def new_decoder() -> StreamDecoder:
    return ADAPTER.new_decoder(request(), context())


def test_fixtures_contain_multibyte_characters() -> None:
    for name in STREAMS:
        if name != "blocked_stream.sse":
            assert any(byte >= 0x80 for byte in fixture_bytes(name)), name


@pytest.mark.parametrize("name", STREAMS)
def test_byte_by_byte(name: str) -> None:
    data = fixture_bytes(name)
    assert byte_by_byte(new_decoder, data) == decode_in_pieces(new_decoder, data)


@pytest.mark.parametrize("name", STREAMS)
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_any_split(name: str, data: st.DataObject) -> None:
    raw = fixture_bytes(name)
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=len(raw) - 1), max_size=12))
    assert decode_in_pieces(new_decoder, raw, cuts) == decode_in_pieces(new_decoder, raw)
