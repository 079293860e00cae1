"""Text that arrives together is shown together: the deltas of one network chunk become
one live delta per stream, in order, with exactly the text (and the held-back credential
tails) that one delta each would have carried."""

from __future__ import annotations

from pathlib import Path

import httpx2

from tests.support import anthropic_stream
from thoughtline.config import Config
from thoughtline.records.run_events import RunEvent, TaskAnswerDelta, TaskReasoningDelta
from thoughtline.runtime.engine.runner import Runtime
from thoughtline.runtime.planning.plan import RunSpec, TaskSpec
from thoughtline.store.sqlite import SQLiteStore
from thoughtline.testing.transcript import SimReasoning, Transcript

MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-canary-key-0123456789abcdef"
REASONING = "step " * 200
ANSWER = "word " * 100 + f"(the key was {KEY})"


def stream_bytes() -> bytes:
    transcript = Transcript(
        reasoning=(SimReasoning(kind="summary", text=REASONING, signature="sig"),),
        answer=ANSWER,
        chunk_chars=5,
    )
    return anthropic_stream(transcript, MODEL)


async def run_with_chunks(tmp_path: Path, chunks: list[bytes]) -> list[RunEvent]:
    class Chunks(httpx2.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[no-untyped-def]
            for chunk in chunks:
                yield chunk

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=Chunks())

    store = SQLiteStore(tmp_path / "thoughtline.db")
    runtime = Runtime(
        config=Config(path=None),
        store=store,
        environ={"ANTHROPIC_API_KEY": KEY},
        transport=httpx2.MockTransport(handler),
    )
    seen: list[RunEvent] = []
    spec = RunSpec(
        request="x",
        tasks=(TaskSpec(name="t", role="engineer", provider="anthropic", model=MODEL),),
    )
    run = await runtime.run(spec, explicit_mode="surface", observer=seen.append)
    assert run.status == "completed", run.tasks[0].error
    await runtime.aclose()
    store.close()
    return seen


def texts(events: list[RunEvent], kind: type[TaskAnswerDelta | TaskReasoningDelta]) -> list[str]:
    return [event.text for event in events if isinstance(event, kind)]


async def test_one_chunk_makes_one_delta_per_stream_with_the_same_text(tmp_path: Path) -> None:
    body = stream_bytes()
    frames = [frame + b"\n\n" for frame in body.split(b"\n\n") if frame]
    one_by_one = await run_with_chunks(tmp_path / "frames", frames)
    together = await run_with_chunks(tmp_path / "chunk", [body])
    shown = "[REDACTED]"
    for seen in (one_by_one, together):
        assert "".join(texts(seen, TaskReasoningDelta)) == REASONING
        assert "".join(texts(seen, TaskAnswerDelta)) == ANSWER.replace(KEY, shown)
        assert not any(KEY in str(event) for event in seen)
    # A frame a chunk: one delta each (reasoning 200, answer about 125 deltas of 5).
    assert len(texts(one_by_one, TaskReasoningDelta)) == 200
    # The whole stream in one chunk: one reasoning delta, then the answer (in as few
    # deltas as the redactor's held tails allow), reasoning before answer as sent.
    assert len(texts(together, TaskReasoningDelta)) == 1
    assert len(texts(together, TaskAnswerDelta)) <= 2
    kinds = [
        type(event) for event in together if isinstance(event, TaskAnswerDelta | TaskReasoningDelta)
    ]
    assert kinds[0] is TaskReasoningDelta
    assert kinds[-1] is TaskAnswerDelta
