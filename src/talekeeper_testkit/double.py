"""A real OpenAI-compatible HTTP server on loopback, used as the test double for language models.

What the double guarantees:

- It is a real HTTP/1.1 server on 127.0.0.1 (an ephemeral port, or the ``port`` given), so
  clients are exercised end to end: sockets, JSON, server-sent events, timeouts and protocol
  errors. Only the standard library.
- Endpoints under /v1: GET /models, POST /chat/completions, POST /completions, POST /embeddings,
  with the response shapes of the OpenAI API, streaming (SSE, ending with ``data: [DONE]``) and
  ``stream_options.include_usage`` included. Usage counts whitespace-separated words.
- Replies are deterministic: scripted replies are served first-in first-out to chat and completion
  requests, then ``default_reply``. ``max_tokens`` cuts a reply to that many words
  (finish_reason "length"). Stream pieces joined give back exactly the reply text.
- Embeddings come from ``embed_text``: stable in every process (sha256 feature hashing), unit
  length, and texts that share words have a higher cosine than unrelated texts.
- ``chunk_delay`` paces streamed events (default 0), so a client can go away mid-stream.
- ``reply_delay`` holds every completion (streamed or not) that long before its first
  byte (default 0): a model that takes its time, for benchmarks under realistic load.
  Embeddings are not held. ``stop()`` ends the wait.
- Every request is recorded, in arrival order, before it is answered (faulted ones included).
- Faults queued by ``fail_next`` hit the next requests to /chat/completions, /completions and
  /embeddings (never /models), one fault per request, in order; a fault queued for a ``model``
  hits only requests for that model (so background memory work cannot take a narrator's fault).
  A streaming "cut" consumes a scripted reply (it sends part of it); other faults do not;
  "timeout" answers normally, late.
- A model with a responder (``responders``; by default ``double-summary``) answers every request
  from the request itself and never takes a scripted reply: the summary model writes its
  memories and summaries deterministically while the narrator's script stays in order.
- ``stop()`` is fast and idempotent: it closes the listening socket and every open connection and
  wakes requests held back by a "timeout" fault.
- ``timings`` (default None), when set, is sent with every completion as llama-server sends
  its own (``"timings": {"prompt_n": ...}``: the prompt tokens it had to evaluate);
  ``cached_tokens`` (default None), when set, as ``usage.prompt_tokens_details.cached_tokens``,
  as vLLM and hosted APIs report a cached prefix.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
from collections import deque
from collections.abc import Callable

from talekeeper_testkit.double_http import Server
from talekeeper_testkit.double_text import (
    DIMS,
    Json,
    RecordedRequest,
    closed_port_url,
    content_text,
    embed_text,
    summarize,
)

__all__ = [
    "DIMS",
    "FAULTS",
    "Json",
    "ModelDouble",
    "RecordedRequest",
    "closed_port_url",
    "content_text",
    "embed_text",
    "summarize",
]

FAULTS = frozenset({"500", "401", "timeout", "malformed", "cut"})


class ModelDouble:
    """An OpenAI-compatible server on loopback with scripted replies and injectable faults."""

    def __init__(
        self,
        models: tuple[str, ...] = ("double-narrator", "double-embed", "double-summary"),
        api_key: str | None = None,
        default_reply: str = "The story goes on.",
        port: int = 0,
    ) -> None:
        self.port = port  # 0: a free one; another: that one (a local server's usual port)
        self.models = tuple(models)
        self.api_key = api_key
        self.default_reply = default_reply
        self.chunk_delay = 0.0  # seconds between streamed events: time for a client to leave
        self.reply_delay = 0.0  # seconds before a completion's first byte: a model thinking
        self.timings: Json | None = None  # llama-server's "timings" object, sent when set
        self.cached_tokens: int | None = None  # usage.prompt_tokens_details, sent when set
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._replies: deque[str] = deque()
        self._faults: deque[tuple[str, float, str | None]] = deque()
        self.responders: dict[str, Callable[[Json], str]] = {"double-summary": summarize}
        self._embedding_calls = 0
        self._ids = itertools.count(1)
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._url: str | None = None

    def start(self) -> ModelDouble:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = Server(self)
        self._url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        self._thread = threading.Thread(
            # A short poll: stopping waits for the loop to see the request (up to one poll).
            target=server.serve_forever,
            kwargs={"poll_interval": 0.005},
            daemon=True,
        )
        self._server = server
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every connection; safe to call more than once."""
        with self._lock:
            server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None

    def __enter__(self) -> ModelDouble:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL, ``http://127.0.0.1:PORT/v1``; kept after ``stop()`` (then nothing listens)."""
        if self._url is None:
            raise RuntimeError("ModelDouble has not been started")
        return self._url

    @property
    def embedding_calls(self) -> int:
        """Number of /embeddings requests answered successfully."""
        with self._lock:
            return self._embedding_calls

    def script(self, *replies: str) -> None:
        """Queue reply texts; each chat or completion request takes the oldest one."""
        with self._lock:
            self._replies.extend(replies)

    def fail_next(
        self, fault: str, count: int = 1, *, delay: float = 5.0, model: str | None = None
    ) -> None:
        """Queue ``fault`` for the next ``count`` requests to the chat, completion and embedding
        endpoints (for ``model`` only, when given). ``delay`` is how long a "timeout" fault
        holds the answer back."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; expected one of {sorted(FAULTS)}")
        with self._lock:
            self._faults.extend([(fault, delay, model)] * count)

    def reset(self) -> None:
        """Forget recorded requests, scripted replies and queued faults."""
        with self._lock:
            self.requests.clear()
            self._replies.clear()
            self._faults.clear()

    # Used by the request handler threads.

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _authorised(self, header: str | None) -> bool:
        return self.api_key is None or header == f"Bearer {self.api_key}"

    def _next_fault(self, model: str | None) -> tuple[str, float] | None:
        with self._lock:
            for i, (fault, delay, target) in enumerate(self._faults):
                if target is None or target == model:
                    del self._faults[i]
                    return fault, delay
            return None

    def _next_reply(self) -> str:
        with self._lock:
            return self._replies.popleft() if self._replies else self.default_reply

    def _next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def _count_embedding(self) -> None:
        with self._lock:
            self._embedding_calls += 1

    def _track(self, connection: socket.socket, open_: bool) -> None:
        with self._lock:
            if not open_:
                self._connections.discard(connection)
            elif self._stopping.is_set():  # accepted while stopping: drop it at once
                connection.shutdown(socket.SHUT_RDWR)
            else:
                self._connections.add(connection)
