"""A run's tool server starts in its snapshot (``tool_server_starts``): each server's
latest ``tool_server.start``, folded the same way by the run itself (its live
snapshot) and by every folder of its events (the daemon's page and API), so a view
opened while a server starts shows it, and every surface names its fields alike."""

from __future__ import annotations

from thoughtline.records.ids import iso, parse_epoch
from thoughtline.records.run_events import ToolServerStart
from thoughtline.records.snapshot import ToolServerStartSnapshot


def with_server_start(
    starts: list[ToolServerStartSnapshot], event: ToolServerStart
) -> list[ToolServerStartSnapshot]:
    """``starts`` with ``event``'s server as it tells (a new list; the dicts in
    ``starts`` are left as they are): a server already there keeps its place and when
    its start began, a new one is added at the end."""
    entry: ToolServerStartSnapshot = {
        "server": event.server,
        "state": event.state,
        "started_at": _began(event),
    }
    if event.state != "starting" and event.duration_ms is not None:
        entry["duration_ms"] = event.duration_ms
    if event.tools is not None:
        entry["tools"] = event.tools
    if event.error is not None:
        entry["error"] = event.error
    folded = list(starts)
    for index, known in enumerate(folded):
        if known["server"] == event.server:
            if event.state != "starting":  # the start it ends began when that one said
                entry["started_at"] = known["started_at"]
            folded[index] = entry
            return folded
    folded.append(entry)
    return folded


def _began(event: ToolServerStart) -> str:
    """When ``event``'s start began: its time, less the time the start had taken (a
    ``starting`` told by a run that joined a start under way, a start's end)."""
    if not event.duration_ms:
        return event.at
    at = parse_epoch(event.at)
    return event.at if at is None else iso(at - event.duration_ms / 1000)
