"""An adventure's own section budgets (docs/context.md, "Section budgets"): a share and a
ceiling per section over the defaults, checked with a message that names what to fix, and
read back from the column whatever it holds (``services.prompt.budgets``)."""

from __future__ import annotations

import pytest

from talekeeper.core.errors import InvalidInput
from talekeeper.services.prompt import budgets
from talekeeper.services.prompt.budgets import SectionBudgets, clean_overrides

pytestmark = pytest.mark.no_database


def test_no_override_is_the_documented_defaults() -> None:
    same = SectionBudgets.of(None)
    for prompt in (776, 1800, 3848, 30000):
        assert same.memories(5).tokens(prompt) == budgets.memories(5).tokens(prompt)
        assert same.knowledge(3).tokens(prompt) == budgets.knowledge(3).tokens(prompt)
        assert same.story_cards.tokens(prompt) == budgets.STORY_CARDS.tokens(prompt)
        assert same.current_state.tokens(prompt) == budgets.CURRENT_STATE.tokens(prompt)


def test_an_override_changes_its_section_alone_in_the_tables_units() -> None:
    own = SectionBudgets.of(
        {"story_cards": {"share": 0.4, "ceiling": 3000}, "memories": {"ceiling": 80}}
    )
    assert own.story_cards.tokens(30000) == 3000 and own.story_cards.tokens(3848) == 1539
    assert own.memories(5).tokens(3848) == 400  # 80 a memory
    assert own.memories(5).floor == budgets.memories(5).floor  # floors stay
    assert own.knowledge(3) == budgets.knowledge(3)
    assert own.current_state == budgets.CURRENT_STATE


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ([], "'section_budgets' must be an object"),
        ({"history": {"share": 0.2}}, "'section_budgets' has unknown section(s) history"),
        ({"memories": 0.2}, "'section_budgets.memories' must be an object"),
        ({"memories": {"size": 1}}, "'section_budgets.memories' has unknown field(s) size"),
        ({"memories": {"share": 0}}, "'section_budgets.memories.share' must be a number above 0"),
        ({"memories": {"share": 0.9}}, "at most 0.75"),
        ({"memories": {"share": True}}, "'section_budgets.memories.share' must be a number"),
        ({"memories": {"share": float("nan")}}, "'section_budgets.memories.share' must be"),
        ({"memories": {"ceiling": 10}}, "'section_budgets.memories.ceiling' must be a whole"),
        ({"story_cards": {"ceiling": 10**9}}, "at most 32768"),
        (
            {"story_cards": {"ceiling": 2.5}},
            "'section_budgets.story_cards.ceiling' must be a whole",
        ),
    ],
)
def test_a_bad_override_is_refused_with_what_to_fix(given: object, says: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        clean_overrides(given)
    assert says in str(refused.value)


def test_clean_overrides_keeps_what_differs_and_drops_empty_sections() -> None:
    assert clean_overrides({}) == {}
    assert clean_overrides({"memories": {}, "knowledge": {"share": None}}) == {}
    assert clean_overrides({"current_state": {"share": 0.1, "ceiling": 48}}) == {
        "current_state": {"share": 0.1, "ceiling": 48}
    }
    # Another tool may write a whole number as 500.0: read as 500.
    ceiling = clean_overrides({"story_cards": {"ceiling": 500.0}})["story_cards"]["ceiling"]
    assert ceiling == 500 and isinstance(ceiling, int)


def test_a_stored_value_that_cannot_be_read_is_the_defaults() -> None:
    for text in (None, "", "not json", "[1, 2]", '{"memories": {"share": 7}}'):
        assert SectionBudgets.stored(text) == SectionBudgets.of(None)
    assert SectionBudgets.stored('{"memories": {"ceiling": 80}}').memories(5).ceiling == 400


def test_a_body_of_many_long_unknown_names_gets_a_short_message() -> None:
    names = {f"section-{n}-" + "x" * 5000: {} for n in range(10_000)}
    with pytest.raises(InvalidInput) as refused:
        clean_overrides(names)
    said = str(refused.value)
    assert "unknown section(s) section-0-xxx" in said and "and 9995 more" in said
    assert len(said) < 600
    with pytest.raises(InvalidInput) as refused:
        clean_overrides({"memories": {f"f{n}": 1 for n in range(1000)}})
    assert "and 995 more" in str(refused.value) and len(str(refused.value)) < 300
