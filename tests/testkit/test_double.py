"""Tests of the OpenAI-compatible model double, driven with httpx over real sockets."""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from talekeeper_testkit.double import DIMS, ModelDouble, closed_port_url, embed_text

ROOT = Path(__file__).resolve().parents[2]
CHAT = {"model": "double-narrator", "messages": [{"role": "user", "content": "Tell me more"}]}


@pytest.fixture
def double() -> Iterator[ModelDouble]:
    with ModelDouble() as server:
        yield server


@pytest.fixture
def client(double: ModelDouble) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=double.url, timeout=5.0) as http:
        yield http


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def sse_data(response: httpx.Response) -> list[str]:
    """The ``data:`` payloads of a streamed response, in order."""
    return [line[6:] for line in response.iter_lines() if line.startswith("data: ")]


def stream_events(client: httpx.Client, path: str, body: dict[str, Any]) -> list[str]:
    with client.stream("POST", path, json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return sse_data(response)


# Endpoints


def test_models_lists_every_configured_model(client: httpx.Client) -> None:
    response = client.get("/models")
    assert response.status_code == 200
    payload = response.json()
    assert payload["object"] == "list"
    assert [m["id"] for m in payload["data"]] == [
        "double-narrator",
        "double-embed",
        "double-summary",
    ]
    assert all(m["object"] == "model" and m["owned_by"] == "double" for m in payload["data"])


def test_chat_returns_scripted_reply_with_word_usage(
    double: ModelDouble, client: httpx.Client
) -> None:
    double.script("The dragon wakes up.")
    body = {
        "model": "double-narrator",
        "messages": [
            {"role": "system", "content": "You narrate stories."},
            {"role": "user", "content": [{"type": "text", "text": "What happens next?"}]},
        ],
    }
    payload = client.post("/chat/completions", json=body).json()
    assert payload["id"].startswith("chatcmpl-")
    assert payload["object"] == "chat.completion"
    assert payload["model"] == "double-narrator"
    assert isinstance(payload["created"], int)
    choice = payload["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "The dragon wakes up."}
    assert choice["finish_reason"] == "stop"
    assert payload["usage"] == {"prompt_tokens": 6, "completion_tokens": 4, "total_tokens": 10}


def test_chat_max_tokens_cuts_reply_with_length_finish(
    double: ModelDouble, client: httpx.Client
) -> None:
    double.script("one two three four five")
    payload = client.post("/chat/completions", json={**CHAT, "max_tokens": 3}).json()
    assert payload["choices"][0]["message"]["content"] == "one two three"
    assert payload["choices"][0]["finish_reason"] == "length"
    assert payload["usage"]["completion_tokens"] == 3


def test_chat_stream_joins_back_to_reply_and_ends_with_done(
    double: ModelDouble, client: httpx.Client
) -> None:
    reply = "The  knight\nrides north, slowly. "
    double.script(reply)
    data = stream_events(client, "/chat/completions", {**CHAT, "stream": True})
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    pieces = [c["choices"][0]["delta"].get("content", "") for c in chunks]
    assert "".join(pieces) == reply
    assert len([p for p in pieces if p]) == 5
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert "usage" not in chunks[-1]


def test_chat_stream_include_usage_adds_usage_chunk(
    double: ModelDouble, client: httpx.Client
) -> None:
    double.script("Snow falls")
    body = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
    data = stream_events(client, "/chat/completions", body)
    assert data[-1] == "[DONE]"
    last = json.loads(data[-2])
    assert last["choices"] == []
    assert last["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def test_completion_non_stream_and_stream(double: ModelDouble, client: httpx.Client) -> None:
    double.script("Once upon a time", "there was a tower")
    body = {"model": "double-narrator", "prompt": "Begin the tale"}
    payload = client.post("/completions", json=body).json()
    assert payload["object"] == "text_completion"
    assert payload["choices"] == [{"index": 0, "text": "Once upon a time", "finish_reason": "stop"}]
    assert payload["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}

    data = stream_events(client, "/completions", {**body, "stream": True})
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert "".join(c["choices"][0]["text"] for c in chunks) == "there was a tower"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])


def test_scripted_replies_are_fifo_then_default(double: ModelDouble, client: httpx.Client) -> None:
    double.script("first", "second")
    replies = [
        client.post("/chat/completions", json=CHAT).json()["choices"][0]["message"]["content"]
        for _ in range(3)
    ]
    assert replies == ["first", "second", "The story goes on."]


def test_requests_are_recorded_with_body_and_headers(
    double: ModelDouble, client: httpx.Client
) -> None:
    client.get("/models")
    client.post("/chat/completions", json=CHAT, headers={"X-Trace": "abc"})
    assert [(r.method, r.path) for r in double.requests] == [
        ("GET", "/v1/models"),
        ("POST", "/v1/chat/completions"),
    ]
    assert double.requests[0].body is None
    recorded = double.requests[1]
    assert recorded.body == CHAT
    assert recorded.headers["x-trace"] == "abc"
    assert recorded.headers["content-type"] == "application/json"
    double.reset()
    assert double.requests == []


def test_reset_clears_scripted_replies_and_faults(
    double: ModelDouble, client: httpx.Client
) -> None:
    double.script("scripted")
    double.fail_next("500")
    double.reset()
    response = client.post("/chat/completions", json=CHAT)
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "The story goes on."


def test_concurrent_requests_are_all_answered_and_recorded(double: ModelDouble) -> None:
    def call(_: int) -> int:
        with httpx.Client(base_url=double.url, timeout=5.0) as http:
            return http.post("/chat/completions", json=CHAT).status_code

    threads = [threading.Thread(target=call, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(double.requests) == 16
    assert all(r.path == "/v1/chat/completions" for r in double.requests)


# Embeddings


def test_embeddings_are_deterministic_and_normalised(
    double: ModelDouble, client: httpx.Client
) -> None:
    body = {"model": "double-embed", "input": "The castle gate"}
    first = client.post("/embeddings", json=body).json()
    second = client.post("/embeddings", json=body).json()
    vector = first["data"][0]["embedding"]
    assert vector == second["data"][0]["embedding"] == embed_text("The castle gate")
    assert len(vector) == DIMS
    assert math.isclose(sum(v * v for v in vector), 1.0, rel_tol=1e-9)
    assert first["model"] == "double-embed"
    assert first["usage"] == {"prompt_tokens": 3, "total_tokens": 3}
    assert double.embedding_calls == 2


def test_embed_text_is_stable_across_processes() -> None:
    code = "from talekeeper_testkit.double import embed_text; print(embed_text('hello dragon'))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == embed_text("hello dragon")


def test_embed_text_similar_texts_score_higher_than_unrelated() -> None:
    dragon = embed_text("the red dragon sleeps in the cave")
    similar = embed_text("a red dragon sleeping in a cave")
    unrelated = embed_text("tax forms for the accountant")
    assert cosine(dragon, similar) > 0.5
    assert cosine(dragon, similar) > cosine(dragon, unrelated) + 0.3
    assert embed_text("The RED dragon!") == embed_text("the red dragon")


def test_embed_text_of_empty_text_is_a_fixed_unit_vector() -> None:
    assert embed_text("") == embed_text("!!!") == [1.0] + [0.0] * (DIMS - 1)


def test_embeddings_batch_and_base64_format(double: ModelDouble, client: httpx.Client) -> None:
    texts = ["north tower", "south gate"]
    payload = client.post("/embeddings", json={"model": "double-embed", "input": texts}).json()
    assert [d["index"] for d in payload["data"]] == [0, 1]
    assert [d["embedding"] for d in payload["data"]] == [embed_text(t) for t in texts]

    body = {"model": "double-embed", "input": "north tower", "encoding_format": "base64"}
    encoded = client.post("/embeddings", json=body).json()["data"][0]["embedding"]
    decoded = struct.unpack(f"<{DIMS}f", base64.b64decode(encoded))
    assert all(
        math.isclose(a, b, abs_tol=1e-6) for a, b in zip(decoded, embed_text(texts[0]), strict=True)
    )
    assert double.embedding_calls == 2


# Errors and authentication


def test_unknown_model_is_404_model_not_found(double: ModelDouble, client: httpx.Client) -> None:
    for path, body in [
        ("/chat/completions", {**CHAT, "model": "gpt-nope"}),
        ("/embeddings", {"model": "gpt-nope", "input": "x"}),
    ]:
        response = client.post(path, json=body)
        assert response.status_code == 404
        error = response.json()["error"]
        assert error["code"] == "model_not_found"
        assert error["message"] == "The model `gpt-nope` does not exist"
    assert double.embedding_calls == 0


def test_invalid_json_is_400_and_unknown_path_is_404(client: httpx.Client) -> None:
    bad = client.post(
        "/chat/completions", content=b"{oops", headers={"Content-Type": "application/json"}
    )
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "invalid_request_error"
    missing = client.get("/nowhere")
    assert missing.status_code == 404
    assert "error" in missing.json()


def test_api_key_is_enforced_on_every_endpoint() -> None:
    with ModelDouble(api_key="sk-test") as server, httpx.Client(base_url=server.url) as http:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            response = http.get("/models", headers=headers)
            assert response.status_code == 401
            assert response.json()["error"]["message"] == "Incorrect API key provided"
        assert http.post("/chat/completions", json=CHAT).status_code == 401
        good = {"Authorization": "Bearer sk-test"}
        assert http.get("/models", headers=good).status_code == 200
        assert http.post("/chat/completions", json=CHAT, headers=good).status_code == 200


def test_closed_port_url_refuses_connections() -> None:
    with pytest.raises(httpx.ConnectError):
        httpx.get(closed_port_url() + "/models", timeout=2.0)


# Faults


def test_fault_500_then_recovers(double: ModelDouble, client: httpx.Client) -> None:
    double.fail_next("500", count=2)
    for _ in range(2):
        response = client.post("/chat/completions", json=CHAT)
        assert response.status_code == 500
        assert response.json() == {
            "error": {"message": "injected server error", "type": "server_error"}
        }
    assert client.post("/chat/completions", json=CHAT).status_code == 200
    assert len(double.requests) == 3


def test_fault_401(double: ModelDouble, client: httpx.Client) -> None:
    double.fail_next("401")
    response = client.post("/embeddings", json={"model": "double-embed", "input": "x"})
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert double.embedding_calls == 0


def test_faults_skip_models_endpoint(double: ModelDouble, client: httpx.Client) -> None:
    double.fail_next("500")
    assert client.get("/models").status_code == 200
    assert client.post("/chat/completions", json=CHAT).status_code == 500


def test_unknown_fault_is_rejected(double: ModelDouble) -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        double.fail_next("explode")


def test_fault_timeout_fires_client_timeout(double: ModelDouble) -> None:
    double.fail_next("timeout", delay=2.0)
    started = time.monotonic()
    with httpx.Client(base_url=double.url, timeout=0.5) as http:
        with pytest.raises(httpx.ReadTimeout):
            http.post("/chat/completions", json=CHAT)
        assert time.monotonic() - started < 1.5
        assert http.post("/chat/completions", json=CHAT).status_code == 200


def test_fault_timeout_answers_normally_after_delay(
    double: ModelDouble, client: httpx.Client
) -> None:
    double.script("late reply")
    double.fail_next("timeout", delay=0.3)
    started = time.monotonic()
    response = client.post("/chat/completions", json=CHAT)
    assert time.monotonic() - started >= 0.3
    assert response.json()["choices"][0]["message"]["content"] == "late reply"


def test_fault_malformed_non_stream(double: ModelDouble, client: httpx.Client) -> None:
    double.fail_next("malformed")
    response = client.post("/chat/completions", json=CHAT)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.text == '{"choices": ['
    with pytest.raises(json.JSONDecodeError):
        response.json()


def test_fault_malformed_stream(double: ModelDouble, client: httpx.Client) -> None:
    double.fail_next("malformed")
    data = stream_events(client, "/chat/completions", {**CHAT, "stream": True})
    assert data == ["{not json", "[DONE]"]
    with pytest.raises(json.JSONDecodeError):
        json.loads(data[0])


def test_fault_cut_stream_sends_fewer_chunks_and_no_done(
    double: ModelDouble, client: httpx.Client
) -> None:
    reply = "one two three four five six"
    double.script(reply)
    double.fail_next("cut")
    data: list[str] = []
    try:
        with client.stream("POST", "/chat/completions", json={**CHAT, "stream": True}) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    data.append(line[6:])
    except (httpx.ReadError, httpx.RemoteProtocolError):
        pass
    assert "[DONE]" not in data
    text = "".join(json.loads(d)["choices"][0]["delta"].get("content", "") for d in data)
    assert reply.startswith(text)
    assert len(text.split()) < len(reply.split())


def test_fault_cut_non_stream_is_a_protocol_error(
    double: ModelDouble, client: httpx.Client
) -> None:
    double.fail_next("cut")
    with pytest.raises(httpx.RemoteProtocolError):
        client.post("/completions", json={"model": "double-narrator", "prompt": "Go"})
    assert client.post("/completions", json={"model": "double-narrator", "prompt": "Go"}).is_success


# Lifecycle


def test_stop_is_idempotent_and_fast_with_a_request_held_by_timeout() -> None:
    server = ModelDouble().start()
    server.fail_next("timeout", delay=30.0)
    errors: list[BaseException] = []

    def held_request() -> None:
        try:
            httpx.post(server.url + "/chat/completions", json=CHAT, timeout=60.0)
        except httpx.HTTPError as exc:
            errors.append(exc)

    caller = threading.Thread(target=held_request)
    caller.start()
    deadline = time.monotonic() + 5
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.requests, "the held request never arrived"
    started = time.monotonic()
    server.stop()
    server.stop()
    assert time.monotonic() - started < 2.0
    caller.join(timeout=2.0)
    assert not caller.is_alive()
    assert len(errors) == 1


def test_stopped_double_refuses_even_pooled_connections() -> None:
    server = ModelDouble().start()
    with httpx.Client(base_url=server.url, timeout=2.0) as http:
        assert http.get("/models").status_code == 200  # leaves a keep-alive connection
        server.stop()
        with pytest.raises(httpx.TransportError):
            http.get("/models")


def test_url_requires_start() -> None:
    with pytest.raises(RuntimeError):
        _ = ModelDouble().url


def test_reply_delay_holds_completions_but_not_embeddings_and_stop_ends_it(
    double: ModelDouble, client: httpx.Client
) -> None:
    double.reply_delay = 0.4
    chat = {"model": "double-narrator", "messages": [{"role": "user", "content": "Go."}]}
    began = time.monotonic()
    assert client.post("/chat/completions", json=chat).is_success
    assert time.monotonic() - began >= 0.4
    began = time.monotonic()
    assert client.post("/embeddings", json={"model": "double-embed", "input": "x"}).is_success
    assert time.monotonic() - began < 0.4
    double.reply_delay = 30.0
    threading.Timer(0.2, double.stop).start()
    began = time.monotonic()
    with contextlib.suppress(httpx.TransportError):  # answered or cut off: either is an end
        client.post("/chat/completions", json=chat)
    assert time.monotonic() - began < 10  # not the 30 s it was told to wait
