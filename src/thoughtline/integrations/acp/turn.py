"""One prompt turn of an ACP session: the run's events rendered as session updates and
sent in order on the connection, with the agent's own updates (permission requests'
tool calls) in line."""

from __future__ import annotations

import asyncio
import logging

from acp.interfaces import Client

from thoughtline.integrations.acp.render import SessionUpdate, TurnRenderer
from thoughtline.records.run_events import RunEvent

logger = logging.getLogger(__name__)


class Turn:
    """One prompt's run: renders its events and sends them, in order, on the connection."""

    def __init__(self, client: Client | None, session_id: str) -> None:
        self.client = client
        self.session_id = session_id
        self.run_id: str | None = None  # known once the run is prepared
        self.cancel_requested = False
        self.handler = asyncio.current_task()
        self.renderer = TurnRenderer()
        self._queue: asyncio.Queue[SessionUpdate | None] = asyncio.Queue()
        self._sender = asyncio.ensure_future(self._send_all())

    def observe(self, event: RunEvent) -> None:
        """The runtime's observer (synchronous, on the event loop): queue, never block."""
        for update in self.renderer.render(event):
            self._queue.put_nowait(update)

    def send(self, update: SessionUpdate) -> None:
        """Queue one update of the agent's own, in order with the run's."""
        self._queue.put_nowait(update)

    async def sent(self) -> None:
        """Wait until every update queued so far was sent (a permission request must
        come after the tool call it is about)."""
        await self._queue.join()

    async def _send_all(self) -> None:
        connected = self.client is not None
        while True:
            update = await self._queue.get()
            try:
                if update is None:
                    return
                if not connected or self.client is None:
                    continue
                try:
                    await self.client.session_update(session_id=self.session_id, update=update)
                except OSError as exc:  # the client went away; the run still ends and is stored
                    logger.warning("session %s: cannot send updates (%s)", self.session_id, exc)
                    connected = False
            finally:
                self._queue.task_done()

    async def finish(self) -> None:
        """Send everything queued; the prompt's result must come after its updates."""
        self._queue.put_nowait(None)
        await self._sender

    def abort(self) -> None:
        self._sender.cancel()
