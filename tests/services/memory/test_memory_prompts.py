"""The memory and Story Summary requests (golden files) and the cleaning of replies.

To accept an intended change to a prompt: ``UPDATE_GOLDEN=1 pytest
tests/services/memory/test_memory_prompts.py`` and review the diff of ``tests/golden/``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from talekeeper.core.tokens import BpeCounter
from talekeeper.providers.base import CompletionRequest
from talekeeper.services.cards.rules import CardView
from talekeeper.services.memory.cast import Persona, cast_brief
from talekeeper.services.memory.excerpt import MARKER, excerpt
from talekeeper.services.memory.prompts import (
    MEMORY_REPLY_TOKENS,
    MEMORY_WORDS_LIMIT,
    SUMMARY_REPLY_TOKENS,
    SUMMARY_TEMPERATURE,
    SUMMARY_WORDS_LIMIT,
    clean_memory,
    clean_summary,
    memory_request,
    render,
    summary_request,
)

pytestmark = pytest.mark.no_database

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
PERSONA = Persona(
    "Mara",
    "she/her",
    "A quick-handed apprentice lamplighter, braver with a flame in her hand than without one.",
)
CARDS = [
    CardView(
        id=1,
        name="Old Maren",
        type="character",
        keywords=("maren", "old maren"),
        entry="The senior lamplighter of Gullreach, missing an eye to a storm long ago.",
        notes="Lost the eye to the Choir, not a storm.",
    ),
    CardView(
        id=2,
        name="The Great Lantern",
        type="location",
        keywords=("great lantern", "tower", "headland"),
        entry="A sixty-foot tower of grey stone topped by a lens of sea-glass.",
    ),
    CardView(
        id=3,
        name="Brine-Oil",
        type="item",
        keywords=("brine-oil", "tin"),
        entry="Lamp oil that burns green and cannot be put out by seawater.",
    ),
    CardView(
        id=4,
        name="Pip Haddow",
        type="character",
        keywords=("pip", "haddow"),
        entry="A twelve-year-old net-mender's child who knows every tunnel under Gullreach.",
    ),
    CardView(
        id=5,
        name="The Drowned Choir",
        type="lore",
        keywords=("choir", "drowned choir"),
        entry="The dead of every shipwreck, who rise as one singing tide when lanterns fail.",
    ),
]
ESSENTIALS = (
    "The Lantern Coast is a chain of fishing villages where enchanted lanterns keep the "
    "Drowned Choir beneath the waves. The Great Lantern at Gullreach has gone dark three "
    "nights before the Long Night. It can only be relit with flame from the Hearthstone Shrine."
)
BLOCK = "\n\n".join(
    [
        "> You ask Maren who barred the keepers' door.",
        'Maren spits into the tide. "Brother Ansel, if he still breathes. He took the '
        'spare keys the night the Choir came in early."',
        '> You say "Then we go up together."',
        "She hesitates, then lifts her pole. The gulls scatter from the glass of the tower "
        "as you climb, the tin of brine-oil knocking against your back with every step.",
        "> You count the steps under your breath.",
        "Ninety-nine, as always. At the top, the door is warm to the touch, and something "
        "hums behind it. Maren presses her ear to the wood and swears she hears her "
        "husband's voice among the singers. She makes you promise not to open it before "
        "dawn, and you give her your word.",
    ]
)
EXCERPT_TOKENS = 120  # small enough that the golden block shows the marker
BASE = (
    "Mara, an apprentice lamplighter, reached Gullreach at dusk to relight the Great "
    "Lantern. Old Maren, who distrusts the keepers, met her at the steps. Mara owes Pip "
    "Haddow a favour."
)
EVENTS = "\n".join(
    [
        "- Maren told Mara that Brother Ansel barred the keepers' door and took the spare keys.",
        "- Mara and Maren climbed the tower; Mara promised Maren not to open the humming door "
        "before dawn.",
    ]
)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; see the module docstring"


def dump(request: CompletionRequest) -> str:
    """A readable request: its settings, then each part under a header."""
    lines = [
        f"model: {request.model}",
        f"mode: {request.mode}",
        f"max_tokens: {request.max_tokens}",
        f"temperature: {request.temperature}",
        f"top_p: {request.top_p}",
        f"stop: {json.dumps(list(request.stop))}",
    ]
    if request.mode == "chat":
        parts = [(m.role, m.content) for m in request.messages]
    else:
        parts = [("prompt", request.prompt)]
    for header, content in parts:
        lines += [f"=== {header} ===", content]
    return "\n".join(lines) + "\n=== end ===\n"


def brief() -> str:
    return cast_brief(PERSONA, CARDS, BLOCK, ESSENTIALS, BpeCounter())


@pytest.mark.parametrize("mode", ["chat", "completion"])
def test_the_memory_request_renders_exactly_as_the_golden_file(mode: str) -> None:
    shown = excerpt(BLOCK, BpeCounter(), EXCERPT_TOKENS)
    assert MARKER in shown
    request = memory_request(shown, brief(), model="golden-summary", mode=mode)
    check_golden(f"memory_{mode}.txt", dump(request))
    assert request.max_tokens == MEMORY_REPLY_TOKENS


@pytest.mark.parametrize("mode", ["chat", "completion"])
def test_the_summary_request_renders_exactly_as_the_golden_file(mode: str) -> None:
    request = summary_request(BASE, True, EVENTS, brief(), model="golden-summary", mode=mode)
    check_golden(f"summary_{mode}.txt", dump(request))
    assert request.max_tokens == SUMMARY_REPLY_TOKENS
    assert request.temperature == SUMMARY_TEMPERATURE


def test_the_system_prompt_is_the_same_for_every_adventure_and_states_the_limit() -> None:
    one = memory_request("You wait.", "Cast A", model="m", mode="chat")
    other = memory_request("You run.", "Cast B", model="m", mode="chat")
    assert one.messages[0] == other.messages[0]
    assert f"at most {MEMORY_WORDS_LIMIT} words" in one.messages[0].content
    assert one.messages[1].content == "[Cast]\nCast A\n\n[Passage]\nYou wait."
    summary = summary_request("", False, "- e", "Cast", model="m", mode="chat")
    assert f"at most {SUMMARY_WORDS_LIMIT} words" in summary.messages[0].content


def test_the_completion_prompt_holds_both_parts_and_ends_on_the_cue() -> None:
    request = memory_request("You wait.", "Cast A", model="m", mode="completion")
    chat = memory_request("You wait.", "Cast A", model="m", mode="chat")
    system, user = (m.content for m in chat.messages)
    assert request.prompt == f"{system}\n\n{user}\n\n[Memory]\n"
    assert "\n\n" in request.stop and "\n[" in request.stop
    summary = summary_request("", False, "- e", "Cast", model="m", mode="completion")
    assert summary.prompt.endswith("\n\n[Story Summary]\n")
    assert "\n\n" not in summary.stop  # a summary may have paragraphs


def test_the_summary_base_says_who_wrote_it_or_that_there_is_none() -> None:
    def user(base: str, by_user: bool) -> str:
        request = summary_request(base, by_user, "- e", "Cast", model="m", mode="chat")
        return request.messages[1].content

    assert user("Mara came.", True).startswith("[Current summary, written by the player]\n")
    assert user("Mara came.", False).startswith("[Current summary]\nMara came.\n")
    assert user("  ", True).startswith("[Current summary]\n(none yet)\n")


def test_a_dollar_sign_in_the_story_is_never_expanded() -> None:
    request = memory_request(
        "You pay $5 for ${gold} and $cast.", "$passage", model="m", mode="chat"
    )
    assert request.messages[1].content == (
        "[Cast]\n$passage\n\n[Passage]\nYou pay $5 for ${gold} and $cast."
    )


def test_a_missing_or_unknown_template_variable_raises() -> None:
    with pytest.raises(KeyError, match="passage"):
        render("memory_user.txt", cast="x")
    with pytest.raises(KeyError, match="events"):
        render("summary_user.txt", by_player="", base="b", cast="c")
    with pytest.raises(ValueError, match="no variable extra"):
        render("memory_user.txt", cast="x", passage="y", extra="z")


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode must be"):
        memory_request("You wait.", "Cast", model="m", mode="chatty")


@pytest.mark.parametrize(
    ("reply", "memory"),
    [
        ("Memory: Mara lit the lantern.", None),
        ("  **Memory:** Mara lit the lantern.  ", None),
        ("[Memory]\nMara lit the lantern.", None),
        ('Sure! Here is the memory:\n\n"Mara lit the lantern."', None),
        ("Here's a memory of the passage: “Mara lit the lantern.”", None),
        ("<think>Who is you? Mara.</think>\nMara lit the lantern.", None),
        ("Mara lit the lantern. (5 words)", None),
        ("Mara lit\n\n the   lantern.", None),
        (f"Mara lit {MARKER} the lantern.", None),
        ("Mara lit [...] the lantern.", None),
        ("Memory of the flood haunted Mara.", "Memory of the flood haunted Mara."),
        ("Sure of the path, Mara climbed.", "Sure of the path, Mara climbed."),
        ("Here is where Mara hid the key.", "Here is where Mara hid the key."),
        ('"Go," Maren said. "Now."', '"Go," Maren said. "Now."'),
        ("<think>still thinking when the reply was cut", ""),
        ("   ", ""),
    ],
)
def test_clean_memory_leaves_the_memory_alone(reply: str, memory: str | None) -> None:
    assert clean_memory(reply) == (memory if memory is not None else "Mara lit the lantern.")


def test_clean_memory_cuts_back_to_the_last_full_sentence_within_the_limit() -> None:
    first = " ".join(["Mara"] + ["climbed"] * 29) + "."  # 30 words
    second = " ".join(["Maren"] * 30) + "."
    assert clean_memory(f"{first} {second}") == first


def test_clean_memory_cuts_a_runaway_sentence_at_the_word_limit() -> None:
    words = [f"w{i}" for i in range(80)]
    cleaned = clean_memory("Short. " + " ".join(words))
    assert cleaned.endswith("…")
    assert len(cleaned.split()) == MEMORY_WORDS_LIMIT
    assert cleaned == "Short. " + " ".join(words[: MEMORY_WORDS_LIMIT - 1]) + "…"
    assert clean_memory("one two three four", limit_words=3) == "one two three…"
    assert clean_memory("one two three.", limit_words=3) == "one two three."


def test_clean_summary_keeps_paragraphs_and_the_word_limit() -> None:
    reply = (
        "**Story Summary**\n\nMara reached   Gullreach.\nMaren met her.\n\n\n"
        "Mara  climbed the tower. [... the middle of this passage is left out ...]\n\n"
    )
    assert (
        clean_summary(reply) == "Mara reached Gullreach. Maren met her.\n\nMara climbed the tower."
    )
    long = "\n\n".join(" ".join(["word"] * 99) + "." for _ in range(3))  # 297 words
    cleaned = clean_summary(long)
    assert len(cleaned.split()) == 2 * 99  # back to the end of the last whole paragraph
    assert cleaned.count("\n\n") == 1
    assert clean_summary("Summary: Mara came.") == "Mara came."
    assert clean_summary("") == ""
