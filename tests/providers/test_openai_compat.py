"""The OpenAI-compatible provider against the real loopback double: protocol and every failure."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from talekeeper.core.errors import (
    ProviderAuthError,
    ProviderError,
    ProviderModelNotFound,
    ProviderProtocolError,
    ProviderTimeout,
    ProviderUnreachable,
)
from talekeeper.providers.base import CompletionRequest, Message
from talekeeper.providers.openai_compat import OpenAICompatProvider
from talekeeper_testkit.double import DIMS, ModelDouble, closed_port_url, embed_text

CHAT = CompletionRequest(
    model="double-narrator",
    messages=(Message("system", "Narrate."), Message("user", "> You open the door.")),
    max_tokens=50,
)
COMPLETION = CompletionRequest(
    model="double-narrator", mode="completion", prompt="Once upon a time", max_tokens=50
)


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def provider(url: str, **kw) -> OpenAICompatProvider:  # type: ignore[no-untyped-def]
    return OpenAICompatProvider(httpx.AsyncClient(), url, **kw)


@pytest.fixture
def keyed() -> Iterator[ModelDouble]:
    with ModelDouble(api_key="sk-test") as server:
        yield server


async def collect(p: OpenAICompatProvider, request: CompletionRequest) -> tuple[list[str], str]:
    pieces, final = [], ""
    async for chunk in p.stream(request):
        if chunk.done is not None:
            final = chunk.done.text
        else:
            pieces.append(chunk.text)
    return pieces, final


def test_chat_completion_returns_text_and_usage(double: ModelDouble) -> None:
    double.script("The hinges shriek.")
    result = run(provider(double.url).complete(CHAT))
    assert result.text == "The hinges shriek."
    assert result.tokens_out == 3 and result.tokens_in and result.tokens_in > 0
    body = double.requests[-1].body
    assert double.requests[-1].path == "/v1/chat/completions"
    assert body["messages"][1] == {"role": "user", "content": "> You open the door."}
    assert body["stream"] is False and body["max_tokens"] == 50


def test_chat_stream_yields_pieces_that_join_to_the_reply(double: ModelDouble) -> None:
    double.script("A cold wind pours through the open door.")
    pieces, final = run(collect(provider(double.url), CHAT))
    assert len(pieces) > 3
    assert "".join(pieces) == final == "A cold wind pours through the open door."
    assert double.requests[-1].body["stream"] is True


def test_completion_mode_streamed_and_not(double: ModelDouble) -> None:
    double.script("there was a fox.", "a wolf howled.")
    assert run(provider(double.url).complete(COMPLETION)).text == "there was a fox."
    pieces, final = run(collect(provider(double.url), COMPLETION))
    assert final == "a wolf howled." and "".join(pieces) == final
    assert double.requests[-1].path == "/v1/completions"
    assert double.requests[-1].body["prompt"] == "Once upon a time"


def test_embeddings_and_model_listing(double: ModelDouble) -> None:
    result = run(provider(double.url).embed(["a red dragon", "tax forms"], "double-embed"))
    assert result.vectors == [embed_text("a red dragon"), embed_text("tax forms")]
    assert len(result.vectors[0]) == DIMS
    assert run(provider(double.url).list_models()) == [
        "double-narrator",
        "double-embed",
        "double-summary",
    ]


def test_the_bearer_key_is_sent_and_a_wrong_key_is_named(keyed: ModelDouble) -> None:
    assert run(provider(keyed.url, api_key="sk-test").complete(CHAT)).text
    assert keyed.requests[-1].headers["authorization"] == "Bearer sk-test"
    with pytest.raises(ProviderAuthError, match="rejected the API key") as caught:
        run(provider(keyed.url, api_key="wrong").complete(CHAT))
    assert keyed.url in caught.value.message


def test_connection_refused_asks_whether_the_server_runs() -> None:
    url = closed_port_url()
    with pytest.raises(ProviderUnreachable, match="Is the server running at") as caught:
        run(provider(url).complete(CHAT))
    assert url in caught.value.message
    with pytest.raises(ProviderUnreachable):
        run(collect(provider(url), CHAT))


def test_unknown_model_names_it_and_lists_what_the_endpoint_offers(double: ModelDouble) -> None:
    request = CompletionRequest(model="llama9", messages=CHAT.messages)
    with pytest.raises(ProviderModelNotFound) as caught:
        run(provider(double.url).complete(request))
    assert "'llama9'" in caught.value.message
    assert "double-narrator, double-embed, double-summary" in caught.value.message
    with pytest.raises(ProviderModelNotFound):
        run(provider(double.url).embed(["x"], "nope"))


def test_timeout_says_how_long_it_waited(double: ModelDouble) -> None:
    double.fail_next("timeout", delay=2)
    with pytest.raises(ProviderTimeout, match=r"within 0\.3 s"):
        run(provider(double.url, timeout=0.3).complete(CHAT))
    double.fail_next("timeout", delay=2)
    with pytest.raises(ProviderTimeout):
        run(collect(provider(double.url, timeout=0.3), CHAT))


@pytest.mark.parametrize("streamed", [False, True])
def test_a_malformed_body_is_a_protocol_error(double: ModelDouble, streamed: bool) -> None:
    double.fail_next("malformed")
    with pytest.raises(ProviderProtocolError, match="malformed answer"):
        p = provider(double.url)
        run(collect(p, CHAT) if streamed else p.complete(CHAT))


def test_a_stream_cut_halfway_is_reported_after_the_pieces_it_sent(double: ModelDouble) -> None:
    double.script("one two three four five six seven eight")
    double.fail_next("cut")
    received: list[str] = []

    async def consume() -> None:
        async for chunk in provider(double.url).stream(CHAT):
            received.append(chunk.text)

    with pytest.raises(ProviderProtocolError, match="cut off"):
        run(consume())
    assert 0 < len(received) < 8


def test_a_server_error_repeats_the_endpoint_message(double: ModelDouble) -> None:
    double.fail_next("500")
    with pytest.raises(ProviderError, match="HTTP 500.*injected server error"):
        run(provider(double.url).complete(CHAT))


def test_a_wrong_base_url_suggests_the_v1_suffix(double: ModelDouble) -> None:
    with pytest.raises(ProviderError, match="end in /v1"):
        run(provider(double.url.removesuffix("/v1") + "/api").complete(CHAT))
