"""The voice benchmark's own reading of a reply, and its figures."""

from __future__ import annotations

from benchmarks.voice.run import Reply, figures, judge, markdown

from talekeeper.providers.voice import repair


def test_the_issues_example_speaks_as_the_player_in_two_ways() -> None:
    raw = 'I look at her, and she smiles. "You\'re right," I say.'
    assert judge(raw) == ["first person", "gives the player words"]


def test_a_stray_quotation_mark_does_not_hide_what_follows_it() -> None:
    text = 'It has been years now." You look at the clock, "It stopped," I say, pointing.'
    assert judge(text) == ["first person", "gives the player words"]
    assert repair(text)[0] == 'It has been years now." '


def test_a_next_move_and_a_quiet_reply_are_told_apart() -> None:
    assert judge("The door creaks.\n> You open it.") == ["next move"]
    assert judge("You: I open it.") == ["first person", "next move"]
    assert judge('The keeper says, "I know you. My father knew yours."') == []
    assert judge("You step inside; the lamp gutters.") == []


def test_the_repairs_leave_nothing_the_judge_would_flag_in_these_replies() -> None:
    raws = [
        'I look at her, and she smiles. "You\'re right," I say. The wind rises.',
        "My lantern is dim. I was afraid.\n> You walk on.",
        '"Stay," you whisper. The keeper nods.',
    ]
    for raw in raws:
        assert judge(raw)  # each speaks as the player as written
        fixed, _ = repair(raw)
        assert fixed.strip() and judge(fixed) == [], fixed


def reply(text: str, **kw: object) -> Reply:
    values: dict[str, object] = {
        "scenario": "s",
        "turn": 1,
        "action": "do look",
        "text": text,
        "repairs": [],
        "speaks_as_player": judge(text),
        "cut_short": False,
        "empty": not text,
        "seconds": 1.0,
    }
    values.update(kw)
    return Reply(**values)  # type: ignore[arg-type]


def test_figures_count_each_reply_once_and_say_why() -> None:
    replies = [
        reply("I look. I say nothing."),
        reply('"Hi," I say.'),
        reply("The sea is calm."),
        reply("", empty=True),
        reply("The sea is", cut_short=True, repairs=["unfinished"]),
    ]
    f = figures("s", replies)
    assert (f.replies, f.speaks, f.empty, f.cut_short, f.repaired) == (5, 0.4, 0.2, 0.2, 0.2)
    assert f.why == {"first person": 2, "gives the player words": 1}
    text = markdown([f], {"turns": 5, "seconds": 1.0, "command": "x"}, replies[:1])
    assert "| s | 5 | 40% | 20% | 20% | 20% |" in text
    assert "first person 2, gives the player words 1" in text
