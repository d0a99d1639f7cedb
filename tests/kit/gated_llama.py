"""``GatedLlama`` stands in for llama-cpp-python's ``Llama`` (the one thing the embedded
provider lets a caller choose): it streams a short reply (``REPLY``) in llama.cpp's event
shape, each generation held until the test opens its gate, and counts how many ran at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

REPLY = ("The ", "tide ", "turns.")


def default_pool_size() -> int:
    """Threads in asyncio's default executor (ThreadPoolExecutor's own default)."""
    return min(32, (os.cpu_count() or 1) + 4)


class GatedLlama:
    def __init__(self) -> None:
        self.gate = threading.Event()
        self.order: list[str] = []
        self.running = 0
        self.most_at_once = 0
        self._lock = threading.Lock()

    def create_chat_completion(self, messages: list[dict[str, str]], **_: Any) -> Iterator[Any]:
        return self._events(messages[-1]["content"], chat=True)

    def create_completion(self, prompt: str, **_: Any) -> Iterator[Any]:
        return self._events(prompt, chat=False)

    def _events(self, label: str, *, chat: bool) -> Iterator[Any]:
        with self._lock:
            self.order.append(label)
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            if not self.gate.wait(20):
                raise RuntimeError("the test never opened the gate")
            for piece in REPLY:
                body = {"delta": {"content": piece}} if chat else {"text": piece}
                yield {"choices": [{**body, "finish_reason": None}]}
            yield {"choices": [{"delta": {}, "text": "", "finish_reason": "stop"}]}
        finally:
            with self._lock:
                self.running -= 1
