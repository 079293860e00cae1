"""Any split of a recorded stream (even inside a UTF-8 character) decodes the same."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import byte_by_byte, decode_in_pieces

from .helpers import ADAPTER, FIXTURE_CONTEXTS, FIXTURES, decode_stream, fixture_context

STEMS = sorted(FIXTURE_CONTEXTS)


def test_every_stream_fixture_is_listed() -> None:
    assert sorted(path.stem for path in FIXTURES.glob("*.sse")) == STEMS


def test_fixtures_contain_multibyte_characters() -> None:
    multibyte = [
        stem for stem in STEMS if any(b > 0x7F for b in (FIXTURES / f"{stem}.sse").read_bytes())
    ]
    assert len(multibyte) >= 12


@pytest.mark.parametrize("stem", STEMS)
def test_byte_by_byte(stem: str) -> None:
    request, context = fixture_context(stem)
    data = (FIXTURES / f"{stem}.sse").read_bytes()
    assert byte_by_byte(lambda: ADAPTER.new_decoder(request, context), data) == decode_stream(stem)


@pytest.mark.parametrize("stem", STEMS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_splits(stem: str, data: st.DataObject) -> None:
    request, context = fixture_context(stem)
    raw = (FIXTURES / f"{stem}.sse").read_bytes()
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=len(raw) - 1), max_size=12))
    events = decode_in_pieces(lambda: ADAPTER.new_decoder(request, context), raw, cuts)
    assert events == decode_stream(stem)
