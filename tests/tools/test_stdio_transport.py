"""The stdio transport's line cutting, without a process: what it keeps of a line over the
limit, and what it hands the session in its place."""

from __future__ import annotations

import json

import mcp_types
from mcp.shared.message import SessionMessage

from thoughtline.tools.stdio_transport import CUT_META_KEY, LineCutter, cut_message, first_text


def test_lines_under_the_limit_come_whole_across_chunks() -> None:
    cutter = LineCutter(limit=10)
    assert list(cutter.feed(b"ab")) == []
    assert list(cutter.feed(b"c\nde\n\nf")) == [(b"abc", b"", 3), (b"de", b"", 2), (b"", b"", 0)]
    assert list(cutter.feed(b"g\n")) == [(b"fg", b"", 2)]


def test_a_line_over_the_limit_keeps_its_head_and_tail_only() -> None:
    cutter = LineCutter(limit=8)
    pieces = [b"0123456789" * 100] * 1000  # a 1 MB line, fed in 1 kB chunks
    lines = [line for piece in pieces for line in cutter.feed(piece)]
    assert lines == []
    ((head, tail, size),) = list(cutter.feed(b"END\n"))
    assert (head, size) == (b"01234567", 1_000_003)
    assert tail.endswith(b"789END") and len(tail) == 256


def test_a_cut_tool_answer_becomes_an_error_result_with_its_first_text() -> None:
    text = 'é\\"quoted" and more ' * 10
    line = json.dumps(
        {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": text}]}}
    ).encode()
    head, size = line[:120], len(line)
    item = cut_message(head, line[-256:], size, limit=120, methods={7: "tools/call"})
    assert isinstance(item, SessionMessage)
    message = item.message
    assert isinstance(message, mcp_types.JSONRPCResponse)
    assert message.id == 7
    result = mcp_types.CallToolResult.model_validate(message.result)
    assert result.is_error is True
    assert result.meta == {CUT_META_KEY: size}
    (block,) = result.content
    assert isinstance(block, mcp_types.TextContent)
    assert block.text and text.startswith(block.text)


def test_the_id_is_found_where_a_server_writes_it_last() -> None:
    line = b'{"result":{"tools":[' + b"x" * 500 + b']},"jsonrpc":"2.0","id":"list-1"}'
    item = cut_message(
        line[:40], line[-256:], len(line), limit=40, methods={"list-1": "tools/list"}
    )
    assert isinstance(item, SessionMessage)
    assert isinstance(item.message, mcp_types.JSONRPCError)
    assert item.message.id == "list-1"
    assert "tools/list was 553 bytes, over the limit of 40" in item.message.error.message


def test_a_cut_line_answering_nothing_asked_is_dropped() -> None:
    line = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"y" * 99
    dropped = cut_message(line[:30], line[-256:], len(line), limit=30, methods={})
    assert isinstance(dropped, ValueError)
    assert "dropped" in str(dropped)


def test_first_text_stops_at_the_closing_quote_and_survives_a_cut_escape() -> None:
    assert first_text(b'{"content":[{"type":"text","text":"a\\\\"},{"text":"b"}]') == "a\\"
    assert first_text(b'{"text":"caf\\u00') == "caf"  # cut inside \u00e9
    assert first_text(b'{"type":"image"}') == ""
