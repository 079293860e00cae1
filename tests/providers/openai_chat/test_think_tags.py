"""The streaming <think> splitter: exact segments, any split, linear work."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thoughtline.providers._think_tags import Segment, SegmentKind, SplitMode
from thoughtline.providers.openai_chat import ThinkTagSplitter


def split(mode: SplitMode, pieces: list[str]) -> list[Segment]:
    splitter = ThinkTagSplitter(mode)
    out: list[Segment] = []
    for piece in pieces:
        out.extend(splitter.feed(piece))
    out.extend(splitter.flush())
    merged: list[Segment] = []
    for kind, text in out:
        assert text, "no empty segments"
        if merged and merged[-1][0] == kind:
            merged[-1] = (kind, merged[-1][1] + text)
        else:
            merged.append((kind, text))
    return merged


def reference(mode: SplitMode, content: str) -> list[Segment]:
    """A whole-string model of what the splitter must do."""
    out: list[Segment] = []

    def add(kind: SegmentKind, text: str) -> None:
        if text:
            if out and out[-1][0] == kind:
                out[-1] = (kind, out[-1][1] + text)
            else:
                out.append((kind, text))

    if mode == "auto":
        match = re.match(r"[ \t\r\n]*<think>", content)
        if match is None:
            add("text", content)
            return out
        rest = content[match.end() :]
        end = rest.find("</think>")
        if end < 0:
            add("reasoning", rest)
            return out
        add("reasoning", rest[:end])
        add("text", rest[end + len("</think>") :].lstrip(" \t\r\n"))
        return out
    position = 0
    strip = False
    while True:
        start = content.find("<think>", position)
        segment = content[position:] if start < 0 else content[position:start]
        add("text", segment.lstrip(" \t\r\n") if strip else segment)
        if start < 0:
            return out
        strip = False
        body_start = start + len("<think>")
        end = content.find("</think>", body_start)
        if end < 0:
            add("reasoning", content[body_start:])
            return out
        add("reasoning", content[body_start:end])
        position = end + len("</think>")
        strip = True


def test_tags_split_at_every_boundary() -> None:
    content = "<think>a → b</think>\n\nAnswer 日本"
    for cut in range(1, len(content)):
        assert split("think_tags", [content[:cut], content[cut:]]) == [
            ("reasoning", "a → b"),
            ("text", "Answer 日本"),
        ]


def test_character_by_character() -> None:
    content = "  <think>x<y</thinking></think>  ok"
    assert split("auto", list(content)) == [("reasoning", "x<y</thinking>"), ("text", "ok")]


def test_partial_tag_lookalikes_are_released_unchanged() -> None:
    assert split("think_tags", ["a <thi", "ng> b"]) == [("text", "a <thing> b")]
    assert split("think_tags", ["<think>x</th", "is"]) == [("reasoning", "x</this")]
    assert split("think_tags", ["tail <thin"]) == [("text", "tail <thin")]
    assert split("auto", ["<thi"]) == [("text", "<thi")]


def test_auto_mode_only_honours_a_leading_block() -> None:
    assert split("auto", ["Use <think> tags</think> like this"]) == [
        ("text", "Use <think> tags</think> like this")
    ]
    assert split("auto", ["\n <think>r</think>a <think>b</think>"]) == [
        ("reasoning", "r"),
        ("text", "a <think>b</think>"),
    ]
    assert split("auto", ["\n", " ", "Hi"]) == [("text", "\n Hi")]


def test_think_tags_mode_handles_several_blocks() -> None:
    assert split("think_tags", ["a<think>b</think> c <thi", "nk>d</think>e"]) == [
        ("text", "a"),
        ("reasoning", "b"),
        ("text", "c "),
        ("reasoning", "d"),
        ("text", "e"),
    ]


def test_unclosed_block_stays_reasoning() -> None:
    splitter = ThinkTagSplitter("think_tags")
    assert splitter.feed("<think>still going") == [("reasoning", "still going")]
    assert splitter.inside_reasoning is True


ALPHABET = st.sampled_from(
    ["<think>", "</think>", "<", "</", "<th", "think>", " ", "\n", "a", "é", "日", "🙂", ">"]
)


@settings(max_examples=200, deadline=None)
@given(
    mode=st.sampled_from(["think_tags", "auto"]),
    tokens=st.lists(ALPHABET, max_size=30),
    data=st.data(),
)
def test_any_split_matches_the_reference(
    mode: SplitMode, tokens: list[str], data: st.DataObject
) -> None:
    content = "".join(tokens)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(content)), max_size=10))))
    pieces = [
        content[start:end] for start, end in zip([0, *cuts], [*cuts, len(content)], strict=True)
    ]
    assert split(mode, pieces) == reference(mode, content)


@pytest.mark.parametrize("mode", ["think_tags", "auto"])
def test_work_is_linear(mode: SplitMode) -> None:
    def run(size: int) -> float:
        pieces = (
            ["<think>"] + ["<", "/thin", "x "] * size + ["</think>"] + ["<", "thi", "y "] * size
        )
        best = float("inf")
        for _ in range(3):
            splitter = ThinkTagSplitter(mode)
            started = time.perf_counter()
            for piece in pieces:
                splitter.feed(piece)
            splitter.flush()
            best = min(best, time.perf_counter() - started)
        return best

    run(200)  # warm up
    small, large = run(2_000), run(8_000)
    assert large < small * 10  # 4x the input; quadratic work would be ~16x


def test_one_huge_delta_is_fast() -> None:
    content = "<think>" + "a<b " * 200_000 + "</think>" + "c</d " * 200_000
    started = time.perf_counter()
    segments = split("think_tags", [content])
    assert time.perf_counter() - started < 2.0
    assert segments == [("reasoning", "a<b " * 200_000), ("text", "c</d " * 200_000)]
