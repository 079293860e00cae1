"""A run's live events for synchronous code: :func:`stream` and :class:`RunStream`.

The async API iterates a :class:`~thoughtline.RunHandle`; a script, a notebook or a
synchronous web handler iterates a :class:`RunStream` instead, with a plain ``for``. The
run executes on the stream's own event loop (in the caller's thread, or in a thread of
its own where a loop already runs: :mod:`thoughtline._blocking`); each step of the
iteration takes every event that arrived meanwhile, so a fast stream costs one hop per
batch, not per delta.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Unpack

from thoughtline._blocking import BlockingRunner
from thoughtline.api.orchestrator import Orchestrator, RunHandle, run_options
from thoughtline.records.run_events import RunEvent

if TYPE_CHECKING:
    from thoughtline.config import Config
    from thoughtline.records import Run
    from thoughtline.runtime import RunKeywords, RunSpec

__all__ = ["RunStream", "stream"]


class RunStream:
    """One run's live events, in order, for a ``for`` loop; then :attr:`run`, the final
    run. Leaving early (``break``, an error, Ctrl-C) cancels the run, what arrived kept:
    use it in a ``with`` block, or call :meth:`close`."""

    def __init__(
        self, runner: BlockingRunner, orchestrator: Orchestrator, handle: RunHandle
    ) -> None:
        self._runner = runner
        self._orchestrator = orchestrator
        self._handle = handle
        self._batch: list[RunEvent] = []
        self._taken = 0  # events handed out of the batch
        self._position = 0  # events fetched from the handle
        self._run: Run | None = None
        self._closed = False

    @property
    def run_id(self) -> str:
        return self._handle.run_id

    @property
    def run(self) -> Run:
        """The final run. Before the iteration ended, waits for the run to end (the
        events not yet taken are skipped)."""
        if self._run is None:
            if self._closed:
                raise RuntimeError("this RunStream was closed before its run ended")
            self._run = self._guarded(self._handle.wait())
            self.close()
        return self._run

    def __iter__(self) -> Iterator[RunEvent]:
        return self

    def __next__(self) -> RunEvent:
        if self._taken < len(self._batch):
            event = self._batch[self._taken]
            self._taken += 1
            return event
        if self._closed:
            raise StopIteration
        self._batch = self._guarded(self._handle._events_from(self._position))
        self._taken = 0
        if not self._batch:
            self._run = self._guarded(self._handle.wait())
            self.close()
            raise StopIteration
        self._position += len(self._batch)
        return self.__next__()

    def _guarded(self, step: Any) -> Any:
        """Run one step on the loop; Ctrl-C cancels the run (and waits for it)."""
        try:
            return self._runner.run(step)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Cancel the run if it is still going (what arrived is kept), wait for it to
        end, and close the store and the loop. Idempotent."""
        if self._closed:
            return
        self._closed = True
        handle = self._handle

        async def end() -> None:
            try:
                if handle.cancel():
                    await handle.wait()
            finally:
                await self._orchestrator.aclose()

        try:
            self._runner.run(end())
        finally:
            self._runner.close()

    def __enter__(self) -> RunStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # A stream dropped mid-run (a ``break`` without ``with``) must not leave it running.
        if not getattr(self, "_closed", True):
            with contextlib.suppress(Exception):  # interpreter shutdown: nothing to tell
                self.close()


def stream(
    request: str | RunSpec,
    *,
    config: Config | str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    **options: Unpack[RunKeywords],
) -> RunStream:
    """Start a run and return its live events as a :class:`RunStream`; the arguments are
    those of :func:`thoughtline.run`. The run is stored (and its tool servers started)
    before this returns: bad input raises here, with nothing stored.

    ::

        with thoughtline.stream("Design a cache", chain_of_thought="surface") as events:
            for event in events:
                if isinstance(event, thoughtline.TaskAnswerDelta):
                    print(event.text, end="", flush=True)
        print(events.run.status)
    """
    given = run_options(request, options)
    runner = BlockingRunner()

    async def launch() -> tuple[Orchestrator, RunHandle]:
        orchestrator = Orchestrator.open(config, environ=environ)
        try:
            return orchestrator, await orchestrator._launch(given, keep_events=True)
        except BaseException:
            await orchestrator.aclose()
            raise

    try:
        orchestrator, handle = runner.run(launch())
    except BaseException:
        runner.close()
        raise
    return RunStream(runner, orchestrator, handle)
