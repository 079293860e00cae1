"""Conversations in the Python API: each request continues the run before it, so every
task is sent the conversation's earlier turns.

In synchronous code a :class:`Conversation` owns its config, store and event loop::

    with thoughtline.Conversation() as chat:            # or Conversation(continues=run_id)
        first = chat.send("Design a rate limiter", roles=["architect"])
        second = chat.send("Now make it shorter")        # the architect again, with turn 1

In async code :meth:`Orchestrator.conversation <thoughtline.Orchestrator.conversation>`
gives an :class:`AsyncConversation`, whose ``send`` returns a
:class:`~thoughtline.RunHandle` as :meth:`~thoughtline.Orchestrator.start` does::

    async with thoughtline.Orchestrator.open() as orchestrator:
        chat = orchestrator.conversation()
        first = await chat.send("Design a rate limiter")
        handle = chat.send("Now make it shorter")
        async for event in handle:                      # live events of the follow-up
            ...
        second = await handle

A follow-up runs the previous run's tasks again unless ``roles`` names others, and keeps
the mode chosen for it; every other argument is as for
:meth:`~thoughtline.Orchestrator.start`, and wins. A conversation is the chain of runs in
the store (``Run.conversation_id``, ``Run.continues``): these objects only remember which
run the next request continues.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Unpack

from thoughtline._blocking import BlockingRunner
from thoughtline.api.orchestrator import Orchestrator, RunHandle, _run_id, run_options
from thoughtline.runtime import SendKeywords

if TYPE_CHECKING:
    from thoughtline.config import Config
    from thoughtline.records import Run

__all__ = ["AsyncConversation", "Conversation"]


class _Turns:
    """What both conversations remember: the run the next request continues."""

    def __init__(self, continues: str | None) -> None:
        self._next: str | None = None if continues is None else _run_id(continues)
        self._last: Run | None = None

    @property
    def continues(self) -> str | None:
        """The id of the run the next request continues (as given, until the first
        send); ``None``: it starts a new conversation."""
        return self._next

    @property
    def last(self) -> Run | None:
        """The run the last ``send`` started (its live record while it runs, for an
        :class:`AsyncConversation`)."""
        return self._last


class AsyncConversation(_Turns):
    """A conversation on the running event loop: each :meth:`send` continues the run the
    previous one started. Made by :meth:`Orchestrator.conversation
    <thoughtline.Orchestrator.conversation>`."""

    def __init__(self, orchestrator: Orchestrator, continues: str | None = None) -> None:
        super().__init__(continues)
        self.orchestrator = orchestrator

    def send(self, request: str, **options: Unpack[SendKeywords]) -> RunHandle:
        """Start ``request`` as the conversation's next turn: await the handle for the
        final run, or iterate it for live events. The arguments are those of
        :meth:`Orchestrator.start <thoughtline.Orchestrator.start>`. A send before the
        previous run has ended raises ``CONVERSATION_RUN_ACTIVE``; bad input raises with
        nothing stored and the conversation where it was."""
        handle = self.orchestrator.start(request, **options, continues=self._next)
        self._last = handle.run
        self._next = handle.run_id
        return handle


class Conversation(_Turns):
    """A conversation in synchronous code: each :meth:`send` runs a request to its end as
    a follow-up of the previous one and returns the final :class:`~thoughtline.Run`.

    It opens a config and store as :func:`thoughtline.run` does (``config``,
    ``environ``) and keeps them, with an event loop, until :meth:`close` (``with`` does
    it). ``continues`` (a run id in any form: whole, short, a unique start, ``latest``)
    picks up an earlier conversation. Made where an event loop already runs (Jupyter),
    it runs on a loop of its own, in a thread of its own."""

    def __init__(
        self,
        continues: str | None = None,
        *,
        config: Config | str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(continues)
        self._closed = False
        self._runner = BlockingRunner()
        try:
            self._orchestrator = self._runner.run(_open(config, environ))
        except BaseException:
            self._runner.close()
            raise

    def send(self, request: str, **options: Unpack[SendKeywords]) -> Run:
        """Run ``request`` to its end as the conversation's next turn and return the
        final run; the next send continues it, whatever its status. The arguments are
        those of :func:`thoughtline.run`. Bad input raises with nothing stored and the
        conversation where it was; so does Ctrl-C, once the run has ended ``cancelled``
        (what arrived is kept in the store)."""
        if self._closed:
            raise RuntimeError("this Conversation is closed")
        given = run_options(request, {**options, "continues": self._next})
        run = self._runner.run(self._orchestrator._run_to_end(given))
        self._last = run
        self._next = run.id
        return run

    def close(self) -> None:
        """Close the store (flushing telemetry) and the event loop."""
        if self._closed:
            return
        self._closed = True
        try:
            self._runner.run(self._orchestrator.aclose())
        finally:
            self._runner.close()

    def __enter__(self) -> Conversation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


async def _open(
    config: Config | str | os.PathLike[str] | None, environ: Mapping[str, str] | None
) -> Orchestrator:
    """The orchestrator, opened on the conversation's own loop (where it will run)."""
    return Orchestrator.open(config, environ=environ)
