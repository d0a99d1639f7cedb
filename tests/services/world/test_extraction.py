"""What a world model's answer keeps (``services.world.extraction``): pure, no database, no
model. Each rule of the module's invariants has its case here."""

from __future__ import annotations

import json

import pytest

from talekeeper.services.world.extraction import MAX_FACTS, Turn, facts, request
from talekeeper.storage.vocabulary import EventKind

pytestmark = pytest.mark.no_database

TURN = Turn(
    location="the quay",
    present=("Old Maren",),
    carrying=(),
    action="> You give Maren the lamp.",
    reply="Maren hands you the old lamp.  You thank her. Then   Maren dies quietly. "
    "By morning the fog has gone.",
)


def kept(*entries: object, turn: Turn = TURN) -> list[tuple[object, ...]]:
    _, found = facts(json.dumps({"events": list(entries)}), turn)
    return [(f.kind, f.subject, f.object, f.value, f.on_reply) for f in found]


def test_a_fact_on_a_sentence_of_the_turn_naming_what_it_says_is_kept() -> None:
    took = {"kind": "took", "object": "the old lamp", "evidence": "maren HANDS you the old lamp."}
    died = {"kind": "status", "subject": "Maren", "value": "dead",
            "evidence": "Then Maren dies quietly."}  # fmt: skip
    given = {"kind": "gave", "object": "the lamp", "value": "Maren",
             "evidence": "You give Maren the lamp."}  # fmt: skip
    assert kept(took, died, given) == [
        (EventKind.TOOK, None, "the old lamp", None, True),
        (EventKind.STATUS, "Maren", None, "dead", True),
        (EventKind.GAVE, None, "the lamp", "Maren", False),  # the action's own sentence
    ]


@pytest.mark.parametrize(
    "entry",
    [
        {"kind": "took", "object": "the old lamp", "evidence": "You steal the lamp."},  # not said
        {"kind": "took", "object": "the sword", "evidence": "Maren hands you the old lamp."},
        {"kind": "arrived", "subject": "Tobin", "evidence": "You thank her."},
        {"kind": "learned", "subject": "Maren", "value": "x", "evidence": "You thank her."},
        {"kind": "took", "evidence": "Maren hands you the old lamp."},  # no object
        {"kind": "took", "object": 5, "evidence": "Maren hands you the old lamp."},
        {"kind": "took", "object": "x" * 500, "evidence": "Maren hands you the old lamp."},
        {"kind": "took", "object": "the old lamp"},  # no evidence
        {"kind": "took", "object": "the old lamp", "evidence": ""},
        "the lamp",
        ["took"],
    ],
)
def test_what_the_turn_does_not_bear_out_is_dropped(entry: object) -> None:
    assert kept(entry) == []


@pytest.mark.parametrize(
    "answer",
    [
        *("", "no", "{", "{]", '{"events": 3}', '{"facts": []}', "[1, 2]", "null", "{}"),
        '{"events": ' + "[" * 5000 + "]" * 5000 + "}",  # nested past the JSON reader's depth
    ],
)
def test_an_answer_that_is_no_list_of_events_keeps_nothing(answer: str) -> None:
    assert facts(answer, TURN) == (0, [])


def test_prose_around_the_object_is_ignored_and_only_so_many_entries_are_read() -> None:
    one = {"kind": "took", "object": "the old lamp", "evidence": "Maren hands you the old lamp."}
    text = "Here you go:\n" + json.dumps({"events": [one] * (MAX_FACTS + 5)}) + "\nDone."
    found, kept_facts = facts(text, TURN)
    assert found == MAX_FACTS and len(kept_facts) == MAX_FACTS


def test_the_request_shows_the_state_the_action_and_the_reply_at_no_temperature() -> None:
    chat = request(TURN, model="m", mode="chat")
    user = chat.messages[-1].content
    assert "Where the player is: the quay" in user and "Old Maren" in user
    assert "nothing" in user and TURN.reply in user and TURN.action in user
    assert chat.temperature == 0.0 and chat.messages[0].role == "system"
    completion = request(TURN, model="m", mode="completion")
    assert TURN.reply in completion.prompt and completion.mode == "completion"


def test_a_telling_is_kept_when_its_sentence_says_what_was_learned() -> None:
    turn = Turn(
        location="the quay",
        present=("Tobin",),
        carrying=(),
        action="> You tell Tobin about the key.",
        reply="Tobin learns that the key lies under the third piling. He nods.",
    )
    told = {"kind": "learned", "subject": "Tobin", "value": "the key lies under the piling",
            "evidence": "Tobin learns that the key lies under the third piling."}  # fmt: skip
    other = {"kind": "learned", "subject": "Tobin", "value": "the smugglers' route",
             "evidence": "Tobin learns that the key lies under the third piling."}  # fmt: skip
    bare = {"kind": "learned", "subject": "Tobin", "evidence": "He nods."}
    assert kept(told, other, bare, turn=turn) == [
        (EventKind.LEARNED, "Tobin", None, "the key lies under the piling", True)
    ]
    assert '"learned"' in str(request(turn, model="m", mode="chat"))
