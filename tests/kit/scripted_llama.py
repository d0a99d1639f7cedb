"""``ScriptedLlama`` stands in for llama-cpp-python's ``Llama`` as the narrator (the one
thing the embedded provider lets a caller choose): it streams a fixed reply a few
characters at a time, as its ``create_chat_completion(stream=True)`` does, one reply per
call (the last one again after that), and keeps each call's keyword arguments."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any


class ScriptedLlama:
    def __init__(self, *replies: str, finish: str = "stop") -> None:
        self.replies = list(replies)
        self.finish = finish
        self.calls = 0
        self.kwargs: list[dict[str, Any]] = []  # each call's, in order

    def create_chat_completion(
        self, messages: list[dict[str, str]], **kwargs: Any
    ) -> Iterator[Any]:
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        self.kwargs.append(kwargs)
        pieces = [reply[i : i + 4] for i in range(0, len(reply), 4)]
        for n, piece in enumerate(pieces):
            last = n == len(pieces) - 1
            yield {
                "choices": [
                    {"delta": {"content": piece}, "finish_reason": self.finish if last else None}
                ]
            }

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        """One made-up token per byte: the byte's value."""
        return list(text)


def narrate(provider: Any, request: Any) -> tuple[str, str, tuple[str, ...]]:
    """What ``provider`` streams for ``request`` (joined), the text its last chunk stores and
    its repairs; the provider is closed after."""

    async def run() -> tuple[str, str, tuple[str, ...]]:
        streamed, done = [], None
        async for chunk in provider.stream(request):
            streamed.append(chunk.text)
            done = chunk.done or done
        await provider.aclose()
        assert done is not None
        return "".join(streamed), done.text, done.repairs

    return asyncio.run(run())
