"""The lore clerk's rules (docs/world.md, "The lore clerk"), on hand-made stories: what is
a name, when two names are one entity, what makes a candidate, and that a draft says only
what the story's own sentences say."""

from __future__ import annotations

import pytest

from talekeeper.services.world import clerk
from talekeeper.services.world.clerk import PathText, candidates, same_entity, third_person
from talekeeper.services.world.entity_names import entities


def named(texts: list[str], known: dict[str, str] | None = None) -> dict[str, list[int]]:
    return {e.name: e.actions for e in entities(texts, known)}


def path(*texts: str) -> list[PathText]:
    return [PathText(100 + i, text, True) for i, text in enumerate(texts)]


def test_capitals_of_grammar_are_not_names_but_a_name_opening_a_sentence_is() -> None:
    found = named(
        [
            "Suddenly the door opens. Mara steps in.",
            "Yes, the tide is high. Then Mara laughs at Tobin.",
            '"Quiet," says Tobin. On Monday Tobin sails. I wait.',
        ]
    )
    assert found == {"Mara": [0, 1], "Tobin": [1, 2]}


def test_a_title_joins_its_name_and_one_word_joins_the_one_longer_name_it_belongs_to() -> None:
    found = entities(
        [
            "Mr. Darcy bows to Elizabeth Bennet.",
            "Darcy leaves. Elizabeth smiles at Jane Bennet.",
            "Bennet is a common name here. Captain Rhys waves.",
        ]
    )
    by_name = {e.name: (e.keys, e.actions) for e in found}
    assert by_name["Mr. Darcy"] == (["Darcy"], [0, 1])  # "Mr. Darcy" and "Darcy": one
    assert by_name["Elizabeth Bennet"] == (["Elizabeth", "Elizabeth Bennet"], [0, 1])
    assert by_name["Bennet"][1] == [2]  # two Bennets: a bare "Bennet" is neither
    assert "Captain Rhys" in by_name or "Rhys" in by_name
    assert not any(name in ("Mr", "Captain") for name in by_name)


def test_names_in_any_script_keep_their_letters() -> None:
    found = named(["Потом Игорь уходит. Игорь смеётся.", "明 sits with 暗.", "明 sings."],
                  known={"明": "person", "暗": "person"})  # fmt: skip
    assert found == {"Игорь": [0], "明": [1, 2], "暗": [1]}
    assert not same_entity(["明"], ["暗"])
    assert same_entity(["Игорь"], ["ИГОРЬ"])
    assert same_entity(["Ｍａｒａ"], ["mara"])  # NFKC: full-width letters are the same name


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Old Maren", "Maren", True),  # told shorter
        ("Mara Vell", "Mara", True),  # a first name alone
        ("Caius Marcius Coriolanus", "Caius Marcius", True),  # its leading words
        ("The Brass Key", "brass key", True),
        ("Captain Rhys", "Rhys", True),
        ("Marianne", "Marianna", True),  # long names: one edit apart
        ("Hermione Granger", "Hermoine Granger", True),  # longer: two edits
        ("Tom", "Tim", False),  # short names one letter apart are other people
        ("Mara", "Maren", False),
        ("Key", "Monkey", False),
        ("Gullreach", "Gull", False),
    ],
)
def test_one_entity_one_name(a: str, b: str, same: bool) -> None:
    assert same_entity([a], [b]) is same
    assert same_entity([b], [a]) is same


def test_you_is_told_as_the_protagonist_only_where_grammar_stays_whole() -> None:
    assert third_person("Mara hands you the key.", "Kit") == "Mara hands Kit the key."
    assert third_person("Mara smiles at you.", "Kit") == "Mara smiles at Kit."
    assert third_person("Your sword was Mara's gift.", "Kit") == "Kit's sword was Mara's gift."
    assert third_person("You walk to Mara.", "Kit") is None  # "you" is the subject
    assert third_person("Mara knows you are lying.", "Kit") is None
    assert third_person("Mara hands you the key.", "") is None  # no one to name
    assert third_person("Mara sleeps.", "") == "Mara sleeps."


def test_a_candidate_needs_three_actions_and_no_card_of_its_name() -> None:
    two = path("Rhys sails north.", "Rhys rows home.", "The sea is calm.")
    assert candidates(two, []) == []
    three = path("Rhys sails north.", "Rhys rows home.", "Rhys sleeps on deck.")
    [(entity, draft)] = candidates(three, [])
    assert (draft.name, draft.type, draft.keys) == ("Rhys", "character", ("Rhys",))
    assert candidates(three, [["Captain Rhys"]]) == []  # a card of that name
    assert candidates(three, [["The Sailor", "rhys"]]) == []  # a card's keyword
    assert candidates(three, [], protagonist="Rhys") == []  # the player's own character


