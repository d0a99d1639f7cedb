"""The app as several test modules drive it: every route it has (``endpoints``, found from
the app itself), the administrator's routes included, waiting for an adventure's background
work, a small indexed library source, and raw HTTP/1.1 on a socket to a served app (only a
socket shows whether the app answered before reading a body)."""

from __future__ import annotations

import json
import re
import socket
import time
import types
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin

from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel

from talekeeper.web.routes import admin

Key = tuple[str, str]  # (method, path template)
OCTETS = {"Content-Type": "application/octet-stream"}


# -- the app's routes ---------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    route: APIRoute

    @property
    def key(self) -> Key:
        return (self.method, self.path)

    def _params(self, kind: str) -> list[Any]:
        """The route's parameters of one kind, with those of its dependencies (a story
        loaded by id), walked by hand: FastAPI's own flattening helpers move between
        versions."""
        found: list[Any] = []
        stack = [self.route.dependant]
        while stack:
            dependant = stack.pop()
            found.extend(getattr(dependant, kind))
            stack.extend(dependant.dependencies)
        return found

    def path_params(self) -> list[tuple[str, Any]]:
        unique = {p.name: plain(p.field_info.annotation) for p in self._params("path_params")}
        return list(unique.items())

    def query_params(self) -> list[tuple[str, Any]]:
        unique = {p.alias: plain(p.field_info.annotation) for p in self._params("query_params")}
        return list(unique.items())

    def body_model(self) -> type[BaseModel] | None:
        """The typed body, or ``None`` for a free-form JSON body (``Any``)."""
        annotation = plain(self.route.body_field.field_info.annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return annotation
        return None

    def takes_body(self) -> bool:
        return self.route.body_field is not None

    def has_input(self) -> bool:
        return bool(self.path_params() or self.query_params() or self.takes_body())


def plain(annotation: Any) -> Any:
    """``X | None`` as ``X``."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def endpoints(app: FastAPI) -> list[Endpoint]:
    """Every API route of the app, one per method, whatever FastAPI's version.

    FastAPI 0.16x keeps included routers as lazy entries in ``app.routes``;
    ``iter_route_contexts`` gives their routes. Before that, ``app.routes`` held them.
    """
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # pragma: no cover - older FastAPI
        pairs = [(r.path, r.methods, r) for r in app.routes if isinstance(r, APIRoute)]
    else:
        pairs = [
            (c.path, c.methods, c.original_route)
            for c in iter_route_contexts(app.routes)
            if isinstance(c.original_route, APIRoute)
        ]
    out = [Endpoint(m, path, route) for path, methods, route in pairs for m in sorted(methods)]
    assert out, "found no API routes: has FastAPI changed how routes are listed?"
    return out


def with_admin(app: FastAPI) -> FastAPI:
    """The app with the administrator's routes (added here only while the app does not
    include them itself)."""
    if not any(e.path.startswith("/api/admin") for e in endpoints(app)):
        app.include_router(admin.router)
    return app


# -- waiting for background work ------------------------------------------------------------


def settled(client: TestClient, adventure: int, timeout: float = 30.0) -> None:
    """Wait until the adventure's background work is done (it would change the state)."""
    deadline = time.monotonic() + timeout
    while True:
        derived = client.get(f"/api/adventures/{adventure}/derived").json()
        kinds = [v for v in derived.values() if isinstance(v, dict)]
        if not derived["pending"] and all(k["state"] != "running" for k in kinds):
            return
        assert time.monotonic() < deadline, f"background work did not finish: {derived}"
        time.sleep(0.05)


def library_source(client: TestClient, timeout: float = 30.0) -> int:
    """A small library source, its vectors made (their embedding calls would change the
    state)."""
    made = client.post(
        "/api/library",
        params={"filename": "bible.md"},
        content=b"# Lanterns\n\nThe great lantern burns whale oil.",
        headers={"Content-Type": "application/octet-stream"},
    )
    assert made.status_code == 201, made.text
    source_id = int(made.json()["id"])
    deadline = time.monotonic() + timeout
    while client.get(f"/api/library/{source_id}").json()["state"] == "indexing":
        assert time.monotonic() < deadline, "the library source was not indexed"
        time.sleep(0.05)
    return source_id


# -- raw HTTP ------------------------------------------------------------------------------


def raw(url: str, *parts: bytes, timeout: float = 10.0) -> tuple[bytes, dict[str, Any]]:
    """Send ``parts`` on one connection; the first response's status line and JSON body."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        for part in parts:
            sock.sendall(part)
        data = b""
        while not _complete(data):
            chunk = sock.recv(65536)
            assert chunk, f"the server closed the connection without an answer: {data!r}"
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0], json.loads(body)


def _complete(data: bytes) -> bool:
    head, blank, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length: *(\d+)", head)
    return bool(blank) and length is not None and len(body) >= int(length[1])


def post_head(path: str, length: int | None, **extra: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: localhost", "Content-Type: application/json"]
    lines += [f"Content-Length: {length}"] if length is not None else []
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()
