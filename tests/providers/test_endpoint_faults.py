"""An endpoint that misbehaves is a ``ProviderError`` with a sentence, whatever it sends:
redirects (never followed), broken encodings and framing, bytes that are not HTTP, pages
that are not JSON, bodies too large or too deep. What a probed (unsaved) endpoint said is
never repeated, and credentials in a URL are never shown."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from tests.providers.rogue import BEHAVIOURS, SECRET, RogueEndpoint

from talekeeper.core.errors import ProviderError, ProviderProtocolError
from talekeeper.providers.base import CompletionRequest, Message, without_userinfo
from talekeeper.providers.openai_compat import (
    MAX_RESPONSE_BYTES,
    OpenAICompatProvider,
    shared_client,
)
from talekeeper_testkit.double import ModelDouble, closed_port_url

CHAT = CompletionRequest(
    model="double-narrator", messages=(Message("user", "> You open the door."),), max_tokens=20
)


def provider(url: str, **kw: Any) -> OpenAICompatProvider:
    return OpenAICompatProvider(shared_client(), url, timeout=3, **kw)


async def _stream(p: OpenAICompatProvider) -> Any:
    return [chunk async for chunk in p.stream(CHAT)]


CALLS: dict[str, Callable[[OpenAICompatProvider], Awaitable[Any]]] = {
    "models": lambda p: p.list_models(),
    "complete": lambda p: p.complete(CHAT),
    "stream": _stream,
    "embed": lambda p: p.embed(["a line"], "double-embed"),
}


def failure(p: OpenAICompatProvider, call: str) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        asyncio.run(CALLS[call](p))
    return caught.value


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_every_misbehaviour_is_a_provider_error_that_repeats_nothing_when_probed(
    behaviour: str, call: str
) -> None:
    with RogueEndpoint(behaviour) as rogue:
        error = failure(provider(rogue.url, echo_errors=False), call)
    assert rogue.url in error.message and error.message.endswith((".", "?"))
    assert SECRET not in error.message and "<html" not in error.message


def test_a_redirect_is_never_followed_and_says_where_it_points(double: ModelDouble) -> None:
    assert shared_client().follow_redirects is False
    with RogueEndpoint("redirect-away", away=double.url) as rogue:
        for call in CALLS:
            error = failure(provider(rogue.url), call)
            assert "redirect" in error.message and "settings" in error.message
            assert f"{double.url}" in error.message
    assert double.requests == []  # the other host never heard of it


def test_a_redirect_loop_is_one_answer_not_twenty() -> None:
    with RogueEndpoint("redirect-loop") as rogue:
        error = failure(provider(rogue.url), "complete")
    assert "HTTP 302" in error.message and len(rogue.requests) == 1


def test_the_saved_endpoint_repeats_its_error_text_and_a_probed_one_does_not() -> None:
    with RogueEndpoint("error-page") as rogue:
        saved = failure(provider(rogue.url), "complete")
        probed = failure(provider(rogue.url, echo_errors=False), "complete")
    assert SECRET in saved.message
    assert "HTTP 500" in probed.message and "server error" in probed.message
    assert SECRET not in probed.message


def test_a_probed_endpoints_model_list_is_still_read(double: ModelDouble) -> None:
    names = asyncio.run(provider(double.url, echo_errors=False).list_models())
    assert names == list(double.models)
    with RogueEndpoint("body") as rogue:
        rogue.body = b'{"object": "list", "data": []}'
        assert asyncio.run(provider(rogue.url, echo_errors=False).list_models()) == []


def test_a_body_larger_than_any_reply_is_refused_without_reading_it_all() -> None:
    with RogueEndpoint("huge") as rogue:
        rogue.huge_bytes = MAX_RESPONSE_BYTES * 4
        error = failure(provider(rogue.url), "models")
    assert isinstance(error, ProviderProtocolError) and "MiB" in error.message


@pytest.mark.parametrize(
    "body",
    [
        b'{"choices": [1]}',
        b'{"choices": [{"message": {"content": "Hi."}}], "usage": [1, 2]}',
        b'{"choices": [{"message": {"content": "Hi."}}], "usage": {"prompt_tokens": "x"}}',
        b'{"data": [{"embedding": [1, 2], "index": "a"}, {"embedding": [1], "index": 0}]}',
        b'{"data": "models"}',
        b'{"data": 5, "error": {"message": [[[[[]]]]]}}',
        b'{"data": [{"id": {"deep": [1]}}]}',
        b"\xff\xfe\x00\x00 not utf",
    ],
)
def test_odd_json_shapes_are_protocol_errors_or_dropped_counts(body: bytes) -> None:
    with RogueEndpoint("body") as rogue:
        rogue.body = body
        p = provider(rogue.url)
        for call in ("models", "complete", "embed"):
            try:
                result = asyncio.run(CALLS[call](p))
            except ProviderError as error:
                assert rogue.url in error.message
                continue
            if call == "complete":  # counts that are not numbers are dropped, not stored
                assert result.text == "Hi." and result.tokens_in is None


@pytest.mark.parametrize(
    "event",
    [
        b'data: {"choices": [7]}\n\n',
        b'data: {"choices": [{"delta": ["x"]}], "usage": "lots"}\n\n',
        b'data: {"choices": [{"delta": {"content": {"a": 1}}, "finish_reason": 3}]}\n\n',
    ],
)
def test_odd_stream_events_never_escape_as_anything_but_a_provider_error(event: bytes) -> None:
    with RogueEndpoint("body") as rogue:
        rogue.body = event + b"data: [DONE]\n\n"
        try:
            chunks = asyncio.run(_stream(provider(rogue.url)))
        except ProviderError as error:
            assert rogue.url in error.message
        else:
            assert chunks[-1].done is not None and chunks[-1].done.tokens_in is None


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_shown(
    double: ModelDouble,
) -> None:
    port = double.url.split(":")[2].split("/")[0]
    secret_url = f"http://alice:s3cr%40t@127.0.0.1:{port}/v1"
    p = provider(secret_url)
    assert p.info.name == double.url == without_userinfo(secret_url)
    assert asyncio.run(p.list_models()) == list(double.models)
    expected = "Basic " + base64.b64encode(b"alice:s3cr@t").decode()
    assert double.requests[-1].headers["authorization"] == expected
    closed = closed_port_url().replace("http://", "http://alice:s3cr%40t@")
    shown = [failure(provider(closed), call).message for call in CALLS]
    broken = secret_url.replace(port, "99999")
    shown += [failure(provider(broken), call).message for call in CALLS]
    double.fail_next("500")
    shown.append(failure(provider(secret_url), "complete").message)
    assert all("alice" not in m and "s3cr" not in m for m in shown), shown


def test_an_unusable_url_is_a_sentence_not_a_crash() -> None:
    p = OpenAICompatProvider(httpx.AsyncClient(), "http://[::1")
    for call in CALLS:
        assert "settings" in failure(p, call).message
