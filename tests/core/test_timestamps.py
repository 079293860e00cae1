"""``now_iso``: the stamp of every event, cached per millisecond and per second."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from thoughtline.records import ids as records
from thoughtline.records import iso, now_iso, parse_epoch


def _at(monkeypatch: pytest.MonkeyPatch, millis: int) -> str:
    monkeypatch.setattr(records.time, "time_ns", lambda: millis * 1_000_000 + 123_456)
    return now_iso()


def test_stamps_across_millisecond_second_and_day_boundaries_match_datetimes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    midnight = int(datetime(2026, 12, 31, tzinfo=UTC).timestamp() * 1000)
    # Each step leaves one or both caches stale: the same millisecond, the next, the
    # next second, the next day (and year), a step back in time (a clock set back).
    for millis in (
        midnight - 1001,
        midnight - 1001,
        midnight - 1000,
        midnight - 1,
        midnight,
        midnight + 999,
        midnight + 1000,
        midnight + 86_400_000,
        midnight - 5,
    ):
        expected = (
            datetime.fromtimestamp(millis / 1000, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )
        assert _at(monkeypatch, millis) == expected
        assert iso(millis / 1000) == expected
        assert parse_epoch(expected) == pytest.approx(millis / 1000)


def test_stamps_sort_as_text_in_time_order(monkeypatch: pytest.MonkeyPatch) -> None:
    start = int(datetime(2026, 12, 1, 23, 59, 58, tzinfo=UTC).timestamp() * 1000)
    stamps = [_at(monkeypatch, start + step * 37) for step in range(200)]
    assert stamps == sorted(stamps)
    assert stamps[0] == "2026-12-01T23:59:58.000Z"
    assert stamps[-1] == "2026-12-02T00:00:05.363Z"