def test_a_draft_says_only_the_storys_sentences_each_with_its_action() -> None:
    story = path(
        "Rhys owns a red boat. You nod.",
        '"I am Rhys," he says. Rhys hands you a map.',
        "I think Rhys lies. Rhys sails at dawn from Gullreach!",
        "Rhys is " + "very " * 80 + "tall.",  # too long for one line of a card
    )
    [(_, draft)] = candidates(story, [], protagonist="Kit")
    assert [(line.action_id, line.text) for line in draft.evidence] == [
        (100, "Rhys owns a red boat."),
        (101, "Rhys hands Kit a map."),
        (102, "Rhys sails at dawn from Gullreach!"),
    ]
    assert (
        draft.entry
        == "Rhys owns a red boat. Rhys hands Kit a map. Rhys sails at dawn from Gullreach!"
    )
    for line in draft.evidence:  # every line is its action's sentence (only "you" told)
        said = story[line.action_id - 100].text
        assert line.text.replace("Kit", "you") in said


def test_a_draft_stays_within_the_cards_size_in_whole_sentences() -> None:
    long = [f"Rhys tells tale number {n} of the northern sea and its storms." for n in range(40)]
    [(_, draft)] = candidates(path(*long), [])
    assert len(draft.entry) <= clerk.ENTRY_CHARS
    assert draft.entry.endswith(".") and len(draft.evidence) > 3
    assert draft.entry == " ".join(line.text for line in draft.evidence)


def test_a_draft_no_usable_sentence_supports_is_not_proposed() -> None:
    story = path('"Rhys!" you shout.', "You follow Rhys.", "I see Rhys.")
    assert candidates(story, [], protagonist="Kit") == []


def test_places_and_factions_are_told_by_their_words() -> None:
    story = path(
        "The road runs into Zabreen. The Salt Guild rules there.",
        "Smoke rises over Zabreen. The Salt Guild taxes the road.",
        "Bells ring in Zabreen. The Salt Guild meets at noon.",
    )
    types = {d.name: d.type for _, d in candidates(story, [])}
    assert types == {"Zabreen": "location", "Salt Guild": "faction"}


def test_a_possessive_a_saints_place_and_capitals_are_the_names_they_stand_for() -> None:
    found = entities(
        [
            "Darcy's horse waits. They walk to St. James's before noon.",
            "Mr. Darcy reads a letter signed CAROLINE BINGLEY. Caroline Bingley waves.",
            "They meet at St. James.",
            "Darcy leaves for St. James with Caroline Bingley.",
        ]
    )
    by_name = {e.name: (e.keys, e.actions) for e in found}
    assert by_name["Mr. Darcy"] == (["Darcy"], [0, 1, 3])
    assert by_name["St. James"][1] == [0, 2, 3]
    assert by_name["Caroline Bingley"][0] == ["Caroline Bingley"]  # the capitals are no key


def test_a_draft_leads_with_sentences_about_the_entity_and_leaves_out_pieces() -> None:
    story = path(
        'The tall man who came with the wine fleet was Rhys. "Go," cried Rhys.',
        "Rhys keeps a ledger of every debt in the harbour. She turned to Rhys and said:",
        "Rhys sleeps aboard the Heron most nights.",
    )
    [(_, draft)] = candidates(story, [])
    assert [line.text for line in draft.evidence] == [
        "The tall man who came with the wine fleet was Rhys.",
        "Rhys keeps a ledger of every debt in the harbour.",
        "Rhys sleeps aboard the Heron most nights.",
    ]
    clerk_room = clerk.ENTRY_CHARS
    assert len(draft.entry) <= clerk_room


def test_a_family_name_does_not_stand_for_each_of_the_family() -> None:
    # "Elizabeth Bennet" is also "Elizabeth": "Bennet" may be her father.
    assert not same_entity(["Elizabeth Bennet", "Elizabeth"], ["Mr. Bennet", "Bennet"])
    assert same_entity(["Elizabeth Bennet"], ["Bennet"])  # known by no other name: one
    assert same_entity(["Old Maren", "Maren"], ["Maren"])


def test_speech_is_kept_as_said_and_a_speakers_capitals_make_a_keyword() -> None:
    story = path(
        '"Doraith lives in Hisao by the sea," Grigraen says.',
        "DORAITH:\nThe tide is late tonight, and the nets are torn.",
        "Doraith mends the torn nets.",
        "DORAITH:\nNo.",
    )
    [(entity, draft)] = candidates(story, [])
    assert draft.keys == ("Doraith",)
    assert draft.evidence[0].text == '"Doraith lives in Hisao by the sea," Grigraen says.'
    assert "Doraith mends the torn nets." in draft.entry


