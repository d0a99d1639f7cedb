"""An upload read and split in a child process whose work is bounded: CPU time, memory and
wall time.

Why a process: the readers (pypdf, ebooklib, the HTML parser, the splitter) run for as
long as a file makes them. A 792 KB PDF of 5,000 pages sharing one content stream took
154 s of CPU, a 93 KB EPUB of empty tags 185 s; no check between pages can stop a single
page or chapter that takes minutes, but the kernel can stop a process.

Invariants:

- ``prepare`` runs ``store.prepare`` (read, split, terms) in a process forked from a
  forkserver: a clean single-threaded process that preloaded the readers, so a read starts
  in milliseconds and never inherits the server's threads, locks or database connections.
  Nothing is written there: the caller stores the result (``store.store``), in its own
  transaction, after the read; the upload's "no transaction open while reading" holds.
- The child sets its limits before it touches the bytes (``Bounds``): ``CPU_SECONDS`` (60)
  of CPU time, then the kernel stops it (RLIMIT_CPU); ``MEMORY_BYTES`` (1 GiB) of address
  space beyond the reader's own, after which an allocation fails (RLIMIT_AS); no core
  file. The parent waits ``WALL_SECONDS`` (120) at most, then kills it.
- Every end becomes the ``Prepared`` file or an ``InvalidInput`` that says what to do: the
  reader's own refusal; "took more than 60 seconds of work to read; split it into smaller
  files or convert it to .txt"; "needs more than 1,024 MB of memory to read"; the wall
  time passed; the reader crashed. A bug (an exception other than those) is a
  ``RuntimeError``.
- ``Readers`` lets a user have one file read at a time (``OneAtATime``, 429); the upload
  route lets ``AT_ONCE`` children read at once, every user together (the others wait), so
  uploads cost the machine at most ``AT_ONCE`` CPUs and ``AT_ONCE`` x 1 GiB.
- Where the platform has no forkserver the child is spawned; where it has no ``resource``
  module (Windows) only the wall time bounds it. As with any multiprocessing, the
  program's main module is imported there (once, by the forkserver): it must guard its
  start with ``if __name__ == "__main__"`` (the console scripts and uvicorn do).
"""

from __future__ import annotations

import functools
import multiprocessing
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext, SpawnContext
from typing import Any

from talekeeper.core.errors import InvalidInput, TalekeeperError
from talekeeper.core.tokens import BpeCounter
from talekeeper.services.common import limits
from talekeeper.services.library import store
from talekeeper.services.library.documents import CAPS, Caps
from talekeeper.services.library.store import Prepared

# A 5,000-page PDF of text reads in about 11 s, 20 million characters of text in 8 s, an
# EPUB of 23 MB of markup in 20 s (one core of a small server): 60 s is several times that.
CPU_SECONDS = 60
MEMORY_BYTES = 1024 * 1024 * 1024
WALL_SECONDS = 2.0 * CPU_SECONDS  # the machine may be busy: the CPU bound is the real one
AT_ONCE = 2  # children reading at once, every user together
_MB = 1024 * 1024
_PRELOAD = ["__main__", __name__, "pypdf", "ebooklib.epub"]


@dataclass(frozen=True)
class Bounds:
    cpu_seconds: int = CPU_SECONDS
    memory_bytes: int = MEMORY_BYTES
    wall_seconds: float = WALL_SECONDS


BOUNDS = Bounds()


class OneAtATime(TalekeeperError):
    """The user's previous upload is still being read."""

    status = 429
    code = "one_upload_at_a_time"
    retry_after = 5


def prepare(
    filename: str, data: bytes, *, caps: Caps = CAPS, bounds: Bounds | None = None
) -> Prepared:
    """``store.prepare`` in a bounded child (blocks the calling thread while it reads);
    ``bounds`` defaults to ``BOUNDS`` as it is when called."""
    bounds = bounds or BOUNDS
    name = store.clean_filename(filename)
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(
        target=_read,
        args=(sender, filename, data, caps, bounds),
        name="talekeeper-library-reader",
        daemon=True,
    )
    try:
        child.start()
        sender.close()  # the child holds the only writer: its end is the pipe's end
        outcome = _receive(receiver, bounds.wall_seconds)
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join()
    return _result(outcome, child.exitcode, name, bounds)


