"""Each streamed call leaves exactly one record: ok, error or cancelled."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from talekeeper.core.errors import ProviderError
from talekeeper.providers.base import CompletionRequest, Message
from talekeeper.providers.openai_compat import OpenAICompatProvider
from talekeeper.services.endpoints.ai_calls import CallRecord, LoggedModel
from talekeeper_testkit.double import ModelDouble

pytestmark = pytest.mark.no_database

REQUEST = CompletionRequest(model="double-narrator", messages=(Message("user", "> Look."),))


def stream_with(double: ModelDouble, *, stop_after: int | None = None) -> list[CallRecord]:
    records: list[CallRecord] = []

    async def go() -> None:
        async with httpx.AsyncClient() as client:
            model = LoggedModel(
                OpenAICompatProvider(client, double.url), "double-narrator", records.append
            )
            stream = model.stream(REQUEST, kind="narration", adventure_id=7)
            seen = 0
            try:
                async for _chunk in stream:
                    seen += 1
                    if stop_after is not None and seen >= stop_after:
                        break
            finally:
                await stream.aclose()

    asyncio.run(go())
    return records


def test_a_finished_stream_is_one_ok_record_with_tokens(double: ModelDouble) -> None:
    double.script("The fog lifts over the quay.")
    [record] = stream_with(double)
    assert (record.status, record.kind, record.adventure_id) == ("ok", "narration", 7)
    assert record.tokens_out == 6


def test_a_failed_stream_records_only_the_error(double: ModelDouble) -> None:
    double.fail_next("500")
    records: list[CallRecord] = []

    async def go() -> None:
        async with httpx.AsyncClient() as client:
            model = LoggedModel(OpenAICompatProvider(client, double.url), "m", records.append)
            with pytest.raises(ProviderError):
                async for _chunk in model.stream(REQUEST, kind="narration"):
                    pass

    asyncio.run(go())
    assert [r.status for r in records] == ["error"]
    assert "HTTP 500" in (records[0].error or "")


def test_a_consumer_that_stops_early_leaves_one_cancelled_record(double: ModelDouble) -> None:
    double.script("one two three four five six")
    records = stream_with(double, stop_after=2)
    assert [r.status for r in records] == ["cancelled"]


def test_every_call_but_a_turns_narration_is_told_to_the_prompt_cache(
    double: ModelDouble,
) -> None:
    """A memory pass or a test fills the server's cache with its own prompt: the prefix
    memory must hear of it (a turn's narration tells it itself, with the prompt)."""
    double.script("One.", "Two.", "Three.")
    seen: list[tuple[tuple[str, str], int | None]] = []

    async def go() -> None:
        async with httpx.AsyncClient() as client:
            provider = OpenAICompatProvider(client, double.url)
            model = LoggedModel(
                provider,
                "double-narrator",
                lambda _r: None,
                user_id=4,
                on_call=lambda *a: seen.append(a),
            )
            async for _chunk in model.stream(REQUEST, kind="narration"):
                pass
            assert seen == []
            await model.complete(REQUEST, kind="memory")
            async for _chunk in model.stream(REQUEST, kind="summary"):
                pass
            await model.embed(["a"], kind="embedding")
            assert model.cache_key == (provider.info.name, "double-narrator")
            assert seen == [(model.cache_key, 4)] * 3

    asyncio.run(go())
    assert len(seen) == 3
