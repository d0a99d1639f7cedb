"""Replies that open by repeating an earlier one (docs/voice.md, "Repeated replies").

The embedded placeholder narrator (SmolLM2-135M) often writes one of its recent replies
again, whole or nearly: at a low temperature the same story end leads it down the same
path. A narration whose opening repeats one of the recent replies is not shown; it is
written once more, and that take may not open with the rejected one's first token.

Invariants:

- The earlier replies are the request's own assistant messages, the last
  ``RECENT`` of them (the story's recent narrations, as the prompt holds them); the worked
  example turns the provider adds are not among them. Completion mode (one prompt text)
  has none: nothing is judged there.
- The **opening** is the narration's first ``OPENING`` words (all of it, when it ends
  sooner). It repeats an earlier reply when at least ``SHARE`` of its word 4-grams occur in
  that reply; an opening of fewer than ``MIN_GRAMS`` 4-grams repeats nothing.
- The second take may not open with the rejected take's first token (``first_not``) and
  writes no run of ``NGRAM`` tokens found in a recent reply and nowhere else in the
  prompt (``no_repeat``: the token that would complete one is never chosen; a run the
  story cards or the player's words hold stays free); nothing else of its sampling
  changes.
- Nothing of a narration is shown before its opening is judged (``Opening`` holds it
  back), so a rejected take never reaches the player; a take that passes is shown whole,
  the held words first. The last take allowed is shown whatever it repeats.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from talekeeper.providers.base import CompletionRequest

RECENT = 6  # the recent replies a narration is compared with (three turns of do/say/continue)
OPENING = 30  # words: about two sentences, a second or two of the placeholder's writing
SHARE = 0.5  # of the opening's word 4-grams found in one earlier reply
MIN_GRAMS = 4  # a shorter opening ("You nod.") is judged by none
NGRAM = 4  # tokens: the second take writes no run this long of a recent reply

# A logits processor as llama-cpp-python calls it: the tokens so far (prompt and reply, a
# NumPy array) and the next token's scores, changed in place and returned.
Processor = Callable[[Any, Any], Any]

_WORD = re.compile(r"[a-z0-9’']+")


def grams(text: str) -> set[tuple[str, ...]]:
    """The word 4-grams of ``text`` (lower case, punctuation dropped)."""
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + 4]) for i in range(len(words) - 3)}


def elsewhere(request: CompletionRequest) -> str:
    """The prompt but its assistant messages (the system text, the player's actions)."""
    return "\n".join(m.content for m in request.messages if m.role != "assistant")


def earlier_replies(request: CompletionRequest) -> list[str]:
    """The request's last ``RECENT`` assistant messages (none in completion mode)."""
    if request.mode != "chat":
        return []
    replies = [m.content for m in request.messages if m.role == "assistant" and m.content]
    return replies[-RECENT:]


def repeats(opening: str, earlier: Sequence[str]) -> bool:
    """Whether ``opening`` repeats one of ``earlier`` (module docstring)."""
    mine = grams(opening)
    if len(mine) < MIN_GRAMS:
        return False
    return any(len(mine & grams(e)) >= SHARE * len(mine) for e in earlier)


class Opening:
    """Holds a narration back until its opening is judged: ``feed`` gives what may be shown
    now, ``finish`` what is left at its end; ``repeat`` says the take was rejected (then
    nothing of it is ever given out)."""

    def __init__(self, earlier: Sequence[str]) -> None:
        self.earlier = list(earlier)
        self.held: list[str] = []
        self.judged = not self.earlier  # nothing to compare with: shown as it comes
        self.repeat = False

    def feed(self, piece: str) -> str:
        if self.judged:
            return "" if self.repeat else piece
        self.held.append(piece)
        if len(_WORD.findall("".join(self.held).lower())) < OPENING:
            return ""
        return self._judge()

    def finish(self) -> str:
        return "" if self.judged else self._judge()

    def _judge(self) -> str:
        self.judged = True
        text, self.held = "".join(self.held), []
        self.repeat = repeats(text, self.earlier)
        return "" if self.repeat else text


def first_not(token: int) -> Processor:
    """Keeps ``token`` from opening the reply, and nothing more."""
    start: list[int] = []

    def process(input_ids: Any, scores: Any) -> Any:
        if not start:
            start.append(len(input_ids))
        if len(input_ids) == start[0] and 0 <= token < len(scores):
            scores[token] = -float("inf")
        return scores

    return process


def no_repeat(
    replies: Sequence[Sequence[int]], allowed: Sequence[int] = (), n: int = NGRAM
) -> Processor:
    """Keeps the reply from completing any run of ``n`` tokens found in ``replies`` but not
    in ``allowed`` (the rest of the prompt: the names and phrases of the story cards and the
    player's words may be written again): after the ``n - 1`` tokens that begin such a run,
    the token that ended it is never chosen."""
    free = {tuple(allowed[i : i + n]) for i in range(len(allowed) - n + 1)}
    follows: dict[tuple[int, ...], set[int]] = {}
    for tokens in replies:
        for i in range(len(tokens) - n + 1):
            run = tuple(tokens[i : i + n])
            if run not in free:
                follows.setdefault(run[:-1], set()).add(run[-1])

    def process(input_ids: Any, scores: Any) -> Any:
        banned = follows.get(tuple(int(t) for t in input_ids[len(input_ids) - n + 1 :]))
        for token in banned or ():
            scores[token] = -float("inf")
        return scores

    return process
