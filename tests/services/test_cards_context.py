"""Always-on cards and card rules over the database, through a turn's context: the Story
Cards section holds the always-on cards first, within the budget (the last to be cut), and
Insights says "always on" for them; the scene still reads only the cards that fire."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker
from tests.kit.model_set import models

from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.rules import SecondaryRule, turn_cards
from talekeeper.services.memory.base import NullMemory, Retrieval
from talekeeper.services.prompt import insights
from talekeeper.services.prompt.budgets import STORY_CARDS
from talekeeper.services.prompt.build import build
from talekeeper.services.prompt.built import BuiltContext
from talekeeper.services.prompt.inputs import gather
from talekeeper.services.story import adventures
from talekeeper.services.story.scenarios import parse_scenario
from talekeeper.services.story.tree import Story
from talekeeper.storage.db import session_scope
from talekeeper.storage.repositories.users import UserRepository

STORY = [
    ("narration", "Fog lies on the harbour. The lamp on the hill is dark."),
    ("do", "walk to the harbour"),
    ("narration", "Gulls scream over the nets. A storm gathers over the sea."),
]
CARDS: list[dict[str, Any]] = [
    {"name": "Harbour", "type": "location", "keywords": ["harbour"], "entry": "Wet stone."},
    {
        "name": "Tower",
        "type": "location",
        "keywords": ["tower"],
        "entry": "The old lighthouse.",
        "always_on": True,
    },
    {"name": "Maren", "type": "character", "keywords": ["maren"], "entry": "A net-mender."},
    {
        "name": "Storm Lore",
        "type": "lore",
        "keywords": ["sea"],
        "entry": "Storms come from the west.",
        "secondary_keywords": ["storm"],
        "secondary_rule": "all",
    },
    {
        "name": "Calm Lore",
        "type": "lore",
        "keywords": ["sea"],
        "entry": "The sea is calm.",
        "secondary_keywords": ["storm"],
        "secondary_rule": "none",
    },
    {
        "name": "Rules",
        "type": "other",
        "keywords": [],
        "entry": "Nobody swims at night.",
        "always_on": True,
    },
]


def _story(session: Session, cards: list[dict[str, Any]]) -> Story:
    uid = UserRepository(session).local_user().id
    story = adventures.create(session, uid, {"title": "Harbour"}, NullMemory())
    for data in cards:
        adventures.add_card(session, story.adventure, data)
    for type_, text in STORY:
        story.append(type_, text)
    return Story.load(session, story.adventure.id, uid, NullMemory())


def _context(sessions: sessionmaker[Session], cards: list[dict[str, Any]], tokens: int) -> Any:
    with session_scope(sessions) as session:
        story = _story(session, cards)
        chosen = models("chat", tokens)
        inputs = gather(story, chosen)
        built = build(inputs, Retrieval(used=[], considered=0)).context
        return inputs, built, insights.snapshot(inputs, built, Retrieval(), {}, chosen, None)


def _section(built: BuiltContext, name: str) -> Any:
    return next(s for s in built.report.sections if s.name == name)


def test_always_on_cards_lead_the_section_and_insights_says_so(
    sessions: sessionmaker[Session],
) -> None:
    inputs, built, snapshot = _context(sessions, CARDS, 4096)
    section = _section(built, "story_cards")
    assert section.text.splitlines() == [
        "[World]",
        "Tower (location): The old lighthouse.",  # always on: nobody says "tower"
        "Rules (other): Nobody swims at night.",  # always on, with no keyword at all
        "Harbour (location): Wet stone.",
        "Storm Lore (lore): Storms come from the west.",  # "sea" and, ALL of, "storm"
    ]  # Calm Lore: "sea" but NONE of "storm" holds; Maren: not mentioned
    assert section.reason == (
        "Tower: always on; Rules: always on; Harbour: 'harbour' in the story; "
        "Storm Lore: 'sea' in the story, with 'storm'"
    )
    cards = {c.name: c for c in snapshot.cards}
    assert list(cards) == ["Tower", "Rules", "Harbour", "Storm Lore"]
    assert cards["Tower"].always_on and cards["Tower"].keyword is None
    assert "secondary" not in cards["Tower"].public()  # only a card with secondary keywords
    assert cards["Storm Lore"].secondary == ["storm"]
    assert cards["Storm Lore"].secondary_rule == "all"
    # The scene is the cards the story mentions: the always-on Tower is not "mentioned".
    assert inputs.scene.location == "Harbour"


def test_a_tight_budget_leaves_out_the_fired_cards_whole_before_the_always_on_ones(
    sessions: sessionmaker[Session],
) -> None:
    long_entry = "The harbour wall is old and wet and green with weed. " * 60  # ~700 tokens
    cards = [
        {"name": "Harbour", "type": "location", "keywords": ["harbour"], "entry": long_entry},
        {"name": "Rules", "type": "other", "entry": "Nobody swims at night.", "always_on": True},
    ]
    inputs, built, snapshot = _context(sessions, cards, 1024)
    section = _section(built, "story_cards")
    budget = STORY_CARDS.tokens(inputs.budget)
    assert section.budget == budget < STORY_CARDS.ceiling  # a small context's share
    assert not section.cut  # left out whole, never cut mid-card
    assert section.text == "[World]\nRules (other): Nobody swims at night."
    assert section.reason == (
        f"Rules: always on; 1 left out for its budget of {budget} tokens: Harbour"
    )
    assert [c.name for c in snapshot.cards] == ["Rules"]
    shown = next(s for s in snapshot.sections if s.name == "story_cards")
    assert shown.budget == budget and shown.reason.startswith(section.reason)
    assert snapshot.budget.used <= snapshot.budget.available
    # The same cards in a large context: the budget is the ceiling, and both fit.
    inputs, built, _snapshot = _context(sessions, cards, 16384)
    section = _section(built, "story_cards")
    assert section.budget == STORY_CARDS.ceiling
    assert [line.split(" (")[0] for line in section.text.splitlines()[1:]] == ["Rules", "Harbour"]


def test_turn_cards_reads_the_always_on_cards_and_fired_in_does_not(
    sessions: sessionmaker[Session],
) -> None:
    with session_scope(sessions) as session:
        story = _story(session, CARDS)
        aid = story.adventure.id
        found = turn_cards(session, aid, "the sea in a storm", "")
        assert [f.card.name for f in found.fired] == ["Storm Lore"]
        assert [(f.card.name, f.always) for f in found.section] == [
            ("Tower", True),
            ("Rules", True),
            ("Storm Lore", False),
        ]
        assert found.section[0].card.entry == "The old lighthouse."  # read whole
        mentioned = turn_cards(session, aid, "up the tower", "", always_on=False)
        assert [f.card.name for f in mentioned.fired] == ["Tower"]  # fires for the scene
        assert mentioned.section == []
        quiet = turn_cards(session, aid, "calm water", "")
        assert quiet.fired == [] and [f.card.name for f in quiet.section] == ["Tower", "Rules"]


def test_without_always_on_cards_nothing_more_is_read(sessions: sessionmaker[Session]) -> None:
    plain = [c for c in CARDS if not c.get("always_on")]
    with session_scope(sessions) as session:
        aid = _story(session, plain).adventure.id
        assert turn_cards(session, aid, "calm water", "") == turn_cards(
            session, aid, "calm water", "", always_on=False
        )
        assert turn_cards(session, aid, "calm water", "").section == []


SCENARIO: dict[str, Any] = {
    "id": "rules",
    "title": "Rules",
    "genre": "fantasy",
    "description": "d",
    "opening": "You stand at a gate.",
    "story_cards": [
        {
            "name": "Gate",
            "type": "location",
            "keywords": ["gate"],
            "entry": "Old iron.",
            "always_on": True,
            "secondary_keywords": ["night"],
            "secondary_rule": "none",
        },
        {"name": "Ilse", "type": "character", "keywords": ["ilse"], "entry": "A guard."},
    ],
}


def test_a_scenario_card_may_carry_the_rules_into_its_adventure(
    sessions: sessionmaker[Session],
) -> None:
    scenario = parse_scenario(SCENARIO, "rules.json")
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        story = adventures.create(session, uid, {}, NullMemory(), scenario)
        gate, ilse = adventures.cards(session, story.adventure)
    assert (gate.always_on, gate.secondary_keywords, gate.secondary_rule) == (
        True,
        ("night",),
        SecondaryRule.NONE,
    )
    assert (ilse.always_on, ilse.secondary_keywords, ilse.secondary_rule) == (
        False,
        (),
        SecondaryRule.ANY,
    )
    for change, says in (
        ({"always_on": "yes"}, "'always_on' must be true or false"),
        ({"secondary_keywords": ["night", ""]}, "'secondary_keywords' must be a list of text"),
        ({"secondary_rule": "most"}, "'secondary_rule' must be one of any, all, none"),
    ):
        bad = SCENARIO | {"story_cards": [SCENARIO["story_cards"][0] | change]}
        with pytest.raises(InvalidInput, match=re.escape(f"rules.json story_cards[0]: {says}")):
            parse_scenario(bad, "rules.json")
