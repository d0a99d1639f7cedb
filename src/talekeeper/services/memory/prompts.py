"""The requests the summary model gets, and the cleaning of what it writes back.

Invariants:

- Prompt text lives in ``services/memory/texts/*.txt`` and is rendered with
  ``string.Template.substitute``: a missing variable raises ``KeyError`` and an
  unexpected one ``ValueError``, so a template and its caller cannot drift apart
  silently. Values are inserted as they are (a "$" in the story is never expanded).
- The system prompts are the same for every adventure (providers can cache them);
  everything adventure-specific (the cast brief, the passage, the current
  summary, the new events) goes in the user message.
- The word limits the prompts state are the limits ``clean_memory`` and
  ``clean_summary`` enforce: the template takes them from the constants below.
- Chat mode sends (system, user). Completion mode sends one prompt: the system
  text, the user part, then a cue line ("[Memory]" / "[Story Summary]") the model
  continues from; it stops where a new "[Section]" would begin (and, for a
  memory, at a blank line).
- Cleaning never adds a word of its own: it removes the excerpt marker, reasoning
  blocks, a preamble ("Memory:", "Here is the summary:"), surrounding quotes and a
  trailing word count, collapses whitespace, and cuts to the word limit at a word
  boundary (back to the last full sentence when that keeps at least half the
  limit, else with "…"). An empty result means the model wrote nothing usable.
- Cleaning is linear in the reply (a model can write a long run of blanks): the patterns
  have no nested or overlapping quantifiers over the same characters.
"""

from __future__ import annotations

import re
import string
from functools import cache
from pathlib import Path

from talekeeper.providers.base import CompletionRequest, Message, Mode
from talekeeper.services.memory.excerpt import strip_marker
from talekeeper.services.memory.extractive import MEMORY_WORDS, SUMMARY_WORDS

PROMPTS = Path(__file__).resolve().parent / "texts"

# The limits are the extractive writer's: one number each, whoever writes.
MEMORY_WORDS_LIMIT = MEMORY_WORDS
SUMMARY_WORDS_LIMIT = SUMMARY_WORDS
MEMORY_REPLY_TOKENS = 120  # 50 English words are about 70 tokens; the rest absorbs a preamble
SUMMARY_REPLY_TOKENS = 450  # 250 words are about 330 tokens; the rest absorbs a preamble
MEMORY_TEMPERATURE = 0.2  # facts, not style: near-greedy, with a little spread against loops
SUMMARY_TEMPERATURE = 0.3  # a rewrite of a longer text: slightly freer phrasing, same facts
TOP_P = 0.95  # the usual default: the low temperature does the narrowing
MIN_SENTENCE_SHARE = 0.5  # ending on a full sentence may drop at most half of the word limit

MEMORY_CUE = "[Memory]"
SUMMARY_CUE = "[Story Summary]"
SECTION_STOP = "\n["  # a completion model that starts a new section has finished
MEMORY_STOP = ("\n\n", SECTION_STOP)  # a memory is one paragraph
SUMMARY_STOP = (SECTION_STOP,)  # a summary may have paragraphs
NO_SUMMARY = "(none yet)"
BY_PLAYER = ", written by the player"
CUT = "…"

_THINKING = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.IGNORECASE | re.DOTALL)
_LABEL = r"(?:(?:updated|new|current)\s+)?(?:story\s+)?(?:summary|memory)"
_PREAMBLES = (
    # "Sure!", "Certainly," before the real preamble (the punctuation is required:
    # "Sure of the path, Mara climbed" is a memory)
    re.compile(r"^(?:sure|certainly|of course|okay|ok|alright)[,.!]+\s+", re.IGNORECASE),
    # "Here is the memory:", "Here's a summary of the passage:"
    re.compile(r"^here(?:'s|’s|\s+is|\s+are)\b[^\n.!?:]{0,100}:\s*", re.IGNORECASE),
    # a heading on a line of its own: "**Story Summary**", "## Memory", "[Memory]"
    re.compile(rf"^[*_#\s]*\[?{_LABEL}\]?[*_:\s]*?\n", re.IGNORECASE),
    # "Memory:", "**Summary:**", "[Memory]" before the text itself
    re.compile(rf"^[*_]*(?:\[{_LABEL}\]|{_LABEL}\s*[:：])[*_]*\s*", re.IGNORECASE),
)
# Starts only where a run of blanks starts (the match from there is the leftmost anyway):
# tried from every blank of a long run, each try read to the run's end, quadratic.
_WORD_COUNT = re.compile(r"(?<!\s)\s*+\((?:word\s+count:?\s*)?\d+\s+words?\)\s*$", re.IGNORECASE)
_QUOTES = {'"': '"', "“": "”", "'": "'", "‘": "’", "«": "»"}
_SENTENCE_END = re.compile(r"[.!?][\"”’')\]]*(?=\s|$)")


