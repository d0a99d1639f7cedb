from __future__ import annotations

from talekeeper.core.tokens import BpeCounter, CharCounter


def test_char_counter_is_exact() -> None:
    counter = CharCounter()
    assert counter.count("abcdef") == 6
    assert counter.head("abcdef", 4) == "abcd" and counter.tail("abcdef", 4) == "cdef"
    assert counter.tail("abcdef", 0) == "" and counter.head("abc", 10) == "abc"


def test_bpe_counter_counts_real_cl100k_tokens_offline() -> None:
    counter = BpeCounter()
    # "hello world" is two cl100k tokens; characters/4 would say 2.75
    assert counter.count("hello world") == 2
    text = "The lighthouse keeper hid the brass key under the third step of the stair."
    n = counter.count(text)
    assert n < len(text) / 2
    head, tail = counter.head(text, 5), counter.tail(text, 5)
    assert counter.count(head) == 5 and text.startswith(head)
    assert counter.count(tail) == 5 and text.endswith(tail)
    assert counter.count("") == 0
