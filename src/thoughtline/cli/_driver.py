"""Driving one run on this process's event loop, with Ctrl-C as a request to stop it.

From before the run is stored until it has ended, SIGINT does not raise
``KeyboardInterrupt`` wherever the program happens to be (which could leave a task
``running`` with nothing to finish it): it asks the runtime to cancel the run, so every
task ends ``cancelled`` with what arrived kept. A second Ctrl-C raises as usual.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

import click

from thoughtline._process import freeze_startup_heap
from thoughtline.records import Run
from thoughtline.runtime import RunObserver, Runtime

# Tries to reach a run whose execution has not registered yet (a few loop steps at most).
_CANCEL_TRIES = 200


class Interrupts:
    """Counts Ctrl-C presses; while a run executes, the first one cancels it."""

    def __init__(self) -> None:
        self.count = 0
        self.on_first: Callable[[], None] | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count > 1:
            raise KeyboardInterrupt  # a second Ctrl-C: stop now
        if self.on_first is not None:
            self.on_first()


@contextmanager
def catching_interrupts() -> Iterator[Interrupts]:
    """Route SIGINT to an :class:`Interrupts` for the duration (main thread only)."""
    interrupts = Interrupts()
    previous = signal.signal(signal.SIGINT, interrupts)
    try:
        yield interrupts
    finally:
        signal.signal(signal.SIGINT, previous)


def drive(
    runtime: Runtime,
    run: Run,
    observer: RunObserver | None,
    interrupts: Interrupts,
    *,
    stored: bool = True,
) -> Run:
    """Execute ``run`` to its end on a new event loop; returns it in its final state.

    ``stored=False``: ``run`` is only planned. Its tool servers are started first and its
    tool names checked against what they list, and it is stored once they are, so a
    server that does not start or a tool it lacks raises before anything is stored (as
    does a Ctrl-C meanwhile: ``click.Abort``); the run then uses those servers."""
    loop = asyncio.new_event_loop()
    tries = 0

    def cancel() -> None:
        nonlocal tries
        # False until the execution registered itself: try again on a later step.
        if not runtime.cancel(run.id) and tries < _CANCEL_TRIES:
            tries += 1
            loop.call_later(0.005, cancel)

    async def main() -> Run:
        started = None
        if not stored:
            # The servers' starts are the run's first events: the view shows them now.
            started = await runtime.start_tools(run, observer=observer)
            try:
                if interrupts.count:  # Ctrl-C while the servers started
                    raise click.Abort
                runtime.store.create_run(run)
            except BaseException:
                if started is not None:
                    await started.aclose()
                raise
        task = asyncio.ensure_future(runtime.execute(run, observer=observer, started=started))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            runtime.cancel(run.id)
            return await task

    def on_first() -> None:
        # Safe from a signal handler: it only wakes the loop through its self-pipe.
        loop.call_soon_threadsafe(cancel)

    interrupts.on_first = on_first
    if interrupts.count:  # pressed while the run was being prepared
        loop.call_soon(cancel)
    main_task = loop.create_task(main())
    freeze_startup_heap()
    try:
        return loop.run_until_complete(main_task)
    except KeyboardInterrupt:
        main_task.cancel()
        return loop.run_until_complete(main_task)
    finally:
        interrupts.on_first = None
        loop.close()


def stopper(runtime: Runtime, run_id: str) -> Callable[[], None]:
    """A callback that cancels the run from the event loop, after the current event."""

    def stop() -> None:
        asyncio.get_running_loop().call_soon(runtime.cancel, run_id)

    return stop
