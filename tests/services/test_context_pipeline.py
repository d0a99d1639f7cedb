"""A turn's prompt as a pipeline of values: ``gather`` reads frozen inputs, ``build`` makes a
frozen context of them and fits copies of the retrieval and the knowledge, leaving all it
was given as it was, and the request and the Insights
snapshot are both read from the two; the Story Cards section's cards follow the build (as
they fire now once the section was brought up to date, else as it held them)."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import pytest
from sqlalchemy.orm import Session, sessionmaker
from tests.kit.model_set import models

from talekeeper.services.endpoints.models import ContextLayout, ModelSet
from talekeeper.services.library.search import Hit, KnowledgeResult
from talekeeper.services.memory.base import (
    CarriedPassage,
    MatchedKey,
    NullMemory,
    Retrieval,
    UsedMemory,
)
from talekeeper.services.prompt import insights
from talekeeper.services.prompt.build import build, request
from talekeeper.services.prompt.inputs import ContextInputs, gather
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.services.world.knowing import Witness
from talekeeper.services.world.projection import Ref
from talekeeper.services.world.witnesses import Presence
from talekeeper.storage.db import session_scope
from talekeeper.storage.repositories.users import UserRepository
from talekeeper.storage.vocabulary import EntityKind, WitnessMode

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
LONG = (
    "the keeper climbed the tower stair at dusk and lit the great lamp while the gulls "
    "wheeled over the breakwater and the fishing boats turned for the harbour mouth"
)
PASSAGE = CarriedPassage(key=1, text="The sea took Tam in the spring storm.", depth=0, score=0.6)
HIT = Hit(
    passage_id=1,
    source_id=1,
    source_title="Harbour lore",
    position=0,
    heading_path=[],
    page=None,
    location="",
    text="The harbour wall was built by the first net-menders.",
    tokens=12,
    semantic_score=0.5,
    lexical_score=0.4,
    final_score=0.5,
    semantic_rank=1,
    lexical_rank=1,
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
    won = replace(MEMORY, passages=[replace(PASSAGE)], matched=MatchedKey.SOURCE, evidence_key=1)
    given = Retrieval(used=[won], considered=4)
    knowledge = KnowledgeResult(used=[replace(HIT)], considered=1, top_k=1)
    given_before, knowledge_before = repr(given), repr(knowledge)
    turn = build(inputs, given, knowledge)
    assert (repr(given), repr(knowledge)) == (given_before, knowledge_before)  # untouched
    assert turn.retrieval.budget is not None and given.budget is None  # a fitted copy
    assert turn.retrieval.used[0].passages[0].order == 0  # its passage went in ...
    assert given.used[0].passages[0].order is None  # ... in the copy only
    assert turn.knowledge is not None and turn.knowledge.used[0].in_context
    assert not knowledge.used[0].in_context
    built = turn.context
    with pytest.raises(FrozenInstanceError):
        built.report = built.report  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        built.report.used = 0  # type: ignore[misc]
    sent = request(built, chosen)
    shown = insights.snapshot(inputs, built, turn.retrieval, {}, chosen, None, turn.knowledge)
    assert repr(inputs) == before
    again = build(inputs, given, knowledge)
    assert again == turn  # the same context and the same fitted copies, from the same values
    assert again.retrieval is not turn.retrieval
    assert request(again.context, chosen) == sent
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
    built = build(held, Retrieval()).context
    assert built.report.rebuilt
    assert held.section_cards(built) == now
    assert held.cards_held_in(built) == tuple(f.card.id for f in now)
    shown = insights.snapshot(held, built, Retrieval(), {}, chosen, None)
    assert [c.name for c in shown.cards] == ["Rules", "Harbour", "Maren"]
    # The same place again: the history's head stayed, so the section is not brought up to
    # date and keeps what it held.
    again = replace(held, previous=built.report.placement)
    built = build(again, Retrieval()).context
    assert not built.report.rebuilt
    assert again.section_cards(built) == (rules,)
    assert again.cards_held_in(built) == (rules.card.id,)
    shown = insights.snapshot(again, built, Retrieval(), {}, chosen, None)
    assert shown.layout.cards_held == [rules.card.id]
    assert [c.name for c in shown.cards] == ["Rules"]


@pytest.mark.parametrize("layout", list(ContextLayout))
def test_a_passage_the_history_holds_is_not_written_again_in_the_memories(
    sessions: sessionmaker[Session], layout: ContextLayout
) -> None:
    chosen = models("chat", 4096, layout)
    inputs = _inputs(sessions, chosen)
    held = CarriedPassage(key=1, text=STORY[0][1], depth=0, score=0.9)  # the opening's text
    gone = CarriedPassage(key=2, text="The sea took Tam in the spring storm.", depth=-5, score=0.6)
    won = replace(MEMORY, passages=[held, gone], matched=MatchedKey.SOURCE, evidence_key=1)
    turn = build(inputs, Retrieval(used=[won], considered=4))
    built, used = turn.context, turn.retrieval.used[0]
    assert inputs.history[0].depth == 0 and built.history[0].depth == 0
    # Both went in: the one from the history by way of the history, written once.
    assert [p.order is not None for p in used.passages] == [True, True]
    assert [p.in_history for p in used.passages] == [True, False]
    assert used.evidence_in_context
    memories = next(s for s in built.report.sections if s.name == "memories").text
    assert "The sea took Tam" in memories and "Fog lies on the harbour" not in memories
    assert built.prompt().count("Fog lies on the harbour") == 1
    shown = insights.snapshot(inputs, built, turn.retrieval, {}, chosen, None)
    assert [p.in_history for p in shown.memories.used[0].passages] == [True, False]


def test_a_strict_turn_keeps_no_more_history_than_it_would_withholding_nothing(
    sessions: sessionmaker[Session],
) -> None:
    """Withholding a memory frees room; the history may not take it further back, where the
    story the memory came from would say what the memory left out."""
    tobin = Ref(99, "Tobin", EntityKind.PERSON)
    secret = replace(MEMORY, text="Maren hid the lamp-key under the third piling. " * 12)
    secret.source = {"source_start": 0, "source_end": 3}
    for context in range(360, 900, 10):  # from below where all the history is its reserve
        gathered = _inputs(sessions, models("chat", context, ContextLayout.CLASSIC))
        witness = Witness(WitnessMode.STRICT, tobin, "vocative", "Tobin,", Presence((), ()))
        plain = build(gathered, Retrieval(used=[replace(secret)])).context
        strict = build(replace(gathered, witness=witness), Retrieval(used=[replace(secret)]))
        assert strict.witness is not None and strict.witness.withheld == (3,)
        assert "third piling" not in strict.context.prompt()
        if plain.history and len(plain.history) < len(gathered.history):
            # The plain turn dropped older actions for the memory's room: the strict one,
            # though it has that room, keeps the same first action.
            assert strict.context.history[0].depth == plain.history[0].depth
            break
    else:
        pytest.fail("no context size made the memory crowd out older actions")


@pytest.mark.parametrize("layout", list(ContextLayout))
def test_memories_that_do_not_fit_even_alone_are_left_out_whole_lowest_ranked_first(
    sessions: sessionmaker[Session], layout: ContextLayout
) -> None:
    """Where the context has no room even for the memories alone, the last (lowest
    ranked) are left out whole rather than the section cut mid-sentence, and Insights and
    the uses recorded know which went in."""
    retrieved = [
        replace(
            MEMORY,
            id=10 + n,
            text=f"Memory {n}: " + " ".join(f"{word}{n}" for word in LONG.split()),
        )
        for n in range(5)
    ]
    found_cut = False
    for context_tokens in range(500, 1100, 50):
        chosen = models("chat", context_tokens, layout)
        inputs = _inputs(sessions, chosen)
        turn = build(inputs, Retrieval(used=[replace(m) for m in retrieved], considered=9))
        section = next(s for s in turn.context.report.sections if s.name == "memories")
        went_in = [m.id for m in retrieved if m.text in section.text]
        # Every memory is in whole or not at all: no line ends mid-memory.
        for line in section.text.splitlines()[1:]:
            assert any(line.endswith(m.text) for m in retrieved), line
        assert went_in == [m.id for m in turn.retrieval.used]  # the best ranked, in order
        assert went_in == [m.id for m in retrieved[: len(went_in)]]
        left = [m.id for m in turn.retrieval.left_for_room]
        assert left == [m.id for m in retrieved[len(went_in) :]]
        shown = insights.snapshot(inputs, turn.context, turn.retrieval, {}, chosen, None)
        assert [m.id for m in shown.memories.left_for_room] == left
        assert [m.id for m in shown.memories.used] == went_in
        if left:
            found_cut = True
            assert section.cut and f"{len(left)} left out for room" in section.reason
    assert found_cut  # some context size left memories out
