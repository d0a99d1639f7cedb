"""Local model servers found on loopback (``services.endpoints.detect``), against real servers: the
OpenAI-compatible double, and small servers that answer what a stranger's might."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from tests.kit.strangers import NESTED, Answer, Stranger, send

from talekeeper.services.endpoints.detect import (
    MAX_ANSWER,
    MAX_MODELS,
    TIMEOUT,
    ServerKind,
    detect,
    parse_ports,
)
from talekeeper_testkit.double import ModelDouble, closed_port_url

pytestmark = pytest.mark.no_database


def models(*items: object) -> bytes:
    return json.dumps({"object": "list", "data": list(items)}).encode()


OK = send(200, models({"id": "somewhere-else"}))


@pytest.fixture
def stranger() -> Iterator[Callable[[Answer], Stranger]]:
    made: list[Stranger] = []

    def make(answer: Answer) -> Stranger:
        made.append(Stranger(answer))
        return made[-1]

    yield make
    for server in made:
        server.close()


def port_of(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def test_a_running_server_is_listed_with_its_models_and_the_url_to_save(
    double: ModelDouble,
) -> None:
    port = port_of(double.url)
    found = asyncio.run(detect([port]))
    assert [(s.url, s.kind, s.models) for s in found] == [
        (double.url, ServerKind.OTHER, ["double-narrator", "double-embed", "double-summary"])
    ]
    assert [r.path for r in double.requests] == ["/v1/models"]  # one look, nothing generated


def test_only_the_ports_asked_answer_and_closed_ones_are_left_out(double: ModelDouble) -> None:
    closed = port_of(closed_port_url())
    found = asyncio.run(detect([closed, port_of(double.url)]))
    assert [s.url for s in found] == [double.url]


def test_talekeepers_own_port_is_never_asked(double: ModelDouble) -> None:
    port = port_of(double.url)
    assert asyncio.run(detect([port], own_ports=[None, port])) == []
    assert double.requests == []  # not even asked


def test_the_kind_comes_from_the_models_owner_else_the_port(
    stranger: Callable[[Answer], Stranger],
) -> None:
    server = stranger(send(200, models({"id": "qwen", "owned_by": "llamacpp"})))
    (found,) = asyncio.run(detect([server.port]))
    assert found.kind is ServerKind.LLAMA_CPP and found.models == ["qwen"]
    assert server.paths == ["/v1/models"]


def test_what_a_stranger_answers_is_cleaned_or_left_out(
    stranger: Callable[[Answer], Stranger],
) -> None:
    names: list[object] = [
        {"id": "good-1"},
        {"id": "good-1"},  # twice
        {"id": 42},
        {"id": "x" * 201},
        {"id": "bell\x07"},
        {"id": " padded "},
        {"id": ""},
        "not an object",
        {"no": "id"},
        {"id": "good-2"},
    ]
    messy = stranger(send(200, models(*names)))
    many = stranger(send(200, models(*({"id": f"m{i}"} for i in range(MAX_MODELS + 50)))))
    (first, second) = asyncio.run(detect([messy.port, many.port]))
    assert first.models == ["good-1", "good-2"]
    assert second.models == [f"m{i}" for i in range(MAX_MODELS)]


@pytest.mark.parametrize(
    "answer",
    [
        send(500, b'{"error": "boom"}'),
        send(200, b"<html>a router's admin page</html>", {"Content-Type": "text/html"}),
        send(200, b'{"data": "not a list"}'),
        send(200, models()),  # no model: nothing to switch to
        send(200, b"\xff\xfe not utf-8"),
        send(200, json.dumps({"data": [{"id": "a" * 100}] * 10_000}).encode()),  # too large
        lambda h: (send(302, b"", {"Location": "/elsewhere"}) if h.path == "/v1/models" else OK)(
            h
        ),  # the page it points to would answer with models
    ],
    ids=["500", "html", "no-list", "empty", "binary", "too-large", "redirect"],
)
def test_a_port_that_does_not_answer_with_models_is_not_listed(
    stranger: Callable[[Answer], Stranger], answer: Answer
) -> None:
    server = stranger(answer)
    assert asyncio.run(detect([server.port])) == []
    assert server.paths == ["/v1/models"]  # a redirect is not followed


def test_a_deeply_nested_answer_is_not_listed_and_the_healthy_servers_still_are(
    stranger: Callable[[Answer], Stranger], double: ModelDouble
) -> None:
    """Python's JSON parser recurses: one port's nesting must not take the others down."""
    nested = stranger(send(200, NESTED))
    found = asyncio.run(detect([nested.port, port_of(double.url)]))
    assert [s.url for s in found] == [double.url]
    assert len(NESTED) < MAX_ANSWER


def test_the_size_limit_is_what_the_too_large_answer_exceeds() -> None:
    assert len(json.dumps({"data": [{"id": "a" * 100}] * 10_000})) > MAX_ANSWER


def test_a_server_that_never_answers_is_given_up_on(
    stranger: Callable[[Answer], Stranger], double: ModelDouble
) -> None:
    release = threading.Event()

    def hang(handler: BaseHTTPRequestHandler) -> None:
        release.wait(30)

    slow = stranger(hang)
    try:
        started = time.monotonic()
        found = asyncio.run(detect([slow.port, port_of(double.url)]))
        waited = time.monotonic() - started
    finally:
        release.set()
    assert [s.url for s in found] == [double.url]  # the others are still listed
    assert waited < TIMEOUT + 10  # it gave up rather than waiting for the hung one


def test_a_port_that_is_not_http_is_not_listed() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def babble() -> None:
        connection, _ = listener.accept()
        connection.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        connection.close()

    threading.Thread(target=babble, daemon=True).start()
    try:
        assert asyncio.run(detect([listener.getsockname()[1]])) == []
    finally:
        listener.close()


def test_a_proxy_in_the_environment_is_not_used(
    double: ModelDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, closed_port_url().removesuffix("/v1"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert [s.url for s in asyncio.run(detect([port_of(double.url)]))] == [double.url]


def test_ports_are_read_once_each_and_bad_ones_named() -> None:
    assert parse_ports(" 11434, 1234,,11434 ") == (11434, 1234)
    assert parse_ports("") == ()
    for bad, named in (("80,abc", "'abc'"), ("0", "'0'"), ("65536", "'65536'"), ("-1", "'-1'")):
        with pytest.raises(ValueError, match=named):
            parse_ports(bad)
    with pytest.raises(ValueError, match="at most 16"):
        parse_ports(",".join(str(p) for p in range(1000, 1017)))
