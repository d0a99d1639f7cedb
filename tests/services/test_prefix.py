"""How much of a prompt the model had to evaluate (``services.prefix``): the prefix shared
with the previous prompt to the same model, counted with a real tokenizer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from talekeeper.core.tokens import BpeCounter, CharCounter
from talekeeper.providers.base import CompletionRequest, Message
from talekeeper.services.prefix import (
    EvaluatedBy,
    PrefixUse,
    PromptPrefixes,
    prompt_text,
    shared_prefix,
)

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
    use = prefixes.sent(KEY, first, counter)
    assert use.cached == 0 and use.evaluated == use.prompt == counter.count(prompt_text(first))
    longer = chat("You are the narrator.", "I open the door.", "It creaks.", "I go in.")
    use = prefixes.sent(KEY, longer, counter)
    assert use.cached == counter.count(prompt_text(first))  # all of the first is kept
    assert use.evaluated == use.prompt - use.cached > 0
    # A change near the top costs nearly the whole prompt again.
    changed = chat("You are a narrator.", "I open the door.", "It creaks.", "I go in.")
    use = prefixes.sent(KEY, changed, counter)
    assert use.cached == counter.count("<|system|>\nYou are")  # up to the first change
    assert use.evaluated == use.prompt - use.cached


def test_measuring_remembers_nothing_and_each_model_has_its_own_cache() -> None:
    prefixes, counter = PromptPrefixes(), CharCounter()
    prefixes.sent(KEY, completion("abcdef"), counter)
    for _ in range(2):  # a dry run, twice: the same answer, the cache untouched
        assert prefixes.measure(KEY, completion("abcxyz"), counter) == PrefixUse(6, 3, 3)
    assert prefixes.measure(KEY, completion("abcdefgh"), counter) == PrefixUse(8, 6, 2)
    other = (KEY[0], "another-model")
    assert prefixes.measure(other, completion("abcdef"), counter).cached == 0
    small = PromptPrefixes(capacity=1)
    small.sent(KEY, completion("abc"), counter)
    small.sent(other, completion("abc"), counter)  # the first model is forgotten
    assert small.measure(KEY, completion("abc"), counter).cached == 0


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
