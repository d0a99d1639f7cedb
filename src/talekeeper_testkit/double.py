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

import base64
import contextlib
import hashlib
import itertools
import json
import math
import re
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import Any

DIMS = 64
FAULTS = frozenset({"500", "401", "timeout", "malformed", "cut"})

_TOKEN = re.compile(r"[a-z0-9']+")
_PIECE = re.compile(r"\s*\S+\s*")
_FAULTABLE = frozenset({"/v1/chat/completions", "/v1/completions", "/v1/embeddings"})
_AUTH_ERROR = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
_SERVER_ERROR = {"message": "injected server error", "type": "server_error"}

Json = dict[str, Any]


def _add_feature(feature: str, weight: float, vector: list[float]) -> None:
    digest = hashlib.sha256(feature.encode("utf-8")).digest()
    bucket = int.from_bytes(digest[:4], "big") % DIMS
    vector[bucket] += weight if digest[4] & 1 else -weight


def embed_text(text: str) -> list[float]:
    """Deterministic, L2-normalised vector of ``DIMS`` floats for ``text``.

    Feature hashing (sha256, stable across processes) of lowercased word tokens (weight 1.0) and
    their character trigrams (weight 0.5); the sign comes from another bit of the hash. Text with
    no tokens gets a fixed unit vector (bucket 0 = 1.0).
    """
    vector = [0.0] * DIMS
    for token in _TOKEN.findall(text.lower()):
        _add_feature("w:" + token, 1.0, vector)
        for i in range(len(token) - 2):
            _add_feature("t:" + token[i : i + 3], 0.5, vector)
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        return [1.0] + [0.0] * (DIMS - 1)
    return [v / norm for v in vector]


_SENTENCE = re.compile(r"[^.!?]+[.!?]")


def summarize(body: Json) -> str:
    """The double's summary model: the first sentence of the passage (or of the new events)
    it was given, and for a Story Summary the current summary before it. Deterministic."""
    messages = body.get("messages")
    if isinstance(messages, list) and messages:
        prompt = (
            _content_text(messages[-1].get("content")) if isinstance(messages[-1], dict) else ""
        )
    else:
        prompt = str(body.get("prompt", ""))
    sections = re.split(r"^\[([^\]\n]+)\]\s*$", prompt, flags=re.MULTILINE)
    named = {
        sections[i].strip().lower(): sections[i + 1].strip() for i in range(1, len(sections) - 1, 2)
    }
    passage = named.get("passage") or named.get("new events") or prompt
    first = _SENTENCE.findall(passage.replace("\n", " "))
    fact = (first[0] if first else passage[:200]).strip().lstrip("-> ").strip()
    current = next((v for k, v in named.items() if k.startswith("current summary")), "")
    if current and current != "(none yet)":
        return f"{current} {fact}"
    return fact


def closed_port_url() -> str:
    """A base URL ``http://127.0.0.1:PORT/v1`` for a port that nothing listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@dataclass
class RecordedRequest:
    """One request as the double received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Json | None


def _words(text: str) -> int:
    return len(text.split())


