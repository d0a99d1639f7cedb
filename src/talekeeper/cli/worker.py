"""``talekeeper worker``: the background work of a PostgreSQL database (adventures' memory
passes, library sources' vectors), in a process of their own.

Invariants:

- On a database whose queue is an outbox (SQLite) it refuses to start, in one sentence
  with exit status 2, before anything is opened: the in-process worker of ``talekeeper
  serve`` (or ``play``) already runs those passes.
- It builds the runtime as every command does (the migrations run, so the queue's schema
  is there), reads the world of every story from before the world was kept
  (``Runtime.read_world_backlog``, as ``serve`` does too: each is read once, by whichever
  comes first), and asks for the runs of library sources still wanting vectors
  (``LibraryIndexer.reconcile``), then runs a worker of the job queue
  (``services.background.queue``) until
  SIGTERM or SIGINT: running passes get the grace period to finish, then are handed back
  and run again by another worker. A second signal ends the process at once; its
  running jobs are then run again once the others see it silent (``--stalled-after``).
- Any number of workers, on any number of machines, may run against one database; one
  adventure's passes, or one source's vectors, never run in two places at once.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from talekeeper import __version__
from talekeeper.settings import Settings

ON_SQLITE = (
    "talekeeper: 'talekeeper worker' is for a PostgreSQL database (TALEKEEPER_DATABASE_URL); "
    "on SQLite the in-process worker of 'talekeeper serve' (or 'talekeeper play') already "
    "runs the background passes, so there is nothing to start."
)


def run(settings: Settings, args: argparse.Namespace) -> int:
    from talekeeper.services.common.database import shared_queue

    if not shared_queue(settings.resolved_database_url):
        print(ON_SQLITE, file=sys.stderr)
        return 2
    asyncio.run(_work(settings, args))
    return 0


async def _work(settings: Settings, args: argparse.Namespace) -> None:
    from talekeeper.bootstrap import Runtime
    from talekeeper.services.background import queue

    concurrency = args.concurrency or queue.CONCURRENCY
    stalled_after = args.stalled_after or queue.STALLED_AFTER
    grace = args.grace or queue.GRACE_SECONDS
    runtime = Runtime.build(settings)
    try:
        background = runtime.background
        assert isinstance(background, queue.QueuedWork)  # the database's queue is shared
        print(
            f"Talekeeper {__version__} worker: running up to {concurrency} background runs at "
            f"once (adventures' memory passes, library sources' vectors; a worker silent for "
            f"{stalled_after:g} s is taken for "
            f"dead; on SIGTERM or Ctrl-C, {grace:g} s to finish). Stop it with Ctrl-C.",
            file=sys.stderr,
            flush=True,
        )
        await asyncio.to_thread(runtime.read_world_backlog)  # stories from before the world
        if runtime.indexer is not None:
            await asyncio.to_thread(runtime.indexer.reconcile)  # sources still wanting vectors
        await background.work(
            concurrency=concurrency, stalled_after=stalled_after, grace=grace, signals=True
        )
    finally:
        await runtime.aclose()