def _receive(receiver: Connection, wall_seconds: float) -> tuple[str, Any] | None:
    """The child's answer; ("wall", None) when it ran out of time; None when it died."""
    if not receiver.poll(wall_seconds):
        return ("wall", None)
    try:
        answer: tuple[str, Any] = receiver.recv()
    except (EOFError, OSError):
        return None
    return answer


def _result(
    outcome: tuple[str, Any] | None, exitcode: int | None, filename: str, bounds: Bounds
) -> Prepared:
    kind, value = outcome or ("died", None)
    if kind == "ok" and isinstance(value, Prepared):
        return value
    if kind == "refused":
        raise InvalidInput(str(value))
    name, split = limits.quoted(filename), "split it into smaller files"
    if not filename.lower().endswith((".txt", ".md")):
        split += " or convert it to .txt"
    if kind == "memory":
        raise InvalidInput(
            f"{name} needs more than {bounds.memory_bytes / _MB:,.0f} MB of memory to read; "
            f"{split}."
        )
    if kind == "wall":
        raise InvalidInput(
            f"{name} took more than {bounds.wall_seconds:.0f} seconds to read; {split}, or "
            "try again when the server is less busy."
        )
    if exitcode == -getattr(signal, "SIGXCPU", -1):
        raise InvalidInput(
            f"{name} took more than {bounds.cpu_seconds} seconds of work to read; {split}."
        )
    if exitcode == -getattr(signal, "SIGKILL", -1):  # the CPU backstop, or out of memory
        raise InvalidInput(
            f"{name} was stopped while being read: it took more than {bounds.cpu_seconds} "
            f"seconds of work or more memory than the server has; {split}."
        )
    if exitcode is not None and exitcode < 0:  # a crash inside a reader's C code
        raise InvalidInput(
            f"{name} cannot be read: the reader stopped on it (signal {-exitcode}). Check "
            "that the file is complete, or export it again from the program that made it."
        )
    raise RuntimeError(f"the library's reader of {name} failed (exit code {exitcode})")


def _read(sender: Connection, filename: str, data: bytes, caps: Caps, bounds: Bounds) -> None:
    """The child: limits first, then the read; one answer down the pipe. An unexpected
    exception is left to end the process (its traceback on stderr, exit code 1)."""
    _limit(bounds)
    outcome: tuple[str, Any]
    try:
        outcome = ("ok", store.prepare(filename, data, BpeCounter(), caps=caps))
    except InvalidInput as refused:
        outcome = ("refused", refused.message)
    except MemoryError:
        outcome = ("memory", None)  # the reader's objects are gone with its frames
    try:
        sender.send(outcome)
    except MemoryError:  # pickling a large result past the bound: nothing was sent yet
        sender.send(("memory", None))
    sender.close()


def _limit(bounds: Bounds) -> None:
    if sys.platform == "win32":
        return
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # SIGXCPU at the soft limit ends the process; SIGKILL one second later if it did not.
    resource.setrlimit(resource.RLIMIT_CPU, (bounds.cpu_seconds, bounds.cpu_seconds + 1))
    space = _address_space() + bounds.memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (space, space))


def _address_space() -> int:
    """The child's address space now (the interpreter, the readers, the file): the memory
    bound is counted above it, so it means the same wherever the libraries map more."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    import resource

    return pages * resource.getpagesize()


@functools.cache
def _context() -> ForkServerContext | SpawnContext:
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    # The server imports the readers once; "__main__" too, else every child would import
    # the program's main module (the whole app) again.
    context.set_forkserver_preload(_PRELOAD)
    return context


class Readers:
    """Who is having a file read now: one file per user; the parent's callers take one of
    ``AT_ONCE`` places (their own limiter, e.g. anyio's) before calling ``prepare``."""

    def __init__(self) -> None:
        self._reading: dict[int, str] = {}
        self._lock = threading.Lock()

    @contextmanager
    def claim(self, user_id: int, filename: str) -> Iterator[None]:
        name = limits.quoted(filename)
        with self._lock:
            earlier = self._reading.get(user_id)
            if earlier is not None:
                raise OneAtATime(
                    f"{limits.quoted(earlier)} is still being read: the library reads one "
                    f"file of yours at a time. Send {name} again when it is done."
                )
            self._reading[user_id] = filename
        try:
            yield
        finally:
            with self._lock:
                self._reading.pop(user_id, None)
