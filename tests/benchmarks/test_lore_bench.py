"""The lore clerk benchmark's definitions (benchmarks/lore/measure.py), pinned on hand-made
stories: what counts as found in time, a title, a duplicate and an unsupported line; and
its sets: the dense stories' entities are every name they made, and the Cyrillic copy
keeps them apart."""

from __future__ import annotations

import pytest
from benchmarks.lore import measure, sets
from benchmarks.lore.measure import Proposed, replay, score
from benchmarks.lore.sets import StorySet, dense

from talekeeper.services.world.clerk import Line

pytestmark = pytest.mark.no_database


def story(
    texts: list[str], entities: list[tuple[str, ...]], taken: list[tuple[str, ...]] | None = None
) -> StorySet:
    return StorySet("hand-made", True, texts, entities, taken or [], "Kit")


def test_found_in_time_titles_duplicates_and_unsupported_lines_are_counted_as_defined() -> None:
    texts = ["Rhys rows.", "Rhys sails.", "Rhys sleeps.", *["The sea."] * 20, "Maren sings."]
    s = story(texts, [("Rhys", "Captain Rhys"), ("Maren",), ("Tobin",)], taken=[("Tobin",)])
    proposed = [
        Proposed(2 + measure.WITHIN, ("Captain Rhys", "Rhys"), (Line(0, "Rhys rows."),)),
        Proposed(20, ("Rhys",), (Line(1, "Rhys sails far."),)),  # again, and a word not said
        Proposed(21, ("The Sea",), ()),
    ]
    got = score(s, proposed, 0.0)
    assert (got.qualifying, got.found) == (1, 1)  # Maren: one action; Tobin: a card
    assert got.delays == [measure.WITHIN]
    assert (got.proposals, got.titled, got.duplicates) == (3, 2, 1)
    assert (got.lines, got.unsupported) == (2, 1)
    assert got.strays == ["The Sea"]
    assert got.repeats == ["Rhys (Rhys)"]
    late = score(s, [Proposed(3 + measure.WITHIN, ("Rhys",), ())], 0.0)
    assert (late.found, late.misses) == (0, ["Rhys"])


def test_you_told_as_the_protagonist_is_supported() -> None:
    s = story(["Rhys hands you a map."], [("Rhys",)])
    got = score(s, [Proposed(0, ("Rhys",), (Line(0, "Rhys hands Kit a map."),))], 0.0)
    assert got.unsupported == 0


def test_the_replayed_clerk_proposes_each_entity_once() -> None:
    texts = ["Rhys rows home.", "Rhys sails north.", "Rhys sleeps on deck.", "Rhys wakes at noon."]
    proposed = replay(story(texts, [("Rhys",)]), every=1)
    assert [(p.at, p.names) for p in proposed] == [(2, ("Rhys", "Rhys"))]


def test_a_dense_storys_entities_are_its_made_names_and_the_cyrillic_copy_keeps_them() -> None:
    latin = dense(14, "narrative")
    cyrillic = dense(14, "narrative", cyrillic=True)
    assert len(latin.entities) == len(cyrillic.entities)
    assert len({e[0] for e in cyrillic.entities}) == len({e[0] for e in latin.entities})
    assert all(not any(c.isascii() and c.isalpha() for c in e[0]) for e in cyrillic.entities)
    assert latin.protagonist not in {e[0] for e in latin.entities}
    assert all(t[0] not in {e[0] for e in latin.entities} for t in latin.taken)


def test_a_neutral_name_is_neither_an_entity_nor_a_stray() -> None:
    texts = ["Provost: Rhys rows.", "Provost: Rhys sails.", "Provost: Rhys sleeps."]
    s = StorySet("hand-made", True, texts, [("Rhys",)], [], "Kit", neutral=["Provost"])
    proposed = [
        Proposed(2, ("Rhys",), ()),
        Proposed(2, ("Provost",), ()),
        Proposed(2, ("Fog",), ()),
    ]
    got = score(s, proposed, 0.0)
    assert (got.proposals, got.titled, got.neutral, got.strays) == (2, 1, 1, ["Fog"])


def test_a_plays_speakers_join_the_listed_names_and_roles_are_neutral() -> None:
    speeches = [
        "DUKE VINCENTIO:\nGood morrow.",
        "First Citizen:\nAy.",
        "KATHARINA:\nNo.",
        "Provost:\nHere, my lord.",
    ]
    got = sets._play("a play", True, speeches, [("Katharina", "Kate"), ("Padua",)])
    assert ("Katharina", "Kate") in got.entities
    assert ("Duke Vincentio", "Vincentio") in got.entities
    assert ("Padua",) in got.entities
    assert got.neutral == ["First Citizen", "Citizen", "Provost"]
