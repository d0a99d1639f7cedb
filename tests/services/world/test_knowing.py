"""Who knows what, in play (docs/world.md, "Who knows what"): the memories the addressed
character did not witness are labelled, withheld or left alone by the witness mode; a turn
that addresses no one is never touched."""

from __future__ import annotations

from dataclasses import replace

import pytest

from talekeeper.core.tokens import CharCounter
from talekeeper.services.memory.bank import terms_of
from talekeeper.services.memory.base import CarriedPassage, Retrieval, UsedMemory
from talekeeper.services.memory.evidence import said
from talekeeper.services.world.knowing import (
    Witness,
    absent_during,
    apply,
    label,
    secret_label,
)
from talekeeper.services.world.projection import Ref
from talekeeper.services.world.telling import told_about
from talekeeper.services.world.witnesses import Presence
from talekeeper.storage.vocabulary import EntityKind, WitnessMode

pytestmark = pytest.mark.no_database

MARA, TOBIN = Ref(1, "Mara", EntityKind.PERSON), Ref(2, "Tobin", EntityKind.PERSON)
# Both present from the start; Tobin away from action 5 until he is back at action 9.
SEEN = Presence(depths=(0, 5, 9), present=((MARA, TOBIN), (MARA,), (MARA, TOBIN)))


def memory(id_: int, text: str, start: int | None, end: int | None) -> UsedMemory:
    used = UsedMemory(id_, text, 0.5, 0.0, 0.5, False, "accepted_story")
    used.source = {"source_start": start, "source_end": end}
    return used


def retrieval() -> Retrieval:
    return Retrieval(
        used=[
            memory(10, "Mara hid the key under the third piling.", 4, 6),  # Tobin gone at 5
            memory(11, "The storm broke the harbour lamps.", 0, 3),  # everyone there
            memory(12, "Tobin owes the harbourmaster.", None, None),  # written by hand
        ]
    )


def test_a_memory_the_addressed_character_missed_is_labelled_and_the_rest_are_not() -> None:
    given = retrieval()
    before = repr(given)
    used, report = apply(given, Witness(WitnessMode.LABEL, TOBIN, "vocative", "Tobin,", SEEN))
    assert repr(given) == before  # a copy is labelled
    assert [m.witness_label for m in used.used] == [label("Tobin"), "", ""]
    assert "Mara hid the key under the third piling. — Tobin was not there" in used.section_text()
    assert report.addressed == "Tobin" and report.labelled == (10,) and report.withheld == ()
    assert [(u.memory_id, u.why) for u in report.reasons] == [(10, "absent at actions 5–6")]


def test_a_character_who_was_there_sees_no_label() -> None:
    used, report = apply(retrieval(), Witness(WitnessMode.LABEL, MARA, "vocative", "Mara,", SEEN))
    assert not any(m.witness_label for m in used.used)
    assert report.addressed == "Mara" and report.labelled == () and report.reasons == ()


def test_strict_leaves_the_unwitnessed_memory_out_and_says_why() -> None:
    used, report = apply(retrieval(), Witness(WitnessMode.STRICT, TOBIN, "vocative", "", SEEN))
    assert [m.id for m in used.used] == [11, 12]
    assert "third piling" not in used.section_text()
    assert report.withheld == (10,) and report.labelled == ()
    assert report.reasons[0].why == "absent at actions 5–6"


@pytest.mark.parametrize(
    "witness",
    [
        pytest.param(Witness(WitnessMode.OFF, TOBIN, "vocative", "Tobin,", SEEN), id="off"),
        pytest.param(Witness(WitnessMode.LABEL), id="nobody-addressed"),
        pytest.param(Witness(WitnessMode.STRICT), id="nobody-addressed-strict"),
    ],
)
def test_off_or_no_one_addressed_leaves_the_retrieval_as_it_was(witness: Witness) -> None:
    given = retrieval()
    used, report = apply(given, witness)
    assert used is given
    assert report.labelled == report.withheld == ()
    assert report.mode is witness.mode


