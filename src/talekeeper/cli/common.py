"""What the command line's commands share: running a command's work with a runtime.

The commands in modules of their own (``cli.library``, ``cli.lore``) and ``cli.main``
import it from here, so ``cli.main`` (which builds the parsers of every module) is
imported by none of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from talekeeper.settings import Settings


def with_runtime(
    settings: Settings,
    as_user: str | None,
    work: Callable[[Any, int], Awaitable[int]],
    *,
    background: bool = False,
) -> int:
    """Build the runtime, run ``work`` with it and the id of the user the command acts as
    (``cli.users.acting_user``), and always close it. ``background``: run the memory
    worker meanwhile (playing needs it; one-shot commands leave the work queued for the
    next ``serve`` or ``play``)."""
    from talekeeper.bootstrap import Runtime
    from talekeeper.cli.users import acting_user

    async def run() -> int:
        runtime = Runtime.build(settings)
        try:
            uid = await asyncio.to_thread(acting_user, runtime, as_user)
            if background:
                await runtime.start()
            return await work(runtime, uid)
        finally:
            await runtime.aclose()

    return asyncio.run(run())