def _content_text(content: Any) -> str:
    """The text of a chat message's content: a string or a list of ``{"text": ...}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p["text"] for p in content if isinstance(p, dict) and "text" in p)
    return ""


def _truncate(reply: str, max_tokens: int | None) -> tuple[str, str]:
    pieces = _PIECE.findall(reply)
    if max_tokens is None or len(pieces) <= max_tokens:
        return reply, "stop"
    return "".join(pieces[:max_tokens]).rstrip(), "length"


def _embedding_inputs(value: Any) -> list[str] | None:
    """Texts to embed from ``input``: a string, a list of strings, or token arrays (as text)."""

    def is_tokens(item: Any) -> bool:
        return isinstance(item, list) and bool(item) and all(isinstance(t, int) for t in item)

    items = [value] if isinstance(value, str) or is_tokens(value) else value
    if not isinstance(items, list) or not items:
        return None
    texts = [
        i if isinstance(i, str) else " ".join(map(str, i))
        for i in items
        if is_tokens(i) or isinstance(i, str)
    ]
    return texts if len(texts) == len(items) else None


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
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._url: str | None = None

    def start(self) -> ModelDouble:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(self)
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, double: ModelDouble) -> None:
        self.double = double
        super().__init__(("127.0.0.1", double.port), _Handler)

    def server_bind(self) -> None:
        TCPServer.server_bind(self)  # skip HTTPServer's reverse DNS lookup
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a peer that went away is not a bug
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read no access log
        pass

    def setup(self) -> None:
        super().setup()
        self.server.double._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.double._track(self.connection, False)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        double = self.server.double
        raw = self._read_body()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        body = parsed if isinstance(parsed, dict) else None
        path = self.path.split("?", 1)[0]
        headers = {key.lower(): value for key, value in self.headers.items()}
        double._record(RecordedRequest(method, path, headers, body))
        try:
            self._route(double, method, path, body)
        except OSError:  # the client went away (e.g. it timed out first)
            self.close_connection = True

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True  # not supported: the body reads as empty
            return b""
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _route(self, double: ModelDouble, method: str, path: str, body: Json | None) -> None:
        if not double._authorised(self.headers.get("Authorization")):
            return self._send_json(401, {"error": _AUTH_ERROR})
        if path not in _FAULTABLE and path != "/v1/models":
            return self._error(404, f"Unknown request URL: {method} {path}", code="unknown_url")
        if method != ("GET" if path == "/v1/models" else "POST"):
            return self._error(405, f"Method {method} not allowed for {path}")
        if path == "/v1/models":
            data = [{"id": name, "object": "model", "owned_by": "double"} for name in double.models]
            return self._send_json(200, {"object": "list", "data": data})
        stream = body is not None and body.get("stream") is True and path != "/v1/embeddings"
        asked = body.get("model") if isinstance(body, dict) else None
        fault = double._next_fault(asked if isinstance(asked, str) else None)
        cut = False
        if fault is not None:
            kind, delay = fault
            if kind == "timeout":
                if double._stopping.wait(delay):
                    self.close_connection = True
                    return None
            elif kind == "cut" and stream:
                cut = True
            else:
                return self._send_fault(kind, stream)
        if body is None:
            return self._error(400, "We could not parse the JSON body of your request.")
        model = self._check_model(double, body)
        if model is None:
            return None
        if path == "/v1/embeddings":
            return self._embeddings(double, body, model)
        if path == "/v1/chat/completions":
            messages = body.get("messages")
            if not isinstance(messages, list):
                return self._error(400, "'messages' is a required property")
            contents = [_content_text(m.get("content")) for m in messages if isinstance(m, dict)]
            prompt_words = sum(_words(c) for c in contents)
            return self._complete(double, body, model, prompt_words, chat=True, cut=cut)
        prompt = body.get("prompt", "")
        prompt_text = " ".join(prompt) if isinstance(prompt, list) else str(prompt)
        return self._complete(double, body, model, _words(prompt_text), chat=False, cut=cut)

    def _check_model(self, double: ModelDouble, body: Json) -> str | None:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            self._error(400, "you must provide a model parameter")
            return None
        if model not in double.models:
            self._error(404, f"The model `{model}` does not exist", code="model_not_found")
            return None
        return model

    def _complete(
        self, double: ModelDouble, body: Json, model: str, prompt: int, *, chat: bool, cut: bool
    ) -> None:
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 0):
            return self._error(400, "max_tokens must be a non-negative integer")
        if double.reply_delay:
            double._stopping.wait(double.reply_delay)
        responder = double.responders.get(model)
        text = responder(body) if responder is not None else double._next_reply()
        reply, finish = _truncate(text, max_tokens)
        words = _words(reply)
        usage: Json = {"prompt_tokens": prompt, "completion_tokens": words}
        usage["total_tokens"] = prompt + words
        if double.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": double.cached_tokens}
        ident = f"{'chatcmpl' if chat else 'cmpl'}-{double._next_id()}"
        head = {"id": ident, "object": "", "created": int(time.time()), "model": model}
        extra: Json = {"timings": double.timings} if double.timings is not None else {}
        if body.get("stream") is not True:
            head["object"] = "chat.completion" if chat else "text_completion"
            message = {"role": "assistant", "content": reply}
            choice = {"index": 0, "message": message} if chat else {"index": 0, "text": reply}
            choice["finish_reason"] = finish
            return self._send_json(200, {**head, "choices": [choice], "usage": usage, **extra})
        head["object"] = "chat.completion.chunk" if chat else "text_completion"
        pieces: list[str] = _PIECE.findall(reply)
        if chat:
            deltas = [{"role": "assistant"}] + [{"content": p} for p in pieces] + [{}]
            choices: list[Json] = [{"index": 0, "delta": d, "finish_reason": None} for d in deltas]
        else:
            choices = [{"index": 0, "text": p, "finish_reason": None} for p in pieces + [""]]
        choices[-1]["finish_reason"] = finish
        events: list[Json] = [{**head, "choices": [c]} for c in choices]
        events[-1].update(extra)  # llama-server sends its timings with the last chunk
        stream_options = body.get("stream_options")
        if isinstance(stream_options, dict) and stream_options.get("include_usage"):
            events.append({**head, "choices": [], "usage": usage})
        self._start_stream()
        if cut:  # the first half of the reply's chunks, then the connection closes
            events = events[: len(pieces) // 2 + (1 if chat else 0)]
        for event in events:
            self._write_event(json.dumps(event))
            if double.chunk_delay:
                time.sleep(double.chunk_delay)
        if not cut:
            self._write_event("[DONE]")
        return None

    def _embeddings(self, double: ModelDouble, body: Json, model: str) -> None:
        texts = _embedding_inputs(body.get("input"))
        if texts is None:
            return self._error(400, "'input' must be a string, a list of strings or token arrays")
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            return self._error(400, f"Unsupported encoding_format {encoding!r}")
        data: list[Json] = []
        for index, text in enumerate(texts):
            vector: list[float] | str = embed_text(text)
            if encoding == "base64":
                vector = base64.b64encode(struct.pack(f"<{DIMS}f", *vector)).decode("ascii")
            data.append({"object": "embedding", "index": index, "embedding": vector})
        words = sum(_words(t) for t in texts)
        usage = {"prompt_tokens": words, "total_tokens": words}
        double._count_embedding()
        self._send_json(200, {"object": "list", "data": data, "model": model, "usage": usage})
        return None

    def _send_fault(self, kind: str, stream: bool) -> None:
        if kind == "500":
            return self._send_json(500, {"error": _SERVER_ERROR})
        if kind == "401":
            return self._send_json(401, {"error": _AUTH_ERROR})
        if kind == "malformed" and stream:
            self._start_stream()
            self._write_event("{not json")
            return self._write_event("[DONE]")
        if kind == "malformed":
            return self._send_bytes(200, b'{"choices": [', "application/json")
        # "cut" without streaming: headers promise a body that never fully arrives.
        self.close_connection = True
        self.wfile.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n"
            b'\r\n{"id": "cut'
        )
        return None

    def _error(self, status: int, message: str, code: str | None = None) -> None:
        error: Json = {"message": message, "type": "invalid_request_error"}
        if code is not None:
            error["code"] = code
        self._send_json(status, {"error": error})

    def _send_json(self, status: int, payload: Json) -> None:
        self._send_bytes(status, json.dumps(payload).encode("utf-8"), "application/json")

    def _send_bytes(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the body ends when the connection closes
        self.end_headers()
        self.close_connection = True

    def _write_event(self, data: str) -> None:
        self.wfile.write(f"data: {data}\n\n".encode())
        self.wfile.flush()
