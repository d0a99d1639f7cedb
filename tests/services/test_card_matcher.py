"""The combined card matcher against the simple per-keyword reference, and its cache.

The reference is what a turn did before the matcher existed: every keyword of every card
checked with ``keyword_in``, the input first, then the recent story. Random cards and
texts (tricky letters included: the four I's, the long s, the sharp s, the iota class,
apostrophes, hyphens, line breaks) must fire the same cards with the same keyword, in the
same place and order.
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]
import json
import re
import sys
import time
from re import _casefix  # type: ignore[attr-defined]
from typing import Literal

from hypothesis import example, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.services.cards.match import _IOTA, WORD, CardKeys, fold, keyword_in, matcher_for
from talekeeper.services.cards.rules import CardView, FiredCard, fired_cards, fired_in
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Adventure, StoryCard, User

LETTERS = "aAbBmMrRoOtTiIİıkKKsSſßẞéÉσΣςιΙ\u0345ι0_"
SPACE = " \n\t"
MARKS = "'’-.,!?"


def reference(
    cards: list[CardView], story: str, player: str
) -> list[tuple[int, str, Literal["input", "story"]]]:
    """Every keyword of every card, one by one, as a turn did before the matcher."""
    out: list[tuple[int, str, Literal["input", "story"]]] = []
    places: tuple[tuple[Literal["input", "story"], str], ...] = (
        ("input", player),
        ("story", story),
    )
    for card in cards:
        hit = next(
            (
                (card.id, keyword, where)
                for where, text in places
                for keyword in card.keywords
                if keyword_in(keyword, text)
            ),
            None,
        )
        if hit is not None:
            out.append(hit)
    return out


words = st.text(LETTERS, min_size=1, max_size=5)
keywords = st.one_of(
    words,
    st.builds(
        lambda a, s, b: a + s + b, words, st.sampled_from([" ", "  ", "'", "-", ". "]), words
    ),
    st.text(LETTERS + SPACE + MARKS, max_size=6),
)
cards_strategy = st.lists(st.lists(keywords, max_size=5), min_size=1, max_size=8)


# Each letter to another that ``re`` matches to it when ignoring case.
CONFUSABLE = str.maketrans("iIıİsSkKσςΣιΙ", "ıİIiſſKkςΣσ\u0345ι")


def _variant(keyword: str, how: int) -> str:
    return [
        keyword,
        keyword.upper(),
        keyword.lower(),
        keyword.swapcase(),
        keyword.title(),
        keyword.translate(CONFUSABLE),
        " ".join(keyword.split()).replace(" ", "\n  "),
    ][how]


@st.composite
def scenes(draw: st.DrawFn) -> tuple[list[CardView], str, str]:
    lists = draw(cards_strategy)
    cards = [
        CardView(id=i + 1, name=f"Card {i}", type="other", keywords=tuple(kws), entry="")
        for i, kws in enumerate(lists)
    ]
    known = [k for kws in lists for k in kws] or ["x"]
    piece = st.one_of(
        st.text(LETTERS + SPACE + MARKS, max_size=4),
        st.builds(_variant, st.sampled_from(known), st.integers(0, 6)),
    )
    story = draw(st.lists(piece, max_size=10).map("".join))
    player = draw(st.lists(piece, max_size=4).map("".join))
    return cards, story, player


def _scene(keywords: tuple[str, ...], story: str) -> tuple[list[CardView], str, str]:
    return [CardView(id=1, name="Card", type="other", keywords=keywords, entry="")], story, ""


@settings(max_examples=600, deadline=None)
@given(scenes())
# ``re`` matches ı to I (casefold keeps them apart) and the iota to the combining
# ypogegrammeni, which is no word character: the index must not lose either.
@example(_scene(("ı x",), "I x"))
@example(_scene(("İ",), "no i"))
@example(_scene(("aι",), "a\u0345"))
@example(_scene(("ſ", "ß"), "S ẞ"))
def test_the_matcher_fires_exactly_what_the_reference_fires(
    scene: tuple[list[CardView], str, str],
) -> None:
    cards, story, player = scene
    fired = fired_cards(cards, story, player)
    assert [(f.card.id, f.keyword, f.where) for f in fired] == reference(cards, story, player)


def test_the_fold_agrees_with_re_on_every_letter_of_unicode() -> None:
    """What the index rests on, for this Python's Unicode tables: two letters ``re``
    matches to each other ignoring case fold alike, and are both word characters or both
    not, except in the iota class (whose keywords are checked on every text). ``re``'s
    own rule: equal simple lower case, or listed together in its table of extra cases."""
    classes: dict[int, set[int]] = {}
    for code in range(sys.maxunicode + 1):
        lower = _sre.unicode_tolower(code)
        if lower != code:
            classes.setdefault(lower, {lower}).add(code)
    for lower, extra in _casefix._EXTRA_CASES.items():
        merged = set().union(*(classes.get(c, {c}) for c in (lower, *extra)))
        for member in merged:
            classes[member] = merged
    for members in classes.values():
        letters = [chr(c) for c in members]
        assert len({fold(c) for c in letters}) == 1, letters
        if _IOTA not in fold(letters[0]):
            assert len({bool(WORD.fullmatch(c)) for c in letters}) == 1, letters
        for a in letters:  # and ``re`` really does match them
            assert all(re.fullmatch(re.escape(a), b, re.IGNORECASE) for b in letters), letters


def test_the_documented_cases_fire_through_the_matcher() -> None:
    mara = CardView(id=1, name="Mara", type="character", keywords=("mara",), entry="")
    fired = fired_cards([mara], "MARA waves from mara's boat.", "")
    assert [(f.keyword, f.where) for f in fired] == [("mara", "story")]
    assert fired_cards([mara], "The Marathon begins; Samara waits.", "") == []
    # Within a place, the card's first keyword in its own order reports, not the first in
    # the text; the input wins over the story even for a later keyword.
    two = CardView(
        id=2, name="Port", type="location", keywords=("saltmouth", "port", "harbour"), entry=""
    )
    fired = fired_cards([two], "the port, then Saltmouth", "row to the HARBOUR")
    assert [(f.keyword, f.where) for f in fired] == [("harbour", "input")]
    fired = fired_cards([two], "the port, then Saltmouth", "")
    assert [(f.keyword, f.where) for f in fired] == [("saltmouth", "story")]


def test_two_thousand_cards_of_thirty_keywords_match_in_milliseconds() -> None:
    """The card set of the slow turns (2,000 cards, 30 keywords each, half of them
    phrases): matching a scene's worth of text must not grow with the cards. Checking
    every keyword took seconds per turn; the bound leaves an order of magnitude of slack
    on a busy machine."""
    cards = [
        CardView(
            id=i + 1,
            name=f"Card {i}",
            type="character",
            keywords=tuple(
                f"name{i}x{k}" if k % 2 else f"the keeper{i} of lamp{k}" for k in range(30)
            ),
            entry="",
        )
        for i in range(2_000)
    ]
    story = " ".join(["The fog rolls in over the harbour and the lamp gutters."] * 60)
    story += " You ask name1500x7 about the keeper42 of lamp4."
    started = time.perf_counter()
    fired = fired_cards(cards, story, "")  # builds the matcher once
    built = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(20):
        assert fired_cards(cards, story, "I wait") == fired
    per_turn = (time.perf_counter() - started) / 20
    assert [(f.card.id, f.keyword) for f in fired] == [
        (43, "the keeper42 of lamp4"),
        (1501, "name1500x7"),
    ]
    assert built < 3.0, built
    assert per_turn < 0.05, per_turn


# -- over the database: read, cache, rebuild -------------------------------------------------


def _adventure(session: Session) -> Story:
    user = session.scalars(select(User)).first()
    assert user is not None
    return adventures.create(session, user.id, {"title": "Cards"}, NullMemory())


def test_the_stored_matcher_is_built_once_and_rebuilt_when_a_card_changes(
    sessions: sessionmaker[Session],
) -> None:
    with session_scope(sessions) as session:
        story = _adventure(session)
        aid = story.adventure.id
        mara = adventures.add_card(
            session, story.adventure, {"name": "Mara", "keywords": ["mara", "the smuggler"]}
        )
        adventures.add_card(session, story.adventure, {"name": "Key", "keywords": ["brass key"]})
    text = "Mara holds up the BRASS key."

    def fire() -> list[FiredCard]:
        with session_scope(sessions) as session:
            return fired_in(session, aid, text, "")

    def stored() -> tuple[CardKeys, ...]:
        with session_scope(sessions) as session:
            rows = session.execute(
                select(
                    StoryCard.id,
                    StoryCard.keywords,
                    StoryCard.secondary_keywords,
                    StoryCard.secondary_rule,
                )
                .where(StoryCard.adventure_id == aid)
                .order_by(StoryCard.id)
            )
            return tuple(CardKeys(int(i), str(k), str(s), str(r)) for i, k, s, r in rows)

    assert [(f.card.name, f.keyword, f.card.entry) for f in fire()] == [
        ("Mara", "mara", ""),
        ("Key", "brass key", ""),
    ]
    matcher = matcher_for(stored())
    fire()
    assert matcher_for(stored()) is matcher  # the same card set: nothing rebuilt
    with session_scope(sessions) as session:
        row = adventures.card_row(session, mara.id, session.scalars(select(User.id)).one())
        adventures.update_card(session, row, {"keywords": ["the smuggler"], "entry": "Limps."})
    assert matcher_for(stored()) is not matcher
    assert [(f.card.name, f.keyword) for f in fire()] == [("Key", "brass key")]
    with session_scope(sessions) as session:
        row = adventures.card_row(session, mara.id, session.scalars(select(User.id)).one())
        adventures.update_card(session, row, {"keywords": ["holds"]})
        adventure = session.get(Adventure, aid)
        assert adventure is not None
        adventures.add_card(session, adventure, {"name": "Up"})
    fired = fire()
    assert [(f.card.name, f.keyword, f.card.entry) for f in fired] == [
        ("Mara", "holds", "Limps."),  # the whole card is read when it fires
        ("Key", "brass key", ""),
    ]
    assert json.loads(stored()[0][1]) == ["holds"]
    with session_scope(sessions) as session:
        uid = session.scalars(select(User.id)).one()
        key = next(f.card.id for f in fired if f.card.name == "Key")
        adventures.delete_card(session, adventures.card_row(session, key, uid))
    assert [f.card.name for f in fire()] == ["Mara"]
