"""With streamed turns queued on the embedded narrator, the rest of the app still answers at
once: GET /api/health (whose database and settings reads run in the default executor) does
not wait for the queue. The real app on uvicorn, its embedded provider built on a gated
stand-in for llama.cpp (tests/kit/gated_llama.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
from tests.conftest import make_settings
from tests.kit.gated_llama import REPLY, GatedLlama, default_pool_size
from tests.web.sse import parse_events

from talekeeper.providers.embedded import EmbeddedProvider
from talekeeper.web.app import create_app
from talekeeper_testkit.live import serving


async def _turn(client: httpx.AsyncClient, adventure: int) -> list[tuple[str, Any]]:
    path = f"/api/adventures/{adventure}/actions"
    body = {"type": "do", "text": "You wait for the tide."}
    headers = {"Accept": "text/event-stream"}
    async with client.stream("POST", path, json=body, headers=headers) as response:
        lines = [line async for line in response.aiter_lines()]
    return parse_events(lines)


async def _while_queued(
    url: str, llama: GatedLlama, turns: int
) -> tuple[float, list[list[tuple[str, Any]]]]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        ids = [
            (await client.post("/api/adventures", json={"title": f"Queue {i}"})).json()["id"]
            for i in range(turns)
        ]
        streams = [asyncio.create_task(_turn(client, i)) for i in ids]
        try:
            deadline = time.monotonic() + 10
            while not llama.order and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.5)  # the other turns reach the narrator and wait
            started = time.perf_counter()
            health = await client.get("/api/health", timeout=5)
            elapsed = time.perf_counter() - started
            assert health.status_code == 200 and health.json()["database"]["ok"]
        finally:
            llama.gate.set()
        return elapsed, await asyncio.gather(*streams)


def test_health_answers_at_once_while_streamed_turns_wait_for_the_narrator(
    tmp_path: Path,
) -> None:
    llama = GatedLlama()
    app = create_app(make_settings(tmp_path, embedding_model="none"))
    turns = max(8, default_pool_size() + 2)
    with serving(app) as (url, _loop):
        app.state.runtime.embedded = EmbeddedProvider(load_narrator=lambda: llama)
        elapsed, events = asyncio.run(_while_queued(url, llama, turns))
    assert elapsed < 1.0, f"GET /api/health took {elapsed:.2f} s behind the queue"
    # Narration streams a sentence at a time on the placeholder (its voice repairs read
    # whole sentences), so the chunks are whole sentences, not llama.cpp's pieces.
    for turn in events:
        names = [name for name, _ in turn]
        assert names[0] == "action" and names[-1] == "reply" and "chunk" in names, names
        assert set(names[1:-1]) == {"chunk"}, names
        assert "".join(data["text"] for name, data in turn if name == "chunk") == "".join(REPLY)
    assert {turn[-1][1]["reply"]["text"] for turn in events} == {"".join(REPLY)}
    assert len(llama.order) == turns and llama.most_at_once == 1
    assert all(text.endswith("> You wait for the tide.") for text in llama.order)
