"""The real app served by uvicorn on loopback, in a thread of this process.

Used by the browser tests and by the concurrency benchmark: ``serving(app)`` starts the
server on an ephemeral port, waits until it accepts connections and yields its URL and the
event loop it runs on (to run coroutines there, e.g. waiting for background work); on exit
it stops the server and closes the loop. Signal handlers stay the caller's.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI


class _Server(uvicorn.Server):
    def install_signal_handlers(self) -> None:  # the calling process keeps its own handlers
        pass


@contextmanager
def serving(
    app: FastAPI, start_timeout: float = 30.0
) -> Iterator[tuple[str, asyncio.AbstractEventLoop]]:
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + start_timeout
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the server stopped while starting")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start in {start_timeout:.0f} s")
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}", loop
    finally:
        server.should_exit = True
        thread.join(30)
        loop.close()
