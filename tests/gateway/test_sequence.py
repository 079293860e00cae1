"""Parts that interleave in the event model stream one at a time in Messages and
Responses: each event passes the sequencer once, every part's events stay together and
in order, parts in the order they opened."""

from __future__ import annotations

from thoughtline.gateway.dialects._sequence import Sequencer
from thoughtline.model.events import StreamEvent, TextDelta, TextEnd, TextStart, Usage


def test_interleaved_parts_come_out_whole_in_opening_order_each_event_once() -> None:
    parts = ("a", "b", "c")
    events: list[StreamEvent] = [TextStart(part_id=part) for part in parts]
    for number in range(10_000):
        events.extend(TextDelta(part_id=part, text=f"{part}{number}") for part in parts)
    events.append(Usage(output_tokens=1))
    events.extend(TextEnd(part_id=part) for part in reversed(parts))
    sequencer = Sequencer()
    out: list[StreamEvent] = []
    for event in events:
        out.extend(sequencer.push(event))
    out.extend(sequencer.flush())
    assert len(out) == len(events)  # each event once: linear in the events
    order = [part for event in out if (part := getattr(event, "part_id", None))]
    runs = [
        part
        for index, part in enumerate(order)
        if part and (index == 0 or order[index - 1] != part)
    ]
    assert runs == ["a", "b", "c"]
    assert sum(isinstance(event, Usage) for event in out) == 1  # passed at once
    texts = [event.text for event in out if isinstance(event, TextDelta) and event.part_id == "b"]
    assert texts == [f"b{number}" for number in range(10_000)]


def test_parts_that_never_end_are_released_by_flush() -> None:
    sequencer = Sequencer()
    held = [TextStart(part_id="a"), TextStart(part_id="b"), TextDelta(part_id="b", text="x")]
    assert [event for e in held for event in sequencer.push(e)] == held[:1]
    assert sequencer.flush() == held[1:]