def test_a_scripts_speech_is_told_as_its_speakers_and_first_person_said_by_a_name_is_kept() -> None:
    story = path(
        "PETRUCHIO:\nVerona, for a while I take my leave,\nTo see my friends in Padua.",
        "PETRUCHIO:\nI come to wive it wealthily in Padua.\nGRUMIO:\nNay, look you, sir.",
        '"I am not afraid of Petruchio in Padua," said Lydia.',
        '"I like Petruchio," she said. Petruchio bows.',
    )
    drafts = {entity.name: d for entity, d in candidates(story, [])}
    lines = [line.text for line in drafts["Petruchio"].evidence]
    assert lines[:2] == [
        'Petruchio: "Verona, for a while I take my leave, To see my friends in Padua."',
        'Petruchio: "I come to wive it wealthily in Padua."',
    ]
    assert '"I am not afraid of Petruchio in Padua," said Lydia.' in lines  # a name says it
    assert not any("I like" in line for line in lines)  # "she said": whose "I"?
    assert "Nay, look you" not in drafts["Petruchio"].entry  # Grumio's, not his
    padua = [line.text for line in drafts["Padua"].evidence]
    assert padua[0].startswith('Petruchio: "Verona')


def test_a_speaker_line_names_someone_even_by_a_common_word() -> None:
    story = path(
        "QUEEN ELIZABETH:\nThe rivers rise.\nRIVERS:\nHave patience, madam: the rivers fall.",
        "RIVERS:\nThe king is well, and the rivers are low.",
        "RIVERS:\nThe queen is kind to the court.",
    )
    drafts = {entity.name: d for entity, d in candidates(story, [])}
    assert drafts["Rivers"].evidence[0].text == 'Rivers: "Have patience, madam: the rivers fall."'
    assert "Queen Elizabeth" not in drafts  # one action: no card yet


def test_verse_capitals_interjections_and_contractions_are_not_names() -> None:
    speech = (
        "MENENIUS:\nNay, these are almost persuaded;\nConsider this, I'll go to Rome;\nLo, Rome {}."
    )
    found = named(
        [speech.format(n) for n in ("waits", "burns", "falls")]
        + ["Rome sleeps, Richard\nGloucester wakes."]
    )
    assert "Nay" not in found and "Lo" not in found and "I'll" not in found
    assert found["Rome"] == [0, 1, 2, 3] and found["Menenius"] == [0, 1, 2]
    assert "Richard Gloucester" not in found  # a line's end parts two names
    assert "Lest I" not in named(["Lest I forget, Mara waits.", "Mara\nLest I go."])
    verse = "TOBIN:\nThe nets are torn, and yet,\nVouchsafe to mend them, {}.\nTobin sings."
    found = named([verse.format(n) for n in ("Rhys", "Kit", "Mara")])
    assert "Vouchsafe" not in found  # it opens only lines that go on with a sentence
    assert found["Tobin"] == [0, 1, 2]


def test_a_family_in_the_plural_is_the_entity_of_its_singular() -> None:
    found = entities(["Mr. Collins bows.", "The Collinses dine at Rosings.", "Mr. Collins smiles."])
    by_name = {e.name: e for e in found}
    assert "Collinses" not in by_name
    assert by_name["Mr. Collins"].actions == [0, 1, 2]
    assert named(["Rhys and the Lakes.", "The Lakes are cold."])["Lakes"] == [0, 1]


def test_a_cards_own_speeches_are_no_update_but_what_the_story_tells_of_it_is() -> None:
    from talekeeper.services.world.card_updates import CardText, updates

    card = CardText(1, "Rhys", "character", ("Rhys",), "A ferryman.")
    speeches = path(
        "Fog.",
        "RHYS:\nThe tide turns at noon, and the ferry waits.",
        "RHYS:\nThe river is high tonight, and the rope is old.",
    )
    assert updates(speeches, [card]) == []
    told = path(*[a.text for a in speeches], "Rhys loses his oar.", "Rhys swims to Gullreach.")
    [(_, update)] = updates(told, [card])
    assert update.entry == "Rhys loses his oar. Rhys swims to Gullreach."


def test_a_narrators_heading_on_its_own_line_is_no_speaker() -> None:
    story = path(*[f"Rain falls.\nInventory:\nA rusty sword and a lamp, {n}." for n in "abc"])
    assert candidates(story, []) == []
