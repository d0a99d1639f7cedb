"""How much of each prompt the model had to evaluate: the prefix it shares with the previous
prompt sent to the same model, when that prompt was the same user's.

llama.cpp (in-process and ``llama-server``), Ollama and vLLM keep the previous request's KV
cache and evaluate only what follows the longest common prefix of the token sequences;
hosted APIs discount a cached prefix. So a turn's prompt cost is its tokens after that
prefix, not its size.

Invariants:

- One ``PromptPrefixes`` per process remembers, per model (``key``: the endpoint and the
  model name), the last call made to it: whose it was (``owner``, a user id) and, for a
  turn's prompt, its token ids. ``measure`` compares a prompt with it without remembering
  (a dry run); ``sent`` measures and remembers (a turn, just before the request goes out);
  ``called`` remembers any other call to the model (a memory pass, a summary, a test)
  whose prompt we do not read.
- **No user learns anything of another's prompt.** A prompt is compared only with the
  previous call to its model when that call was the same owner's: after anyone else's
  call, or one whose prompt we did not read, ``cached`` is 0. Otherwise the common prefix
  length is an oracle: two dry runs per guess recover another player's instructions,
  cards and story token by token.
- ``evaluated = prompt - cached``; ``cached`` is the common prefix, 0 for the first prompt
  a model is sent in this process (a restart forgets: the server may still hold its
  cache, so the figure errs towards more evaluation, never less).
- A provider that reports its own figure (``Completion.tokens_evaluated``: llama-server's
  ``timings.prompt_n``, or an OpenAI-style ``cached_tokens``) measures against whatever
  the server evaluated last, which may be another user's prompt. It is believed over ours
  (``settle``), and the source kept with it, only as ``Belief`` allows: always where one
  user is served; where one process sees every call (SQLite: the app serves alone), only
  when the previous call to the model and every call while ours ran were the owner's;
  never where several processes share the models (PostgreSQL: a call this process cannot
  see may have come between).
- A prompt is tokenized as the model reads it where we know the form: completion mode is
  the prompt string itself; chat mode is each message's role and content in order, with
  fixed markers between them (the template's own markers are the same every turn, so the
  first difference falls where the real rendering's does).
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


Key = tuple[str, str]  # a model: its endpoint and its name
Owner = int | None  # the user a call is made for (None: no user, e.g. a check at setup)


class Belief(StrEnum):
    """When the server's own figure of what it evaluated is believed over ours."""

    ALWAYS = "always"  # one user is served: the server's cache can only hold their prompts
    OWN_CALLS = "own_calls"  # one process sees every call: when all around ours were the owner's
    NEVER = "never"  # processes this one cannot see share the models


@dataclass
class _Last:
    owner: Owner
    tokens: list[int] | None  # None: a call whose prompt we did not read
    seq: int  # which call this was, counted over all models


@dataclass(frozen=True)
class Sent:
    """A turn's prompt on its way to ``key``: its cost by our count, and what ``settle``
    needs to decide whether the server's own figure may be told to ``owner``."""

    key: Key
    owner: Owner
    use: PrefixUse
    seq: int
    after_own: bool  # the model's previous call was this owner's


class PromptPrefixes:
    def __init__(self, capacity: int = CAPACITY, *, belief: Belief = Belief.ALWAYS) -> None:
        self.capacity = capacity
        self.belief = belief
        self._last: OrderedDict[Key, _Last] = OrderedDict()
        self._seq = 0
        self._lock = threading.Lock()

    def measure(
        self, key: Key, request: CompletionRequest, counter: TokenCounter, *, owner: Owner
    ) -> PrefixUse:
        """What ``request`` would cost ``owner`` after the last call to ``key``; remembers
        nothing."""
        tokens = counter.tokens(prompt_text(request))
        with self._lock:
            last = self._last.get(key)
        return _use(last, owner, tokens)

    def sent(
        self, key: Key, request: CompletionRequest, counter: TokenCounter, *, owner: Owner
    ) -> Sent:
        """``request`` is going out to ``key`` for ``owner``: its cost, and it becomes the
        last prompt."""
        tokens = counter.tokens(prompt_text(request))
        with self._lock:
            last = self._last.get(key)
            seq = self._remember(key, _Last(owner, tokens, 0))
        after_own = last is not None and last.owner == owner
        return Sent(key, owner, _use(last, owner, tokens), seq, after_own)

    def called(self, key: Key, owner: Owner) -> None:
        """Another call went to ``key`` for ``owner`` (its prompt unread): the next prompt
        is compared with nothing, and a turn in flight no longer believes the server."""
        with self._lock:
            self._remember(key, _Last(owner, None, 0))

    def settle(self, sent: Sent, evaluated: int | None) -> PrefixUse:
        """``sent``'s cost, with the server's own figure where ``belief`` allows it."""
        if self.belief is Belief.NEVER or evaluated is None:
            return sent.use
        if self.belief is Belief.OWN_CALLS:
            with self._lock:
                last = self._last.get(sent.key)
            # Any call after ours (the same owner's too: we cannot tell which the server
            # took first) leaves the figure unproven.
            if not sent.after_own or last is None or last.seq != sent.seq:
                return sent.use
        return sent.use.reported(evaluated)

    def _remember(self, key: Key, last: _Last) -> int:
        self._seq += 1
        last.seq = self._seq
        self._last[key] = last
        self._last.move_to_end(key)
        while len(self._last) > self.capacity:
            self._last.popitem(last=False)
        return self._seq


def _use(last: _Last | None, owner: Owner, tokens: list[int]) -> PrefixUse:
    """``tokens``' cost after ``last``: only another prompt of the same owner's counts."""
    if last is None or last.owner != owner or last.tokens is None:
        return PrefixUse(len(tokens), 0, len(tokens))
    cached = shared_prefix(last.tokens, tokens)
    return PrefixUse(len(tokens), cached, len(tokens) - cached)
