"""The ``talekeeper`` command line against the loopback model double.

Every command runs with only the environment the documentation names (in this process,
``kit.cli.run_command``; several at once and the terminal session as real
``python -m talekeeper`` processes), so what is tested is what a user types: argument
parsing, the settings, the exit status, what lands on stdout and stderr (one line per
error, never a traceback) and what is left in the database. The story a session leaves
behind is read back through ``talekeeper export``.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import data_database
from tests.kit.cli import Cli, Terminal, api, one_line_error

from talekeeper.core.clock import utcnow
from talekeeper.services.background.port import Subject
from talekeeper.services.memory.authority import classify
from talekeeper.services.memory.bank import set_pinned, set_status, set_vector
from talekeeper.services.memory.scene import set_scene
from talekeeper.services.memory.terms import term_set
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, session_scope
from talekeeper.storage.models import (
    Action,
    Adventure,
    Memory,
    SummaryVersion,
)
from talekeeper.storage.repositories.memory import MemoryRepository
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper_testkit.double import ModelDouble

# -- new, and play with no adventure ---------------------------------------------------------


def test_new_prints_the_id_and_play_picks_the_newest_adventure(cli: Cli) -> None:
    nothing = one_line_error(cli.run("play"))
    assert "no adventure yet" in nothing and "talekeeper new --scenario" in nothing
    migrated = cli.query("SELECT version_num FROM alembic_version")  # by that first command
    assert migrated == [(migrate.head_revision(make_engine(data_database(cli.data))),)]

    blank, unknown = cli.run_all([["new"], ["new", "--scenario", "nowhere"]])
    assert blank.returncode == 1 and unknown.returncode == 1
    explain = one_line_error(blank)
    assert "--scenario NAME" in explain and "--title" in explain
    for scenario in ("lantern-coast", "ashford-manor", "drift-station"):
        assert scenario in explain
    refused = one_line_error(unknown)
    assert "'nowhere'" in refused
    assert "ashford-manor, drift-station, lantern-coast" in refused
    assert cli.counts()["adventures"] == 0

    first = cli.new("lantern-coast")
    made = cli.run("new", "--title", "A blank page")
    assert made.returncode == 0 and re.fullmatch(r"\d+\n", made.stdout)
    newest = int(made.stdout)
    assert newest != first and cli.counts()["adventures"] == 2

    # Without an id, play opens the newest adventure: here an empty story, where every
    # command that needs an action answers with one line and the game goes on.
    query = "SELECT current_branch_id FROM adventures WHERE id = :id"
    main = cli.query(query, id=newest)[0][0]
    too_large = "99999999999999999999"  # more than the database can hold
    commands = [
        f"/branch {main}",
        "/take 1",
        "/undo",
        "/redo",
        "/retry",
        "/insights",
        "/edit hi",
        "/fork",
        "/delete 1",
        "/insights 1",
        "/take \u00b2",  # a digit to str.isdigit(), not to int()
        f"/show {too_large}",
        f"/delete {too_large}",
        f"/edit {too_large} new text",
        f"/branch {too_large}",
    ]
    played = cli.run("play", stdin="".join(c + "\n" for c in [*commands, "/quit"]))
    assert played.returncode == 0 and played.stderr == "", played.stderr
    lines = played.stdout.splitlines()
    assert lines[0] == (
        f"== A blank page (adventure {newest}), narrator double-narrator; /help for commands =="
    )
    assert lines[1] == "" and lines[-1] == "> "
    answers = [line.removeprefix("> ") for line in lines[2:-1]]
    assert len(answers) == len(commands), answers  # one line each
    assert answers[0] == f"(now on branch {main}, 'Main'; the story is empty)"
    assert all(answer.startswith("! ") for answer in answers[1:]), answers
    assert answers[9] == f"! There is no action 1 in adventure {newest}."
    assert answers[10] == "! Usage: /take N (a number)."
    assert answers[11:] == [f"! {too_large} is too large: no id, take or count is that large."] * 4
    assert not cli.double.requests  # nothing here asks the model anything
    assert cli.counts()["actions"] == 1  # the Lantern Coast's opening, nothing more


def test_an_edit_in_the_terminal_reads_the_world_again(cli: Cli) -> None:
    """The terminal's /edit goes through the same re-reading of the world as the API's."""
    aid = cli.new("lantern-coast")
    cli.double.script("The wind howls.")
    played = cli.run("play", str(aid), stdin="pick up the brass key\n/quit\n")
    assert played.returncode == 0, played.stderr
    (action,) = cli.query("SELECT id FROM actions WHERE type = 'do' AND adventure_id = :a", a=aid)
    edited = cli.run("play", str(aid), stdin=f"/edit {action[0]} pick up the iron key\n/quit\n")
    assert edited.returncode == 0, edited.stderr
    items = cli.query(
        "SELECT e.name FROM world_events v JOIN world_entities e ON e.id = v.object_id "
        "WHERE v.action_id = :a AND v.kind = 'took'",
        a=action[0],
    )
    assert items == [("the iron key",)]


def test_world_in_the_terminal_shows_the_state_and_takes_the_players_word(cli: Cli) -> None:
    aid = cli.new("lantern-coast")
    cli.double.script("The wind howls.")
    lines = [
        "pick up the brass key",
        "/world",
        '/world set moved object="the Lighthouse"',
        "/world set flew",
        '/world set took object="a',
        "/world remove 999999",
        "/world frobnicate",
        "/quit",
    ]
    played = cli.run("play", str(aid), stdin="\n".join(lines) + "\n")
    assert played.returncode == 0, played.stderr
    out = played.stdout
    assert "Location: Gullreach" in out and "Carrying: the brass key" in out
    assert "took object='the brass key' (rules, action" in out
    assert "Location: the Lighthouse" in out  # the player's word, shown at once
    assert "There is no event kind 'flew'; the kinds are: moved," in out
    assert out.count("Usage: /world") == 2  # the unclosed quote and the unknown verb
    assert "There is no world event 999999." in out
    moved = cli.query(
        "SELECT origin FROM world_events WHERE adventure_id = :a AND kind = 'moved'", a=aid
    )
    assert sorted(moved) == [("player",), ("rules",)]


# -- a whole session in the terminal ---------------------------------------------------------


def reply(n: int) -> str:
    # Several words, so each streams in several pieces; a non-ASCII dash for the encoding.
    return f"Passage {n:02d} \u2014 the tide answers, and the lamp-glass hums."


def test_a_whole_terminal_session_is_saved_exactly(cli: Cli) -> None:
    adventure = cli.new()
    double = cli.double
    # The ledger of what the story must hold afterwards, in creation order:
    # [branch key, depth, type, text, state, take].
    rows: list[list[Any]] = []
    replies = iter(range(1, 100))
    generated: list[int] = []  # ledger keys of the replies the model wrote

    def row(branch: int, depth: int, type_: str, text: str) -> int:
        rows.append([branch, depth, type_, text, "active", 1])
        return len(rows)

    def narration(branch: int, depth: int) -> int:
        n = next(replies)
        double.script(reply(n))
        key = row(branch, depth, "narration", reply(n))
        generated.append(key)
        return key

    lines: list[str] = []
    turns = 0

    def turn(line: str, type_: str, text: str, depth: int, branch: int = 1) -> int:
        nonlocal turns
        turns += 1
        lines.append(line)
        if type_ != "continue":
            row(branch, depth, type_, text)
            depth += 1
        return narration(branch, depth)

    # Part 1: every kind of turn, takes, undo/redo and an edit.
    turn("light the lamp", "do", "light the lamp", 1)
    turn("/say Hello, Maren", "say", "Hello, Maren", 3)
    turn("/story The wind drops.", "story", "The wind drops.", 5)
    turn("", "continue", "", 7)
    depth = 8
    for lap in range(3):
        turn(f"walk to the bollard {lap}", "do", f"walk to the bollard {lap}", depth)
        turn(f"/say Anyone on watch {lap}?", "say", f"Anyone on watch {lap}?", depth + 2)
        turn(f"/story Gulls wheel, lap {lap}.", "story", f"Gulls wheel, lap {lap}.", depth + 4)
        turn("/continue", "continue", "", depth + 6)
        depth += 7
    first_take = turn("climb the steps", "do", "climb the steps", depth)
    takes = [first_take]
    for _ in range(2):
        turns += 1
        lines.append("/retry")
        rows[takes[-1] - 1][4] = "take"
        takes.append(narration(1, depth + 1))
        rows[takes[-1] - 1][5] = len(takes)
    lines += ["/takes", "/take 1", "/undo", "/redo", "/edit The steps are slick with brine."]
    for key in takes:
        rows[key - 1][4] = "take"
    rows[first_take - 1][3:5] = ["The steps are slick with brine.", "active"]
    edited = first_take
    turn("open the door", "do", "open the door", depth + 2)
    turn("/continue", "continue", "", depth + 4)
    depth += 5
    part_one = list(lines)
    last_of_part_one = reply(len(generated))

    # Part 2 (after a model failure is queued): the failed turn, its retry, undo twice,
    # redo once (one row stays on the redo stack), then a retry that replaces it.
    lines.clear()
    turns += 1
    lines.append("search the lamp room")
    row(1, depth, "do", "search the lamp room")  # saved, though the model fails
    turns += 1
    lines.append("/retry")
    narration(1, depth + 1)
    undone_reply = turn("/say Who barred the door?", "say", "Who barred the door?", depth + 2)
    lines += ["/undo", "/undo", "/redo"]
    rows[undone_reply - 1][4] = "removed"  # dropped from the redo stack by the next reply
    turns += 1
    lines.append("/retry")  # the head is the player's line again: this writes its reply
    deleted = narration(1, depth + 3)
    lines.append("/show 1")
    part_two = list(lines)
    to_delete = reply(len(generated))

    # Part 3: delete that reply, go on, fork, play the fork, come back to the main branch.
    lines.clear()
    rows[deleted - 1][4] = "removed"
    turn("", "continue", "", depth + 3)
    forked_at = turn("look out to sea", "do", "look out to sea", depth + 4)
    fork_depth = depth + 6
    lines.append("/fork")
    turn("follow the singing", "do", "follow the singing", fork_depth, branch=2)
    fork_take = turn("/say Come no closer!", "say", "Come no closer!", fork_depth + 2, branch=2)
    turns += 1
    lines.append("/retry")
    rows[fork_take - 1][4] = "take"
    rows[narration(2, fork_depth + 3) - 1][5] = 2
    lines += ["/branches", "/branch 1"]
    turn("ring the bell", "do", "ring the bell", fork_depth)
    lines += ["/insights", "/dry look around", "/show 3", "/frobnicate", "/take 9", "/quit"]
    lines.append("never read: the game has quit")
    part_three = list(lines)
    assert turns >= 30

    with Terminal(cli, str(adventure)) as terminal:
        terminal.send(part_one)
        terminal.wait_for(re.escape(last_of_part_one))
        double.fail_next("500", model="double-narrator")
        terminal.send(part_two)
        shown = terminal.wait_for(r"> #(\d+) " + re.escape(to_delete))
        terminal.send([f"/delete {shown.group(1)}", *part_three])
        assert terminal.finish() == 0, terminal.stderr
        out, err = terminal.stdout, terminal.stderr
    assert "Traceback" not in out + err and err == ""

    # What the player saw.
    assert out.startswith(f"== The Lantern Coast (adventure {adventure}), narrator double-")
    for n in range(1, len(generated) + 1):
        assert reply(n) in out  # streamed, piece by piece, into one line
    said = [re.sub(r"^(> )+", "", line) for line in out.splitlines()]  # without the prompts
    failures = [line for line in said if line.startswith("!")]
    assert len(failures) == 2, failures
    assert "HTTP 500" in failures[0] and "Your action is saved: retry" in failures[0]
    assert failures[1] == "! take must be one of 1; got 9."
    assert "  [take 3/3]\n" in out and "* take 3: Passage" in out
    assert re.search(r"\(switched to #\d+: Passage", out)
    assert re.search(r"\(undone #\d+: Passage[\s\S]*\(restored #\d+: Passage", out)
    assert "(edited #" in out and f"(deleted #{shown.group(1)}: Passage" in out
    assert re.search(r"\(now on branch 2, 'Branch 2', forked from #\d+\)", out)
    assert re.search(r"\n> \s*1: Main, \d+ own actions\n\* 2: Branch 2 from branch 1 at #", out)
    assert "(now on branch 1, 'Main'; newest #" in out
    assert out.count("model double-narrator (chat), ") == 2  # /insights and /dry
    assert re.search(r"#\d+ Passage .*\n\n#\d+ > You ring the bell\.\n\n#\d+ Passage", out)
    assert "Unknown command /frobnicate: /help lists them." in out
    chat = [
        r
        for r in double.requests
        if r.path == "/v1/chat/completions" and (r.body or {}).get("model") == "double-narrator"
    ]
    assert len(chat) == len(generated) + 1  # the failed one; /dry and /insights ask nothing

    # What was saved.
    _, saved = cli.export(adventure)
    actions = saved["actions"]
    assert actions[0]["type"] == "narration" and actions[0]["depth"] == 0
    story = [
        [a["branch"], a["depth"], a["type"], a["text"], a["state"], a["take"]] for a in actions
    ]
    assert story[1:] == rows
    assert saved["adventure"]["current_branch"] == 1
    assert [(b["key"], b["parent"], b["fork_depth"], b["name"]) for b in saved["branches"]] == [
        (1, None, 0, "Main"),
        (2, 1, fork_depth, "Branch 2"),
    ]
    assert saved["branches"][1]["forked_from_action"] == forked_at + 1
    assert [a["key"] for a in actions if a["edited_at"]] == [edited + 1]
    assert [i["action"] for i in saved["insights"]] == [key + 1 for key in generated]
    assert {a["state"] for a in actions} == {"active", "take", "removed"}
    assert all("never read" not in a["text"] for a in actions)


# -- export and import -----------------------------------------------------------------------


def build_rich_adventure(cli: Cli) -> int:
    """Every state and every kind of row, built through the JSON API: takes, an edit, a
    deletion, a fork with its own takes, a redo stack, cards added, edited and deleted; then
    the memory system's rows (``add_memory_state``) and the player's Story Summary."""
    with api(cli) as client:

        def ok(response: Any, status: int = 200) -> Any:
            assert response.status_code == status, response.text
            return response.json()

        aid = ok(client.post("/api/adventures", json={"scenario": "lantern-coast"}), 201)["id"]
        replies = iter(range(1, 100))

        def turn(type_: str, text: str = "") -> dict[str, Any]:
            cli.double.script(f"Reply {next(replies)}: the fog thins over the harbour.")
            body = {"type": type_, "text": text}
            return dict(ok(client.post(f"/api/adventures/{aid}/actions", json=body)))

        def retry() -> None:
            cli.double.script(f"Reply {next(replies)}: the fog thins over the harbour.")
            ok(client.post(f"/api/adventures/{aid}/retry"))

        said = turn("say", "Where is the keeper?")["action"]
        told = turn("story", "A bell rings once, far out at sea.")["action"]
        turn("continue")
        turn("do", "climb the steps")
        for _ in range(2):
            retry()
        ok(client.post(f"/api/adventures/{aid}/switch-take", json={"take": 2}))
        ok(client.patch(f"/api/actions/{said['id']}", json={"text": "Where is Keeper Vane?"}))
        ok(client.delete(f"/api/actions/{told['id']}"))
        head = ok(client.get(f"/api/adventures/{aid}"))["head"]
        fork = ok(client.post(f"/api/actions/{head['id']}/fork", json={"name": "Sea road"}), 201)
        turn("do", "follow the singing")
        retry()
        ok(client.post(f"/api/adventures/{aid}/switch-branch", json={"branch_id": 1}))
        turn("do", "ring the bell")
        turn("do", "wait for an answer")
        for _ in range(2):
            ok(client.post(f"/api/adventures/{aid}/undo"))
        branch = fork["branch"]["id"]
        ok(client.post(f"/api/adventures/{aid}/switch-branch", json={"branch_id": branch}))
        card = {"name": "The Bell", "type": "item", "keywords": ["bell", "the bell"]}
        ok(client.post(f"/api/adventures/{aid}/cards", json=card | {"notes": "rings"}), 201)
        cards = ok(client.get(f"/api/adventures/{aid}/cards"))
        ok(client.patch(f"/api/cards/{cards[0]['id']}", json={"entry": "Rebuilt twice."}))
        ok(client.delete(f"/api/cards/{cards[1]['id']}"))
        patch = {"authors_note": "Keep it short.", "memory_bank": False}
        ok(client.patch(f"/api/adventures/{aid}", json=patch | {"persona": {"name": "Tam"}}))
        runtime = client.app.state.runtime  # type: ignore[attr-defined]
        client.portal.call(runtime.memory.idle)  # no background run may change it after this
        add_memory_state(runtime.sessions, aid)
        ok(client.patch(f"/api/adventures/{aid}", json={"story_summary": PLAYERS_SUMMARY}))
        client.portal.call(runtime.memory.idle)
        with session_scope(runtime.sessions) as session:
            assert not runtime.background.pending(session, Subject.adventure(aid))  # all done
        return int(aid)


PLAYERS_SUMMARY = "Tamsin is looking for Keeper Vane; the bell answers her."


def add_memory_state(sessions: sessionmaker[Session], aid: int) -> None:
    """Memories in every status (pinned, stale, used by two replies, one with a vector, one
    the player wrote), automatic Story Summary versions linked by base and refresh, and the
    player's Scene. Rows that need many turns to arise are written directly; every change
    after that goes through the services that make it in play."""
    with session_scope(sessions) as session:
        adventure = session.get(Adventure, aid)
        assert adventure is not None
        repo = StoryRepository(session)
        main, sea = repo.branches(aid)
        actions = list(repo.all_actions(aid))
        path = [a for a in actions if a.branch_id == main.id and a.state == "active"]
        path = [a for a in path if a.depth < sea.fork_depth]  # also the fork's path
        replies = [a for a in actions if a.type == "narration" and a.state == "active"]
        undone = next(a for a in actions if a.state == "undone")
        assert len(path) >= 3 and len(replies) >= 2

        def memory(node: Action, text: str, start: int, **extra: Any) -> Memory:
            fields: dict[str, Any] = {
                "adventure_id": aid,
                "branch_id": node.branch_id,
                "depth": node.depth,
                "action_id": node.id,
                "source_start": start,
                "source_end": node.depth,
                "text": text,
                "authority": classify(text),
                "origin": "auto",
                "writer": "double-summary",
                "terms": " ".join(sorted(term_set(text))),
                "revision": MemoryRepository(session).next_revision(aid),
            }
            row = Memory(**(fields | extra))
            session.add(row)
            session.flush()
            return row

        pinned = memory(path[2], "Tamsin Reed asked where Keeper Vane was.", 0)
        forgotten = memory(path[1], "The bell perhaps rang for the drowned.", 0, stale=True)
        withdrawn = memory(undone, "Tamsin rang the bell and waited.", undone.depth - 1)
        deleted = memory(path[2], "The fog thinned over the harbour.", 1, writer="extractive")
        set_pinned(session, pinned, True, None)
        set_vector(session, pinned, [0.6, 0.8], "double-embed", None)  # never exported
        set_status(session, [forgotten], "forgotten", None)
        set_status(session, [withdrawn], "withdrawn", None)
        set_status(session, [deleted], "deleted", None)
        uses = MemoryRepository(session)
        uses.record_use([pinned.id, forgotten.id], replies[0].id, utcnow())
        uses.record_use([pinned.id], replies[1].id, utcnow())
        player = Memory(
            adventure_id=aid,
            branch_id=sea.id,
            depth=sea.fork_depth - 1,
            text="Maren never lies about the sea.",
            authority="accepted_story",
            origin="user",
            writer="player",
            terms=" ".join(sorted(term_set("Maren never lies about the sea."))),
            revision=uses.next_revision(aid),
        )
        session.add(player)

        def version(node: Action, text: str, **extra: Any) -> SummaryVersion:
            row = SummaryVersion(
                adventure_id=aid,
                branch_id=node.branch_id,
                depth=node.depth,
                action_id=node.id,
                covers_to=node.depth,
                text=text,
                trigger="interval",
                writer="double-summary",
                **extra,
            )
            session.add(row)
            session.flush()
            return row

        first = version(path[1], "Tamsin came to the harbour.")
        stale = version(path[2], "Tamsin asked for the keeper.", base_id=first.id, stale=True)
        version(path[2], "Tamsin asked for Keeper Vane.", base_id=first.id, refreshes_id=stale.id)
        set_scene(adventure, {"location": "The Great Lantern", "present": ["Old Maren"]})


class Library:
    """One data directory holding the rich adventure and its export, shared by the export and
    import tests (each builds on it without changing it)."""

    def __init__(self, cli: Cli) -> None:
        self.cli = cli
        self.adventure = build_rich_adventure(cli)
        self.text, self.exported = cli.export(self.adventure)

    def write(self, name: str, content: bytes | dict[str, Any]) -> Path:
        path = self.cli.data.parent / name
        data = json.dumps(content).encode() if isinstance(content, dict) else content
        path.write_bytes(data)
        return path


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    with ModelDouble() as double:
        yield Library(Cli(tmp_path_factory.mktemp("library") / "data", double))


def test_export_then_import_keeps_everything_and_the_copy_plays_on(library: Library) -> None:
    cli, exported = library.cli, library.exported
    states = {(a["branch"], a["state"]) for a in exported["actions"]}
    assert states >= {(1, "active"), (1, "take"), (1, "undone"), (1, "removed"), (2, "take")}
    assert exported["adventure"]["current_branch"] == 2
    assert [b["name"] for b in exported["branches"]] == ["Main", "Sea road"]
    assert any(a["edited_at"] for a in exported["actions"])
    assert any(c["name"] == "The Bell" for c in exported["cards"]) and exported["insights"]
    assert exported["adventure"]["memory_bank"] is False
    assert exported["version"] == 4 and "story_summary" not in exported["adventure"]
    # The world travels: its events on every branch and take, each naming its entities.
    events = exported["world_events"]
    assert events and {e["origin"] for e in events} >= {"rules"}
    named = {k for e in events for k in (e["subject"], e["object"], e["target"]) if k}
    assert named == {e["key"] for e in exported["world_entities"]}
    assert exported["adventure"]["scene"] == {
        "location": "The Great Lantern",
        "present": ["Old Maren"],
        "summary": "",
        "by_player": True,
    }
    memories = exported["memories"]
    assert [m["status"] for m in memories] == ["active", "forgotten", "withdrawn", "deleted"] + [
        "active"
    ]
    assert [m["key"] for m in memories] == [1, 2, 3, 4, 5]
    assert [(m["pinned"], m["stale"], m["origin"]) for m in memories] == [
        (True, False, "auto"),
        (False, True, "auto"),
        (False, False, "auto"),
        (False, False, "auto"),
        (False, False, "user"),
    ]
    replies = [a["key"] for a in exported["actions"] if a["type"] == "narration"]
    assert len(memories[0]["used_by"]) == 2 and set(memories[0]["used_by"]) <= set(replies)
    assert memories[0]["use_count"] == 2 and memories[0]["last_used_at"]
    assert memories[1]["authority"] == "heuristic" and memories[4]["action"] is None
    assert all("vector" not in m and "terms" not in m for m in memories)
    summaries = exported["summaries"]
    assert [(v["key"], v["trigger"], v["base"], v["refreshes"], v["stale"]) for v in summaries] == [
        (1, "interval", None, None, False),
        (2, "interval", 1, None, True),
        (3, "interval", 1, 2, False),
        (4, "user", 3, None, False),
    ]
    assert summaries[3]["text"] == PLAYERS_SUMMARY and summaries[3]["action"] is None

    imported = cli.run("import", str(library.write("adventure.json", library.text.encode())))
    assert imported.returncode == 0 and imported.stderr == "", imported.stderr
    assert re.fullmatch(r"\d+\n", imported.stdout)
    copy_id = int(imported.stdout)
    assert copy_id != library.adventure
    text, reexported = cli.export(copy_id)
    assert reexported == exported  # full fidelity: the file we wrote comes back unchanged
    assert text == library.text

    # The copy is a live adventure: a turn lands after the head of its current branch.
    fork_head = max(a["depth"] for a in exported["actions"] if a["branch"] == 2)
    cli.double.script("The Choir falls silent at last.")
    played = cli.run("play", str(copy_id), stdin="sing back to them\n/quit\n")
    assert played.returncode == 0, played.stderr
    assert f"(adventure {copy_id})" in played.stdout
    assert "The Choir falls silent at last." in played.stdout
    with api(cli) as client:
        after = client.get(f"/api/adventures/{copy_id}/export").json()
        state = client.get(f"/api/adventures/{copy_id}").json()
        tree = client.get(f"/api/adventures/{copy_id}/tree").json()
        untouched = client.get(f"/api/adventures/{library.adventure}/export").json()
    assert after["actions"][:-2] == exported["actions"]
    assert [(a["branch"], a["depth"], a["type"], a["text"]) for a in after["actions"][-2:]] == [
        (2, fork_head + 1, "do", "sing back to them"),
        (2, fork_head + 2, "narration", "The Choir falls silent at last."),
    ]
    assert {a["state"] for a in after["actions"][-2:]} == {"active"}
    assert after["adventure"]["current_branch"] == 2
    assert after["adventure"]["updated_at"] > exported["adventure"]["updated_at"]
    assert untouched == exported  # the original did not move
    assert state["head"]["text"] == "The Choir falls silent at last."
    assert state["story_summary"] == PLAYERS_SUMMARY  # the copy's versions are in force
    # Playing on ran the background work the import queued: the stale memory was written
    # again from its source block; everything else came through unchanged.
    refreshed = [
        (a, b) for a, b in zip(after["memories"], exported["memories"], strict=True) if a != b
    ]
    assert [(b["stale"], a["stale"]) for a, b in refreshed] == [(True, False)]
    assert refreshed[0][0]["text"] != refreshed[0][1]["text"]
    assert after["summaries"] == exported["summaries"]
    current = next(b for b in tree["branches"] if b["current"])
    assert current["name"] == "Sea road" and current["head_action_id"] == state["head"]["id"]
    assert state["head"]["branch_id"] == current["id"] != 2  # a new id, the same branch


def test_a_bad_file_is_refused_in_one_line_and_nothing_is_imported(library: Library) -> None:
    cli = library.cli
    broken = copy.deepcopy(library.exported)
    last = len(broken["actions"]) - 1
    broken["actions"][last]["branch"] = 99  # a branch the file does not have
    paths = [
        library.write("not-json.json", b"this is not JSON {"),
        library.write("deep.json", b"[" * 200_000 + b"]" * 200_000),
        library.write("other.json", {"format": "someone-else", "version": 1}),
        library.write("corrupted.json", broken),
        cli.data.parent / "missing.json",
    ]
    before = cli.counts()
    results = cli.run_all(
        [["import", str(path)] for path in paths]
        + [["export", "424242"], ["play", "99999999999999999999999"]]
    )
    too_large = results.pop()
    assert too_large.returncode == 2 and "is not an adventure id" in too_large.stderr
    assert [done.returncode for done in results] == [1] * len(results)
    not_json, deep, other, corrupt, missing, unknown = map(one_line_error, results)
    assert "not-json.json is not a JSON file" in not_json
    assert "deep.json nests its values too deeply" in deep
    assert "not a Talekeeper adventure export" in other
    assert f"file.actions[{last}].branch names no branch" in corrupt
    assert "Cannot read" in missing and "No such file" in missing
    assert "no adventure 424242" in unknown
    assert cli.counts() == before  # nothing half-imported: the whole file, or nothing


# Files that pass the shape checks but break a rule of the tree or of the database; each must
# be refused with one line, and nothing imported. Each damages the rich adventure's export.
DAMAGE: dict[str, Callable[[dict[str, Any]], None]] = {
    "two-insights-for-one-action": lambda f: f["insights"].append(f["insights"][0]),
    "depth-beyond-64-bits": lambda f: f["actions"][-1].update(depth=2**63),
    "time-beyond-year-9999-in-utc": lambda f: f["actions"][-1].update(
        created_at="9999-12-31T23:00:00-05:00"
    ),
    "a-take-number-twice-in-a-slot": lambda f: f["actions"].append(
        {**next(a for a in f["actions"] if a["state"] == "take"), "key": 10_000}
    ),
    "a-card-name-that-is-not-text": lambda f: f["cards"][0].update(name={"a": 1}),
    "one-reply-using-a-memory-twice": lambda f: f["memories"][0]["used_by"].append(
        f["memories"][0]["used_by"][0]
    ),
    "a-summary-refreshing-itself": lambda f: f["summaries"][2].update(refreshes=3),
    "a-memory-key-twice": lambda f: f["memories"][1].update(key=1),
}


@pytest.fixture(scope="module")
def damaged_imports(library: Library) -> dict[str, tuple[subprocess.CompletedProcess[str], bool]]:
    """Each damaged file imported (all at once): the result, and whether the database was left
    as it was."""
    paths = []
    for name, damage in DAMAGE.items():
        exported = copy.deepcopy(library.exported)
        damage(exported)
        paths.append(library.write(f"{name}.json", exported))
    before = library.cli.counts()
    results = library.cli.run_all([["import", str(path)] for path in paths], traceback_ok=True)
    unchanged = library.cli.counts() == before
    return {name: (done, unchanged) for name, done in zip(DAMAGE, results, strict=True)}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_import_refuses_what_the_database_cannot_hold(
    damaged_imports: dict[str, tuple[subprocess.CompletedProcess[str], bool]], name: str
) -> None:
    done, unchanged = damaged_imports[name]
    assert unchanged
    assert "Traceback" not in done.stderr
    message = one_line_error(done)
    assert "Not a valid Talekeeper export" in message or "'name' must be text" in message


# -- the memory in the terminal ---------------------------------------------------------------


def test_the_terminal_shows_the_memories_and_the_summary(cli: Cli) -> None:
    adventure = cli.new("lantern-coast")
    cli.double.script(*[f"Old Maren hands you lamp-key number {n}." for n in range(8)])
    turns = [f"walk to pier {n}" for n in range(7)]  # 15 actions: two memories and a summary
    lines = [
        "/memories",
        *turns,
        "/memories",
        "/remember Pip owes Tamsin a favour.",
        "/summary",
        "/summary Tamsin holds the keys of Gullreach.",
        "/quit",
    ]
    played = cli.run("play", str(adventure), stdin="".join(line + "\n" for line in lines))
    assert played.returncode == 0 and played.stderr == "", played.stderr
    out = played.stdout
    assert "(no memories yet: the first is written after 12 actions)" in out
    memories = re.findall(r"  #(\d+) \((\d+)-(\d+), used \d+x\)[^:]*: (.+)", out)
    assert [(int(s), int(e)) for _, s, e, _ in memories] == [(0, 5), (6, 11)]
    assert re.search(r"\(remembered as #\d+\)", out)
    assert "Story Summary, 1 versions:" in out and "Story Summary, 2 versions:" in out
    assert "  Tamsin holds the keys of Gullreach." in out
