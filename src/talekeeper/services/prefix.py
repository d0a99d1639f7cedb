"""How much of each prompt the model had to evaluate: the prefix it shares with the previous
prompt sent to the same model.

llama.cpp (in-process and ``llama-server``), Ollama and vLLM keep the previous request's KV
cache and evaluate only what follows the longest common prefix of the token sequences;
hosted APIs discount a cached prefix. So a turn's prompt cost is its tokens after that
prefix, not its size.

Invariants:

- One ``PromptPrefixes`` per process remembers, per model (``key``: the endpoint and the
  model name), the token ids of the last prompt *sent* to it (``sent``). ``measure`` compares
  a prompt with it without remembering (a dry run); ``sent`` measures and remembers (a
  turn, just before the request goes out).
- A prompt is tokenized as the model reads it where we know the form: completion mode is
  the prompt string itself; chat mode is each message's role and content in order, with
  fixed markers between them (the template's own markers are the same every turn, so the
  first difference falls where the real rendering's does).
- ``evaluated = prompt - cached``; ``cached`` is the common prefix, 0 for the first prompt
  a model is sent in this process (a restart forgets: the server may still hold its
  cache, so the figure errs towards more evaluation, never less).
- A provider that reports its own figure (``Completion.tokens_evaluated``: llama-server's
  ``timings.prompt_n``, or an OpenAI-style ``cached_tokens``) is believed over ours; the
  source of the figure is kept with it.
- Bounded: ``CAPACITY`` models, least recently used forgotten first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from talekeeper.core.tokens import TokenCounter
from talekeeper.providers.base import CompletionRequest

CAPACITY = 64  # models remembered: a small group's narrators with room to spare
# Around each chat message, as chat templates put theirs (ChatML's <|im_start|>role ...
# <|im_end|>): fixed per role, so only the messages' own text can differ, and a message's
# last word never merges with what follows it.
ROLE_MARK = "<|{role}|>\n"
END_MARK = "<|end|>\n"


class EvaluatedBy(StrEnum):
    """Where ``PrefixUse.evaluated`` comes from."""

    PREFIX = "prefix"  # our count: the prompt after the prefix shared with the last one
    PROVIDER = "provider"  # the model server's own report


@dataclass(frozen=True)
class PrefixUse:
    prompt: int  # tokens in the prompt
    cached: int  # of them, the prefix shared with the previous prompt to the same model
    evaluated: int  # what the model had to evaluate: prompt - cached
    by: EvaluatedBy = EvaluatedBy.PREFIX

    def public(self) -> dict[str, Any]:
        return asdict(self)

    def reported(self, evaluated: int | None) -> PrefixUse:
        """This use with the provider's own figure, when it gave one that fits."""
        if evaluated is None or not 0 <= evaluated <= self.prompt:
            return self
        return PrefixUse(self.prompt, self.prompt - evaluated, evaluated, EvaluatedBy.PROVIDER)


def prompt_text(request: CompletionRequest) -> str:
    """The request's text as the model reads it, up to its template's fixed markers."""
    if request.mode == "completion":
        return request.prompt or ""
    return "".join(
        ROLE_MARK.format(role=m.role) + m.content + END_MARK for m in request.messages or ()
    )


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    # Chunks compared whole first: a long shared prefix is the usual case, and slicing
    # compares in C; the last unequal chunk is walked token by token.
    step = 256
    i = 0
    while i + step <= n and a[i : i + step] == b[i : i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return i


class PromptPrefixes:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._last: OrderedDict[tuple[str, str], list[int]] = OrderedDict()
        self._lock = threading.Lock()

    def measure(
        self, key: tuple[str, str], request: CompletionRequest, counter: TokenCounter
    ) -> PrefixUse:
        """What ``request`` would cost after the last prompt sent to ``key``; remembers
        nothing."""
        return self._use(key, counter.tokens(prompt_text(request)), remember=False)

    def sent(
        self, key: tuple[str, str], request: CompletionRequest, counter: TokenCounter
    ) -> PrefixUse:
        """``request`` is going out to ``key``: its cost, and it becomes the last prompt."""
        return self._use(key, counter.tokens(prompt_text(request)), remember=True)

    def _use(self, key: tuple[str, str], tokens: list[int], *, remember: bool) -> PrefixUse:
        with self._lock:
            last = self._last.get(key)
            if remember:
                self._last[key] = tokens
                self._last.move_to_end(key)
                while len(self._last) > self.capacity:
                    self._last.popitem(last=False)
        cached = shared_prefix(last, tokens) if last is not None else 0
        return PrefixUse(len(tokens), cached, len(tokens) - cached)
