"""How much of a prompt the model had to evaluate (``services.prompt.prefix``): the prefix shared
with the previous prompt to the same model, counted with a real tokenizer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from talekeeper.bootstrap import Runtime
from talekeeper.core.tokens import BpeCounter, CharCounter, TokenCounter
from talekeeper.providers.base import CompletionRequest, Embeddings, Message, Provider
from talekeeper.services.prompt.prefix import (
    Belief,
    EvaluatedBy,
    PrefixUse,
    PromptPrefixes,
    prompt_text,
    shared_prefix,
)
from talekeeper.settings import load_settings

pytestmark = pytest.mark.no_database

KEY = ("http://127.0.0.1:8080/v1", "narrator")


def chat(*texts: str) -> CompletionRequest:
    roles = ["system", *(["user", "assistant"] * len(texts))][: len(texts)]
    return CompletionRequest(
        mode="chat",
        model="narrator",
        messages=tuple(Message(r, t) for r, t in zip(roles, texts, strict=True)),  # type: ignore[arg-type]
    )


def completion(prompt: str) -> CompletionRequest:
    return CompletionRequest(mode="completion", model="narrator", prompt=prompt)


@given(st.lists(st.integers(0, 3), max_size=700), st.lists(st.integers(0, 3), max_size=700))
def test_the_shared_prefix_is_the_longest_common_one(a: list[int], b: list[int]) -> None:
    naive = 0
    while naive < min(len(a), len(b)) and a[naive] == b[naive]:
        naive += 1
    assert shared_prefix(a, b) == naive == shared_prefix(b, a)


def test_a_first_prompt_is_evaluated_whole_and_the_next_after_the_shared_prefix() -> None:
    prefixes, counter = PromptPrefixes(), BpeCounter()
    first = chat("You are the narrator.", "I open the door.")
    use = prefixes.sent(KEY, first, counter, owner=1).use
    assert use.cached == 0 and use.evaluated == use.prompt == counter.count(prompt_text(first))
    longer = chat("You are the narrator.", "I open the door.", "It creaks.", "I go in.")
    use = prefixes.sent(KEY, longer, counter, owner=1).use
    assert use.cached == counter.count(prompt_text(first))  # all of the first is kept
    assert use.evaluated == use.prompt - use.cached > 0
    # A change near the top costs nearly the whole prompt again.
    changed = chat("You are a narrator.", "I open the door.", "It creaks.", "I go in.")
    use = prefixes.sent(KEY, changed, counter, owner=1).use
    assert use.cached == counter.count("<|system|>\nYou are")  # up to the first change
    assert use.evaluated == use.prompt - use.cached


def test_measuring_remembers_nothing_and_each_model_has_its_own_cache() -> None:
    prefixes, counter = PromptPrefixes(), CharCounter()
    prefixes.sent(KEY, completion("abcdef"), counter, owner=1)
    for _ in range(2):  # a dry run, twice: the same answer, the cache untouched
        assert prefixes.measure(KEY, completion("abcxyz"), counter, owner=1) == PrefixUse(6, 3, 3)
    assert prefixes.measure(KEY, completion("abcdefgh"), counter, owner=1) == PrefixUse(8, 6, 2)
    other = (KEY[0], "another-model")
    assert prefixes.measure(other, completion("abcdef"), counter, owner=1).cached == 0
    small = PromptPrefixes(capacity=1)
    small.sent(KEY, completion("abc"), counter, owner=1)
    small.sent(other, completion("abc"), counter, owner=1)  # the first model is forgotten
    assert small.measure(KEY, completion("abc"), counter, owner=1).cached == 0


def test_the_chat_roles_are_part_of_the_text_the_cache_sees() -> None:
    same_words = prompt_text(chat("Hello", "there"))
    assert "<|system|>" in same_words and "<|user|>" in same_words
    moved = CompletionRequest(
        mode="chat",
        model="narrator",
        messages=(Message("system", "Hello"), Message("assistant", "there")),
    )
    assert prompt_text(moved) != same_words


def test_a_provider_figure_is_believed_when_it_fits() -> None:
    ours = PrefixUse(100, 40, 60)
    assert ours.reported(None) is ours
    assert ours.reported(101) is ours  # more than the prompt: not a count of this prompt
    assert ours.reported(-1) is ours
    theirs = ours.reported(12)
    assert theirs == PrefixUse(100, 88, 12, EvaluatedBy.PROVIDER)


def test_a_prompt_is_measured_only_against_the_same_users_last_call() -> None:
    """The common prefix with another user's prompt is an oracle of its text: it is never
    counted, nor is one with a call whose prompt was not read."""
    prefixes, counter = PromptPrefixes(belief=Belief.OWN_CALLS), CharCounter()
    prefixes.sent(KEY, completion("The vault code is MARIGOLD"), counter, owner=1)
    for guess in ("The vault code is MARIGOLD", "The vault code is ROSE", "Zzz"):
        assert prefixes.measure(KEY, completion(guess), counter, owner=2).cached == 0
        assert prefixes.sent(KEY, completion(guess), counter, owner=2).use.cached == 0
        prefixes.sent(KEY, completion("The vault code is MARIGOLD"), counter, owner=1)
    assert prefixes.measure(KEY, completion("The vault"), counter, owner=1).cached == 9
    prefixes.called(KEY, 1)  # a memory pass of the same user's: its prompt unread
    assert prefixes.measure(KEY, completion("The vault"), counter, owner=1).cached == 0
    prefixes.sent(KEY, completion("The vault"), counter, owner=1)
    prefixes.called(("elsewhere", "narrator"), 2)  # another model's cache is its own
    assert prefixes.measure(KEY, completion("The vault"), counter, owner=1).cached == 9


def test_the_servers_own_figure_is_believed_only_where_it_can_hold_nobody_elses_prompt() -> None:
    counter = CharCounter()

    def settled(belief: Belief, before: int | None, during: int | None) -> PrefixUse:
        prefixes = PromptPrefixes(belief=belief)
        if before is not None:
            prefixes.sent(KEY, completion("abcdef"), counter, owner=before)
        sent = prefixes.sent(KEY, completion("abcxyz"), counter, owner=1)
        if during is not None:
            prefixes.called(KEY, during)
        return prefixes.settle(sent, 2)

    server = PrefixUse(6, 4, 2, EvaluatedBy.PROVIDER)
    ours_after_own, ours_after_other = PrefixUse(6, 3, 3), PrefixUse(6, 0, 6)
    assert settled(Belief.ALWAYS, 2, 2) == server  # one local player: nothing to hide
    assert settled(Belief.OWN_CALLS, 1, None) == server
    assert settled(Belief.OWN_CALLS, 2, None) == ours_after_other  # after another's call
    assert settled(Belief.OWN_CALLS, None, None) == ours_after_other  # nobody known before
    assert settled(Belief.OWN_CALLS, 1, 2) == ours_after_own  # another's call while ours ran
    assert settled(Belief.OWN_CALLS, 1, 1) == ours_after_own  # which came first is unknown
    assert settled(Belief.NEVER, 1, None) == ours_after_own  # other processes are unseen
    prefixes = PromptPrefixes(belief=Belief.ALWAYS)
    sent = prefixes.sent(KEY, completion("abc"), counter, owner=1)
    assert prefixes.settle(sent, None) == sent.use


def test_the_in_process_embedder_leaves_the_in_process_narrators_cache(tmp_path: Path) -> None:
    """Both are named "embedded" (one cache key), but the embedder is another model: the
    query embedding each turn makes must not make every turn's prompt count as new."""

    class Vectors:  # the in-process provider's embeddings, without loading MiniLM
        def __init__(self, inner: Provider) -> None:
            self.inner, self.info = inner, inner.info

        async def embed(self, texts: list[str], model: str) -> Embeddings:
            return Embeddings([[1.0, 0.0] for _ in texts], model, len(texts))

        def token_counter(self, model: str) -> TokenCounter:
            return self.inner.token_counter(model)

        async def aclose(self) -> None:
            await self.inner.aclose()

    async def check() -> None:
        rt = Runtime.build(load_settings({"TALEKEEPER_DATA_DIR": str(tmp_path / "data")}))
        try:
            rt.embedded = Vectors(rt.embedded)  # type: ignore[assignment]
            models = rt.models_for_user(rt.local_user_id())
            key, counter = models.narrator.cache_key, BpeCounter()
            assert models.embedding is not None and models.embedding.cache_key == key
            rt.prefixes.sent(key, chat("The fog rolls in.", "I wait."), counter, owner=1)
            await models.embedding.embed(["where is the lantern"])
            after = rt.prefixes.measure(key, chat("The fog rolls in.", "I go."), counter, owner=1)
            assert after.cached > 0
        finally:
            await rt.aclose()

    asyncio.run(check())
