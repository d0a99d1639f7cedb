"""Secrets (docs/world.md, "Who knows what"): the names a memory is known by are cleaned as
any name, one per key; a character is in on a secret by their name, their name told
shorter or their first name alone."""

from __future__ import annotations

import pytest

from talekeeper.core.errors import InvalidInput
from talekeeper.services.world.projection import Ref
from talekeeper.services.world.secrets import KNOWN_BY_MAX, clean_known_by, in_on
from talekeeper.storage.vocabulary import EntityKind

pytestmark = pytest.mark.no_database


def person(name: str) -> Ref:
    return Ref(1, name, EntityKind.PERSON)


def test_names_are_cleaned_and_kept_once_per_key() -> None:
    assert clean_known_by(None) is None
    assert clean_known_by([]) == []  # the player's character keeps it alone
    assert clean_known_by(["  Old\tMaren ", "old maren", "Tobin"]) == ["Old Maren", "Tobin"]
    assert clean_known_by(["Ｍａｒａ"]) == ["Mara"]  # NFKC


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("Mara", "must be a list of names"),
        ([1, 2], "must be a list of names"),
        ({"name": "Mara"}, "must be a list of names"),
        (["Mara", "  "], "at least one letter or digit"),
        (["x" * 500], "characters long"),
        ([f"Name {i}" for i in range(KNOWN_BY_MAX + 1)], f"at most {KNOWN_BY_MAX}"),
    ],
)
def test_what_is_no_list_of_names_is_refused_saying_what_to_send(value: object, words: str) -> None:
    with pytest.raises(InvalidInput, match=words):
        clean_known_by(value)


def test_a_character_is_in_on_a_secret_by_name_shorter_name_or_first_name() -> None:
    assert in_on(["Tobin Hale"], person("Tobin Hale"))
    assert in_on(["tobin hale"], person("Tobin Hale"))
    assert in_on(["Maren"], person("Old Maren"))  # told shorter
    assert in_on(["Mara"], person("Captain Mara"))  # a title set aside
    assert in_on(["Tobin"], person("Tobin Hale"))  # the first name alone
    assert not in_on(["Hale"], person("Tobin Marsh"))
    assert not in_on(["Tobias"], person("Tobin"))
    assert not in_on([], person("Tobin"))