def test_absence_is_read_stretch_by_stretch_between_the_changes() -> None:
    assert absent_during(SEEN, TOBIN.id, 0, 4) is None
    assert absent_during(SEEN, TOBIN.id, 5, 5) == (5, 5)
    assert absent_during(SEEN, TOBIN.id, 3, 12) == (5, 8)  # back at 9
    assert absent_during(SEEN, MARA.id, 0, 20) is None
    nobody_yet = Presence(depths=(4,), present=((MARA,),))
    assert absent_during(nobody_yet, MARA.id, 0, 6) == (0, 3)  # nobody before the first
    used, report = apply(
        Retrieval(used=[memory(1, "A lone action.", 5, 5)]),
        Witness(WitnessMode.LABEL, TOBIN, "vocative", "", SEEN),
    )
    assert report.reasons[0].why == "absent at action 5"


def test_a_memory_tobin_was_told_of_after_it_began_is_known_to_him() -> None:
    def told(*learned: tuple[int, str]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        witness = Witness(WitnessMode.LABEL, TOBIN, "vocative", "", SEEN, learned)
        _, report = apply(retrieval(), witness)
        return report.labelled, report.told

    assert told() == ((10,), ())
    assert told((8, "the key under the piling")) == ((), (10,))  # told after it began
    assert told((2, "the key under the piling")) == ((10,), ())  # told before: not this
    assert told((8, "the harbour lamps and the gulls")) == ((10,), ())  # of something else
    assert told((8, "the truth")) == ((10,), ())  # too common a word to say what


def test_told_about_needs_half_the_telling_words() -> None:
    texts = ["Mara hid the key under the third piling."]
    assert told_about("the key", texts)
    assert told_about("the brass key", texts)  # one of two words
    assert not told_about("the brass lantern", texts)
    assert not told_about("everything", texts)
    assert told_about("KEY", texts)  # case-folded


def test_a_secret_is_known_to_those_it_names_and_to_whoever_is_told_of_it() -> None:
    secrets = {11: ["Mara"], 12: []}  # 11: seen by all, a secret of Mara's; 12: the player's

    def report(who: Ref, *learned: tuple[int, str]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        witness = Witness(WitnessMode.LABEL, who, "vocative", "", SEEN, learned, secrets)
        used, found = apply(retrieval(), witness)
        labels = {m.id: m.witness_label for m in used.used if m.witness_label}
        for id_ in found.labelled:
            assert labels[id_] == (label(who.name) if id_ == 10 else secret_label(who.name))
        return found.labelled, found.told

    assert report(MARA) == ((12,), ())  # in on 11; 12 is the player's alone
    assert report(TOBIN) == ((10, 11, 12), ())
    # Told of the harbourmaster's debt (12, written by hand: any telling counts).
    assert report(TOBIN, (1, "the harbourmaster debt")) == ((10, 11), (12,))
    _, found = apply(retrieval(), Witness(WitnessMode.LABEL, TOBIN, "", "", SEEN, (), secrets))
    reasons = {u.memory_id: u.why for u in found.reasons}
    assert reasons[11] == "a secret: known only to Mara and you"
    assert reasons[12] == "a secret: known only to you"


def test_a_memory_whose_text_tobin_saw_marks_or_drops_only_the_passages_he_missed() -> None:
    """Tobin saw the hiding (action 4) and left at 5: the memory's own text is a passage it
    states from action 4, so the memory is his; the passage from action 6 is not."""
    hid = CarriedPassage(1, "Mara hid the key under the third piling.", 4, 0.9, stated=True)
    later = CarriedPassage(2, "Mara buried the ledger in the dunes.", 6, 0.8)
    partial = memory(20, "Mara hid the key under the third piling.", 4, 6)
    partial.passages = [hid, later]

    def build(mode: WitnessMode) -> tuple[Retrieval, tuple[int, ...], tuple[int, ...]]:
        used, report = apply(Retrieval(used=[partial]), Witness(mode, TOBIN, "", "", SEEN))
        assert [u.why for u in report.reasons] == [
            "absent at actions 5–6: only the passages from then"
        ]
        return used, report.labelled, report.withheld

    labelled, ids, _ = build(WitnessMode.LABEL)
    (shown,) = labelled.used
    assert ids == (20,) and shown.witness_label == ""
    assert [p.witness_label for p in shown.passages] == ["", label("Tobin")]
    labelled.fit_evidence(CharCounter(), 10_000)
    text = labelled.section_text()
    assert "third piling. —" not in text  # the memory's own line is his
    assert "dunes. — Tobin was not there" in text
    strict, _, withheld = build(WitnessMode.STRICT)
    assert withheld == (20,) and [p.key for p in strict.used[0].passages] == [1]

    # A text no passage it states accounts for (a model's own words) is not his: what he
    # saw of the memory is its best passage from an action he was there for, and it heads
    # the entry; the text goes on a marked line. With no such passage, the whole memory.
    words = "Mara keeps the key somewhere below the quay."
    reworded = memory(21, words, 4, 6)
    reworded.passages = [replace(hid, stated=False), later]
    used, report = apply(
        Retrieval(used=[reworded]), Witness(WitnessMode.LABEL, TOBIN, "", "", SEEN)
    )
    (shown,) = used.used
    assert (shown.text, shown.missed, shown.witness_label) == (
        hid.text,
        f"{words} {label('Tobin')}",
        "",
    )
    assert [p.key for p in shown.passages] == [2]  # the passage heading it is not offered again
    reworded.passages = [later]
    used, report = apply(
        Retrieval(used=[reworded]), Witness(WitnessMode.LABEL, TOBIN, "", "", SEEN)
    )
    assert used.used[0].witness_label == label("Tobin") and used.used[0].text == words


def test_a_memory_tobin_saw_in_part_keeps_his_sentences_and_marks_the_rest_on_a_line() -> None:
    """Read sentence by sentence (``said``): Tobin saw the hiding (action 4), not the
    burying (action 6); the memory keeps his sentence, the other goes on a line of its own,
    marked, or is left out (``strict``)."""
    hid, buried = "Mara hid the key under the third piling.", "Mara buried the ledger."
    keys = [(4, terms_of(hid)), (6, terms_of("Mara buried the ledger in the dunes at dawn."))]
    both = memory(22, f"{hid} {buried}", 4, 6)
    both.said = said(both.text, keys)
    assert both.said == ((hid, (4,)), (buried, (6,)))

    used, report = apply(Retrieval(used=[both]), Witness(WitnessMode.LABEL, TOBIN, "", "", SEEN))
    assert [u.why for u in report.reasons] == [
        "absent at actions 5–6: only its words and passages from then"
    ]
    assert report.labelled == (22,) and both.text == f"{hid} {buried}"  # a copy is changed
    assert used.section_text().splitlines() == [
        f"- (established) {hid}",
        f"  {buried} {label('Tobin')}",
    ]
    strict, report = apply(Retrieval(used=[both]), Witness(WitnessMode.STRICT, TOBIN, "", "", SEEN))
    assert report.withheld == (22,) and strict.section_text() == f"- (established) {hid}"
    # Mara saw all of it: nothing is split for her.
    assert (
        apply(Retrieval(used=[both]), Witness(WitnessMode.LABEL, MARA, "", "", SEEN))[0]
        .used[0]
        .text
        == both.text
    )

    # A sentence from no known action is one he missed; nothing he saw: the whole memory.
    musing = f"{hid} The ledger weighs on her mind."
    mused = memory(23, musing, 4, 6)
    mused.said = said(musing, keys)
    used, _ = apply(Retrieval(used=[mused]), Witness(WitnessMode.LABEL, TOBIN, "", "", SEEN))
    assert (used.used[0].text, used.used[0].missed) == (
        hid,
        f"The ledger weighs on her mind. {label('Tobin')}",
    )
    whole = memory(24, buried, 4, 6)
    whole.said = said(buried, keys)
    used, _ = apply(Retrieval(used=[whole]), Witness(WitnessMode.LABEL, TOBIN, "", "", SEEN))
    assert used.used[0].witness_label == label("Tobin") and used.used[0].missed == ""
