"""A misbehaving HTTP endpoint on loopback: raw bytes on a real socket, for the faults a
well-behaved server (``talekeeper_testkit.double``) never makes.

``RogueEndpoint(behaviour)`` listens on 127.0.0.1 (an ephemeral port), reads each request
whole (headers and a ``Content-Length`` body), records it, and answers it as
``BEHAVIOURS[behaviour]`` says: a redirect to itself (a loop) or to another URL, a gzip
body that is not gzip, bytes that are not HTTP, an HTML page, a chunked body with a broken
chunk, a connection closed for writing without an answer, an error page, JSON nested past
any parser's depth, a body larger than any reply ("huge", ``huge_bytes``), or a 200 JSON
body of the test's choosing ("body", ``body``). Every connection is closed after its
answer. Only the standard library; ``stop()`` is idempotent.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

SECRET = "internal-admin-token-7731"  # text of the pages that must never be repeated


@dataclass
class RawRequest:
    method: str
    path: str
    headers: dict[str, str]


def _head(status: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers.items())]
    lines += [f"Content-Length: {len(body)}", "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _page(status: str, content_type: str, text: str) -> bytes:
    return _head(status, {"Content-Type": content_type}, text.encode("utf-8"))


HTML = f"<html><body><h1>Router login</h1><p>{SECRET}</p></body></html>"
BEHAVIOURS = (
    "redirect-loop",
    "redirect-away",
    "bad-gzip",
    "garbage",
    "html",
    "bad-chunking",
    "half-closed",
    "error-page",
    "deep-json",
)


class RogueEndpoint:
    """Answers every request on its socket with one kind of misbehaviour."""

    def __init__(self, behaviour: str, *, away: str = "http://127.0.0.2:9/v1") -> None:
        if behaviour not in (*BEHAVIOURS, "huge", "body"):
            raise ValueError(f"unknown behaviour {behaviour!r}; expected one of {BEHAVIOURS}")
        self.behaviour = behaviour
        self.away = away  # where "redirect-away" points
        self.huge_bytes = 0  # body size for "huge"
        self.body = b"{}"  # what "body" answers, as a 200 JSON reply
        self.requests: list[RawRequest] = []
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> RogueEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._sock.close()
        self._thread.join(timeout=2)

    # -- serving ----------------------------------------------------------------------------

    def _serve(self) -> None:
        self._sock.settimeout(0.05)
        while not self._stopped.is_set():
            try:
                connection, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def _handle(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(5)
            try:
                request = self._read(connection)
                if request is None:
                    return
                with self._lock:
                    self.requests.append(request)
                self._answer(connection, request)
            except OSError:  # the client gave up first
                return

    def _read(self, connection: socket.socket) -> RawRequest | None:
        data = b""
        while b"\r\n\r\n" not in data:
            piece = connection.recv(65536)
            if not piece:
                return None
            data += piece
        head, _, rest = data.partition(b"\r\n\r\n")
        first, *lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        remaining = int(headers.get("content-length") or 0) - len(rest)
        while remaining > 0:
            piece = connection.recv(min(remaining, 65536))
            if not piece:
                break
            remaining -= len(piece)
        method, path, *_ = first.split(" ") + ["", ""]
        return RawRequest(method, path, headers)

    def _answer(self, connection: socket.socket, request: RawRequest) -> None:
        if self.behaviour == "half-closed":
            connection.shutdown(socket.SHUT_WR)  # no answer: the read side stays open
            connection.recv(1)
            return
        if self.behaviour == "huge":
            return self._huge(connection)
        answers: dict[str, Callable[[RawRequest], bytes]] = {
            "redirect-loop": lambda r: _head("302 Found", {"Location": r.path}, b""),
            "redirect-away": lambda r: _head(
                "307 Temporary Redirect", {"Location": self.away + r.path.removeprefix("/v1")}, b""
            ),
            "bad-gzip": lambda r: _head(
                "200 OK",
                {"Content-Type": "application/json", "Content-Encoding": "gzip"},
                b"this is not gzip at all " + SECRET.encode(),
            ),
            "garbage": lambda r: b"\x00\xff\xfe SSH-2.0-OpenSSH_9.2 " + SECRET.encode() + b"\r\n",
            "html": lambda r: _page("200 OK", "text/html", HTML),
            "bad-chunking": lambda r: (
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                b'5\r\n{"dat\r\nzz-not-a-size\r\n' + SECRET.encode() + b"\r\n"
            ),
            "error-page": lambda r: _page("500 Internal Server Error", "text/html", HTML),
            "deep-json": lambda r: _page("200 OK", "application/json", "[" * 200_000),
            "body": lambda r: _head("200 OK", {"Content-Type": "application/json"}, self.body),
        }
        connection.sendall(answers[self.behaviour](request))

    def _huge(self, connection: socket.socket) -> None:
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {self.huge_bytes}\r\nConnection: close\r\n\r\n"
        )
        connection.sendall(head.encode("latin-1"))
        block = b" " * 65536
        sent = 0
        while sent < self.huge_bytes:
            piece = block[: self.huge_bytes - sent]
            connection.sendall(piece)
            sent += len(piece)
