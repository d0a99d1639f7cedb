"""Small loopback HTTP servers that answer what a stranger's server might (``detect`` asks
them for models): each GET answered by a function the test gives (``send`` makes one that
sends a status and a body), the paths asked recorded."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = Callable[[BaseHTTPRequestHandler], None]


class Stranger:
    """A loopback HTTP server whose every GET is answered by ``answer``; it records paths."""

    def __init__(self, answer: Answer) -> None:
        paths = self.paths = list[str]()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                answer(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def send(status: int, body: bytes, headers: dict[str, str] | None = None) -> Answer:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        for name, value in (headers or {"Content-Type": "application/json"}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


NESTED = b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"  # small, yet past any recursion
