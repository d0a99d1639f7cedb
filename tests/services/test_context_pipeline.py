"""A turn's prompt as a pipeline of values: ``gather`` reads frozen inputs, ``build`` makes a
frozen context of them and leaves them as they were, and the request and the Insights
snapshot are both read from the two; the Story Cards section's cards follow the build (as
they fire now once the section was brought up to date, else as it held them)."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import pytest
from sqlalchemy.orm import Session, sessionmaker
from tests.kit.model_set import models

from talekeeper.services.endpoints.models import ContextLayout, ModelSet
from talekeeper.services.memory.base import NullMemory, Retrieval, UsedMemory
from talekeeper.services.prompt import insights
from talekeeper.services.prompt.build import build, request
from talekeeper.services.prompt.inputs import ContextInputs, gather
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.storage.db import session_scope
from talekeeper.storage.repositories.users import UserRepository

STORY = [
    ("narration", "Fog lies on the harbour. The lamp on the hill is dark."),
    ("do", "walk to the harbour"),
    ("narration", "Gulls scream over the nets. Maren mends a net by the harbour wall."),
    ("say", "Good evening, Maren"),
]
CARDS = [
    {"name": "Harbour", "type": "location", "keywords": ["harbour"], "entry": "Wet stone."},
    {"name": "Maren", "type": "character", "keywords": ["maren"], "entry": "A net-mender."},
    {"name": "Rules", "type": "other", "entry": "Nobody swims at night.", "always_on": True},
]
MEMORY = UsedMemory(
    id=3,
    text="Maren lost her brother to the sea.",
    semantic_score=0.7,
    lexical_score=0.3,
    final_score=0.7,
    pinned=False,
    authority="accepted_story",
)


def _inputs(sessions: sessionmaker[Session], chosen: ModelSet) -> ContextInputs:
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        story = adventures.create(session, uid, {"title": "Harbour"}, NullMemory())
        for data in CARDS:
            adventures.add_card(session, story.adventure, data)
        for type_, text in STORY:
            story.append(type_, text)
        return gather(Story.load(session, story.adventure.id, uid, NullMemory()), chosen)


@pytest.mark.parametrize("layout", list(ContextLayout))
def test_the_build_leaves_its_inputs_as_they_were_and_makes_the_same_context_each_time(
    sessions: sessionmaker[Session], layout: ContextLayout
) -> None:
    chosen = models("chat", 1024, layout)
    inputs = _inputs(sessions, chosen)
    before = repr(inputs)
    with pytest.raises(FrozenInstanceError):
        inputs.cards_held = ()  # type: ignore[misc]
    built = build(inputs, Retrieval(used=[MEMORY], considered=4))
    with pytest.raises(FrozenInstanceError):
        built.report = built.report  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        built.report.used = 0  # type: ignore[misc]
    sent = request(built, chosen)
    shown = insights.snapshot(
        inputs, built, Retrieval(used=[MEMORY], considered=4), {}, chosen, None
    )
    assert repr(inputs) == before
    again = build(inputs, Retrieval(used=[MEMORY], considered=4))
    assert again == built
    assert request(again, chosen) == sent
    assert shown.budget.used == built.report.used <= inputs.budget
    assert [c.name for c in shown.cards] == [f.card.name for f in inputs.section_cards(built)]


def test_the_story_cards_follow_the_build_that_brought_them_up_to_date(
    sessions: sessionmaker[Session],
) -> None:
    chosen = models("chat", 4096, ContextLayout.CACHE)
    gathered = _inputs(sessions, chosen)
    now = gathered.cards_rebuilt
    assert [f.card.name for f in now] == ["Rules", "Harbour", "Maren"]
    # A Story Cards section said to have held only the always-on card.
    rules = next(f for f in now if f.card.name == "Rules")
    held = replace(gathered, cards=(rules,), cards_held=(rules.card.id,))
    # Nothing placed before: the whole history is evaluated anyway, so the section holds
    # the cards as they fire now.
    built = build(held, Retrieval())
    assert built.report.rebuilt
    assert held.section_cards(built) == now
    assert held.cards_held_in(built) == tuple(f.card.id for f in now)
    shown = insights.snapshot(held, built, Retrieval(), {}, chosen, None)
    assert [c.name for c in shown.cards] == ["Rules", "Harbour", "Maren"]
    # The same place again: the history's head stayed, so the section is not brought up to
    # date and keeps what it held.
    again = replace(held, previous=built.report.placement)
    built = build(again, Retrieval())
    assert not built.report.rebuilt
    assert again.section_cards(built) == (rules,)
    assert again.cards_held_in(built) == (rules.card.id,)
    shown = insights.snapshot(again, built, Retrieval(), {}, chosen, None)
    assert shown.layout.cards_held == [rules.card.id]
    assert [c.name for c in shown.cards] == ["Rules"]