@cache
def template(name: str) -> string.Template:
    return string.Template((PROMPTS / name).read_text(encoding="utf-8"))


def render(name: str, **values: str) -> str:
    """The template ``name`` with every variable filled; a missing one raises ``KeyError``."""
    known = template(name)
    unexpected = set(values) - set(known.get_identifiers())
    if unexpected:
        raise ValueError(f"{name} has no variable {', '.join(sorted(unexpected))}")
    return known.substitute(values).strip()


def completion_request(
    system: str,
    user: str,
    cue: str,
    *,
    model: str,
    mode: Mode,
    max_tokens: int,
    temperature: float,
    stop: tuple[str, ...],
) -> CompletionRequest:
    """A background task's request: ``system`` and ``user`` as two messages (chat), or one
    prompt ending in ``cue`` (completion)."""
    if mode == "completion":
        return CompletionRequest(
            model=model,
            mode="completion",
            prompt=f"{system}\n\n{user}\n\n{cue}\n",
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=TOP_P,
            stop=stop,
        )
    return CompletionRequest(
        model=model,
        mode="chat",
        messages=(Message("system", system), Message("user", user)),
        max_tokens=max_tokens,
        temperature=temperature,
        top_p=TOP_P,
    )


def mode_of(mode: str) -> Mode:
    if mode == "chat":
        return "chat"
    if mode == "completion":
        return "completion"
    raise ValueError(f"mode must be 'chat' or 'completion', not {mode!r}")


def memory_request(block_excerpt: str, cast: str, *, model: str, mode: str) -> CompletionRequest:
    """A request for one memory of a block; ``block_excerpt`` is ``excerpt(block)``."""
    return completion_request(
        render("memory_system.txt", words=str(MEMORY_WORDS_LIMIT)),
        render("memory_user.txt", cast=cast.strip(), passage=block_excerpt.strip()),
        MEMORY_CUE,
        model=model,
        mode=mode_of(mode),
        max_tokens=MEMORY_REPLY_TOKENS,
        temperature=MEMORY_TEMPERATURE,
        stop=MEMORY_STOP,
    )


def summary_request(
    base: str, base_by_user: bool, events: str, cast: str, *, model: str, mode: str
) -> CompletionRequest:
    """A request to rewrite the Story Summary ``base`` (empty: none yet) with ``events``."""
    base = base.strip()
    user = render(
        "summary_user.txt",
        by_player=BY_PLAYER if base and base_by_user else "",
        base=base or NO_SUMMARY,
        cast=cast.strip(),
        events=events.strip(),
    )
    return completion_request(
        render("summary_system.txt", words=str(SUMMARY_WORDS_LIMIT)),
        user,
        SUMMARY_CUE,
        model=model,
        mode=mode_of(mode),
        max_tokens=SUMMARY_REPLY_TOKENS,
        temperature=SUMMARY_TEMPERATURE,
        stop=SUMMARY_STOP,
    )


def _unwrap(text: str) -> str:
    """The model's text without reasoning, marker, preamble, quotes or a word count."""
    text = strip_marker(_THINKING.sub("", text)).strip()
    changed = True
    while changed:
        changed = False
        for preamble in _PREAMBLES:
            stripped = preamble.sub("", text, count=1).strip()
            if stripped != text:
                text, changed = stripped, True
    text = _WORD_COUNT.sub("", text).strip()
    close = _QUOTES.get(text[:1])
    if close and len(text) > 1 and text.endswith(close) and close not in text[1:-1]:
        text = text[1:-1].strip()
    return text


def _cut(paragraphs: list[str], limit_words: int) -> str:
    """The paragraphs, cut to ``limit_words`` words on a word boundary."""
    kept: list[str] = []
    left = limit_words
    for paragraph in paragraphs:
        words = paragraph.split(" ")
        if len(words) > left:
            kept.append(" ".join(words[:left]))
            break
        kept.append(paragraph)
        left -= len(words)
    else:
        return "\n\n".join(kept)
    text = "\n\n".join(p for p in kept if p)
    ends = list(_SENTENCE_END.finditer(text))
    if ends and len(text[: ends[-1].end()].split()) >= limit_words * MIN_SENTENCE_SHARE:
        return text[: ends[-1].end()]
    return text.rstrip(" ,;:-–—") + CUT if text else ""


def clean_memory(text: str, limit_words: int = MEMORY_WORDS_LIMIT) -> str:
    """One line of at most ``limit_words`` words; empty when the model wrote nothing usable."""
    return _cut([" ".join(_unwrap(text).split())], limit_words)


def clean_summary(text: str, limit_words: int = SUMMARY_WORDS_LIMIT) -> str:
    """Paragraphs (blank-line separated) of at most ``limit_words`` words in all."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", _unwrap(text))]
    return _cut([p for p in paragraphs if p], limit_words)
