"""``/cards`` in ``talekeeper play``: the lore clerk's card proposals (docs/world.md, "The
lore clerk") listed with their evidence, accepted into a card, dismissed and reopened;
every refusal is one ``!`` line that changes nothing.

Real parts: ``talekeeper play`` as a process on a migrated database, turns against the
loopback model double, the background pass that writes the proposals (``/cards`` waits
for it, as ``/memories`` does).
"""

from __future__ import annotations

import re

from tests.kit.cli import Cli, Terminal

RHYS = (
    "Captain Rhys steps off the ferry with a sea chest.",
    "The gulls scatter. Rhys wears a coat of oiled blue wool.",
    "Rhys owes the harbourmaster forty crowns. You nod.",
)
ABBEY = (
    "A bell rings in Saltmarsh Abbey.",
    "The monks of Saltmarsh Abbey sing at dusk.",
    "Saltmarsh Abbey stands dark against the sky.",
)
NONE_PROPOSED = "No card proposals: a name the story uses in three actions of this path"


def proposal_ids(out: str) -> dict[str, int]:
    """Name -> id of each proposal ``/cards proposals`` printed in ``out``."""
    return {name: int(pid) for pid, name in re.findall(r"  proposal (\d+): (.+?) \(", out)}


def test_proposals_are_listed_with_their_actions_accepted_dismissed_and_reopened(
    cli: Cli,
) -> None:
    aid = cli.new("lantern-coast")
    cli.double.script(*RHYS, *ABBEY)
    with Terminal(cli, str(aid)) as terminal:
        terminal.send(["/cards proposals", *["look around"] * 6, "/show 12", "/cards proposals"])
        terminal.wait_for(r"proposal \d+: Saltmarsh Abbey \(location\), keys: ")
        listed = terminal.stdout
        ids = proposal_ids(listed)
        rhys = next(name for name in ids if "Rhys" in name)
        terminal.send(
            [
                f"/cards dismiss {ids['Saltmarsh Abbey']}",
                "/cards proposals",
                f"/cards accept {ids[rhys]}",
                "/cards",
                "/cards proposals",
                f"/cards reopen {ids['Saltmarsh Abbey']}",
                "/cards proposals",
                "/quit",
            ]
        )
        assert terminal.finish() == 0, terminal.stderr
        out = terminal.stdout
    assert "Traceback" not in terminal.stderr
    after = out[len(listed) :]
    assert NONE_PROPOSED in listed.split("\n> ", 2)[1]  # before any turn
    # Each evidence line is a sentence of the story, with the action /show numbers it by.
    shown = dict(re.findall(r"#(\d+) (.+)", listed))
    evidence = re.findall(r"    from #(\d+): (.+)", listed)
    assert [text for _, text in evidence] == [
        RHYS[0],
        "Rhys wears a coat of oiled blue wool.",
        "Rhys owes the harbourmaster forty crowns.",
        *ABBEY,
    ]
    assert all(text in shown[action] for action, text in evidence), (evidence, shown)
    assert f"    draft: {RHYS[0]} Rhys wears a coat" in listed
    blocks = after.split("\n> ")
    assert blocks[0] == f"(proposal {ids['Saltmarsh Abbey']} dismissed: Saltmarsh Abbey)"
    assert list(proposal_ids(blocks[1])) == [rhys]  # dismissed: no longer listed
    made = re.fullmatch(rf"\(proposal {ids[rhys]} accepted: card #(\d+), {rhys}\)", blocks[2])
    assert made, blocks[2]
    assert re.search(rf"  #{made.group(1)} {rhys} \(character\): .*Rhys", blocks[3])
    assert NONE_PROPOSED in blocks[4]  # one accepted, one dismissed
    assert blocks[5] == f"(proposal {ids['Saltmarsh Abbey']} reopened: Saltmarsh Abbey)"
    assert list(proposal_ids(blocks[6])) == ["Saltmarsh Abbey"]
    rows = cli.query("SELECT name FROM story_cards WHERE adventure_id = :a", a=aid)
    assert (rhys,) in rows


def test_a_refused_proposal_command_says_why_and_changes_nothing(cli: Cli) -> None:
    aid = cli.new("lantern-coast")
    cli.double.script(*RHYS)
    with Terminal(cli, str(aid)) as terminal:
        terminal.send([*["look around"] * 3, "/cards proposals"])
        pid = int(terminal.wait_for(r"  proposal (\d+): ").group(1))
        cards = cli.query("SELECT count(*) FROM story_cards WHERE adventure_id = :a", a=aid)
        refusals = [
            "/cards accept x",
            "/cards dismiss 999999",
            "/cards accept 99999999999999999999",
            f"/cards reopen {pid}",
            "/cards frobnicate",
            "/undo",  # the third action naming him: the path no longer supports it
            f"/cards accept {pid}",
            "/redo",
        ]
        terminal.send([*refusals, "/cards proposals", "/quit"])
        assert terminal.finish() == 0, terminal.stderr
        out = terminal.stdout
    assert "Traceback" not in terminal.stderr
    answers = out.split("\n> ")[-len(refusals) - 2 : -1]
    assert answers[:5] == [
        "! Usage: /cards accept N (a number).",
        "! There is no card proposal 999999.",
        "! 99999999999999999999 is too large: no id, take or count is that large.",
        f"! Card proposal {pid} is open; only a dismissed one reopens.",
        "! Usage: /cards, /cards proposals, /cards accept N, /cards dismiss N or "
        "/cards reopen N (N: a proposal's number, as /cards proposals lists them).",
    ]
    assert answers[6].startswith(f"! Card proposal {pid} is no longer supported by the story")
    assert list(proposal_ids(answers[8]).values()) == [pid]  # restored: listed, still open
    assert cli.query("SELECT state FROM card_proposals WHERE id = :p", p=pid) == [("open",)]
    assert cli.query("SELECT count(*) FROM story_cards WHERE adventure_id = :a", a=aid) == cards
