"""A stored request delta rebuilds the body it was taken from: the general comparison
(any field set, unset or changed, a list cut anywhere) and the fast path a loop's
requests take (values appended to one list, found from the texts), which gives the same
delta or declines, never a wrong one."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from thoughtline.records import TraceEvent
from thoughtline.records.raw_requests import (
    appended,
    apply_delta,
    request_delta,
    with_request_bodies,
)

BASE: dict[str, Any] = {
    "model": "m",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "a ] , [ b"}],
    "tools": [{"name": "t", "input_schema": {"type": "object"}}],
    "stream": True,
}


def text(body: dict[str, Any]) -> str:
    return orjson.dumps(body).decode()


@pytest.mark.parametrize(
    "after",
    [
        {**BASE, "messages": [*BASE["messages"], {"role": "assistant", "content": "c"}]},
        {**BASE, "max_tokens": 200},
        {key: value for key, value in BASE.items() if key != "stream"},
        {**BASE, "system": "new"},
        {**BASE, "messages": [{"role": "user", "content": "changed"}, {"role": "x"}]},
        {**BASE, "messages": []},
        {**BASE, "tools": "no longer a list"},
    ],
)
def test_a_delta_rebuilds_the_body_it_was_taken_from(after: dict[str, Any]) -> None:
    delta = request_delta(BASE, after)
    assert apply_delta(BASE, delta) == after
    # Stored and read back as JSON, it still does.
    assert apply_delta(BASE, orjson.loads(orjson.dumps(delta))) == after


@pytest.mark.parametrize("key", ["messages", "tools"])
def test_values_appended_to_one_list_are_found_from_the_texts(key: str) -> None:
    added = [{"role": "assistant", "content": 'say "]," then }'}, 3, None, "x"]
    after = {**BASE, key: [*BASE[key], *added]}
    found = appended(text(BASE), BASE, text(after))
    assert found is not None
    body, delta = found
    assert body == after == orjson.loads(text(after))
    assert delta == {"lists": {key: [1, added]}, "set": {}, "unset": []}
    assert apply_delta(BASE, delta) == after


@pytest.mark.parametrize(
    "after",
    [
        # An earlier value changed as well as values appended.
        {**BASE, "messages": [{"role": "user", "content": "other"}, {"role": "x"}]},
        # A later field changed.
        {**BASE, "messages": [*BASE["messages"], {"role": "x"}], "stream": False},
        # An earlier field changed.
        {**BASE, "max_tokens": 7, "messages": [*BASE["messages"], {"role": "x"}]},
        # Nothing appended.
        BASE,
        # A new field.
        {**BASE, "extra": [1]},
    ],
)
def test_anything_but_values_appended_is_left_to_the_full_comparison(
    after: dict[str, Any],
) -> None:
    assert appended(text(BASE), BASE, text(after)) is None
    assert apply_delta(BASE, request_delta(BASE, after)) == after


def test_text_that_only_looks_appended_is_declined() -> None:
    # The same length changes as an appended value, but the new text closes the list and
    # opens a field: not values of the list.
    previous = text(BASE)
    end = previous.index('],"tools"')
    forged = previous[:end] + ',1],"x":[2' + previous[end:]
    assert orjson.loads(forged)["x"] == [2]
    assert appended(previous, BASE, forged) is None


def _exchange(event_id: str, metadata: dict[str, Any]) -> TraceEvent:
    return TraceEvent(
        id=event_id,
        run_id="run_x",
        task_id="task_x",
        type="provider.exchange",
        layer="provider_raw",
        at="2026-12-03T00:00:00.000Z",
        metadata=metadata,
    )


def test_a_chain_of_deltas_is_read_whole_and_an_orphan_as_stored() -> None:
    second = {**BASE, "messages": [*BASE["messages"], {"role": "assistant", "content": "b"}]}
    third = {**second, "max_tokens": 5, "messages": [*second["messages"], {"role": "user"}]}
    events = [
        _exchange("evt_1", {"method": "POST", "request_body": text(BASE), "status": 200}),
        _exchange(
            "evt_2",
            {"method": "POST", "request_delta": {"after": "evt_1", **request_delta(BASE, second)}},
        ),
        _exchange(
            "evt_3",
            {"method": "POST", "request_delta": {"after": "evt_2", **request_delta(second, third)}},
        ),
    ]
    whole = with_request_bodies(events)
    assert [orjson.loads(event.metadata["request_body"]) for event in whole] == [
        BASE, second, third,
    ]  # fmt: skip
    assert list(whole[1].metadata) == ["method", "request_body"]
    # The first expired: the next reads as stored, and so does the one after it.
    assert with_request_bodies(events[1:]) == events[1:]
