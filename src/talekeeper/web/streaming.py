"""A turn streamed as server-sent events, detached from the connection that asked for it.

Invariants:

- The turn runs in a task of its own, not in the response. A client that leaves (a closed
  tab, a dropped connection, a proxy that gave up) stops receiving events, never the
  turn: the reply is generated and saved as if it had stayed, so a reload shows it.
- While the turn is silent (the model thinking, a queue ahead of it), the stream carries
  a comment line (``: heartbeat``) every ``heartbeat`` seconds, so proxies and load
  balancers that close idle connections (often after 30 to 60 s) keep this one open.
  A comment is not an event: clients (``ui.js``) skip it.
- Every detached turn is known to ``TurnStreams`` until it ends; shutting the app down
  waits for them (up to ``drain`` seconds) before the database and the models close, and
  only then cancels what is left, whose player action is saved and retryable as after
  any interrupted turn.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Final

from talekeeper.services.story.turns import TurnEvent
from talekeeper.web.schemas.story import event_json

log = logging.getLogger(__name__)

HEARTBEAT_S: Final = 15.0  # well under the idle timeouts of common proxies
DRAIN_S: Final = 60.0  # at shutdown: long enough for a slow local model to finish a reply
HEARTBEAT: Final = b": heartbeat\n\n"
_END: Final = None


def sse(event: TurnEvent) -> bytes:
    return f"event: {event.kind}\ndata: {json.dumps(event_json(event.data))}\n\n".encode()


class TurnStreams:
    """The app's detached turns (one per streamed turn in flight)."""

    def __init__(self, heartbeat: float = HEARTBEAT_S, drain: float = DRAIN_S) -> None:
        self.heartbeat = heartbeat
        self.drain = drain
        self._running: set[asyncio.Task[None]] = set()

    @property
    def running(self) -> int:
        return len(self._running)

    def stream(self, events: AsyncIterator[TurnEvent]) -> AsyncIterator[bytes]:
        """Start the turn whose events are ``events`` now; the stream of its bytes."""
        queue: asyncio.Queue[TurnEvent | None] = asyncio.Queue()
        task = asyncio.get_running_loop().create_task(_pump(events, queue))
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return self._relay(queue)

    async def _relay(self, queue: asyncio.Queue[TurnEvent | None]) -> AsyncIterator[bytes]:
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), self.heartbeat)
            except TimeoutError:
                yield HEARTBEAT
                continue
            if event is _END:
                return
            yield sse(event)

    async def aclose(self) -> None:
        """Wait for the turns in flight (up to ``drain`` seconds), then cancel the rest."""
        if not self._running:
            return
        pending = set(self._running)
        _, late = await asyncio.wait(pending, timeout=self.drain)
        for task in late:
            task.cancel()
        if late:
            log.warning("%d turns were still running at shutdown and were stopped", len(late))
            await asyncio.wait(late)


async def _pump(events: AsyncIterator[TurnEvent], queue: asyncio.Queue[TurnEvent | None]) -> None:
    # The queue is unbounded: a reader that left must never hold the turn back (what piles
    # up is one reply's chunks).
    try:
        async for event in events:
            queue.put_nowait(event)
    except Exception:  # ``TurnRunner.run`` turns every failure into an event; this is a bug
        log.exception("a streamed turn failed outside its own error handling")
    finally:
        queue.put_nowait(_END)
