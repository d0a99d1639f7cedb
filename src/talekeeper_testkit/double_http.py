"""The model double's HTTP side: the server and the handler that answer as an
OpenAI-compatible API, for ``double.ModelDouble``, which holds the script, the faults and
the recorded requests (its docstring states what the double guarantees).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import TYPE_CHECKING, Any

from talekeeper_testkit.double_text import DIMS, Json, RecordedRequest, content_text, embed_text

if TYPE_CHECKING:  # the double builds its server: at run time this module never reads it
    from talekeeper_testkit.double import ModelDouble

_PIECE = re.compile(r"\s*\S+\s*")
_FAULTABLE = frozenset({"/v1/chat/completions", "/v1/completions", "/v1/embeddings"})
_AUTH_ERROR = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
_SERVER_ERROR = {"message": "injected server error", "type": "server_error"}


def _words(text: str) -> int:
    return len(text.split())


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


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, double: ModelDouble) -> None:
        self.double = double
        super().__init__(("127.0.0.1", double.port), Handler)

    def server_bind(self) -> None:
        TCPServer.server_bind(self)  # skip HTTPServer's reverse DNS lookup
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a peer that went away is not a bug
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

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
            contents = [content_text(m.get("content")) for m in messages if isinstance(m, dict)]
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
