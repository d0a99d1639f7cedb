"""What the command line's commands share: running a command's work with a runtime, and
reading a number the player typed in the terminal game.

The commands in modules of their own (``cli.library``, ``cli.lore``) and ``cli.main``
import it from here, so ``cli.main`` (which builds the parsers of every module) is
imported by none of them.

A number typed as an argument (``number_arg``: an id, a take, a count) is ASCII digits
no larger than ``MAX_ID``; anything else is refused in one line, never passed on to the
database (which cannot hold a larger integer and would fail with a traceback).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from talekeeper.core.errors import InvalidInput
from talekeeper.services.common.limits import MAX_ID
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


def is_number(text: str) -> bool:
    # isdigit() alone accepts "²" and other digits int() refuses: ASCII only.
    return text.isascii() and text.isdigit()


def number_arg(arg: str, usage: str) -> int:
    """``arg`` as a number, or a refusal that shows ``usage`` (as ``/take N``)."""
    text = arg.strip()
    if not is_number(text):
        raise InvalidInput(f"Usage: {usage} (a number).")
    if int(text) > MAX_ID:
        raise InvalidInput(f"{text} is too large: no id, take or count is that large.")
    return int(text)
