"""The story tree on a real migrated database: lineage, takes, undo/redo, delete, fork."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.errors import Conflict, InvalidInput, NotFound
from talekeeper.core.lineage import BranchLink, lineage_of, on_lineage
from talekeeper.services.memory.base import NullMemory, StoryChange
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.storage.db import session_scope
from talekeeper.storage.repositories.users import UserRepository


class RecordingMemory(NullMemory):
    def __init__(self) -> None:
        self.changes: list[StoryChange] = []

    def story_changed(self, session: Session, change: StoryChange) -> None:
        self.changes.append(change)


@pytest.fixture
def memory() -> RecordingMemory:
    return RecordingMemory()


def new_story(session: Session, memory: RecordingMemory) -> Story:
    uid = UserRepository(session).local_user().id
    return adventures.create(session, uid, {"title": "T", "opening": "It begins."}, memory)


def texts(story: Story) -> list[str]:
    return [a.text for a in story.repo.path(story.lineage())]


def test_lineage_is_a_short_list_of_branch_and_depth_entries() -> None:
    links = {
        1: BranchLink(1, None, 0),
        2: BranchLink(2, 1, 5),  # forked from depth 4 of branch 1
        3: BranchLink(3, 2, 8),  # forked from depth 7 of branch 2
        4: BranchLink(4, 2, 3),  # forked from depth 2: inside branch 1's part of branch 2
    }
    assert lineage_of(links, 1) == ((1, None),)
    assert lineage_of(links, 3) == ((3, None), (2, 7), (1, 4))
    assert lineage_of(links, 4) == ((4, None), (1, 2))  # branch 2 holds nothing below depth 5
    assert on_lineage(lineage_of(links, 3), 1, 4) and not on_lineage(lineage_of(links, 3), 1, 5)


def test_actions_append_at_increasing_depths(
    sessions: sessionmaker[Session], memory: RecordingMemory
) -> None:
    with session_scope(sessions) as session:
        story = new_story(session, memory)
        a = story.append("do", "look around")
        b = story.append("narration", "You see a door.")
        assert (a.depth, b.depth) == (1, 2)
        assert texts(story) == ["It begins.", "look around", "You see a door."]
        assert [c.kind for c in memory.changes] == ["reply", "append", "reply"]


def test_takes_retry_and_switch_only_on_the_newest_narration(
    sessions: sessionmaker[Session], memory: RecordingMemory
) -> None:
    with session_scope(sessions) as session:
        story = new_story(session, memory)
        story.append("do", "open the door")
        first = story.append("narration", "It creaks.")
        assert story.check_retry() is not None
        second = story.add_take(first, "It is locked.")
        assert (second.take, second.depth) == (2, first.depth)
        assert texts(story)[-1] == "It is locked."
        story.switch_take(1)
        assert texts(story)[-1] == "It creaks."
        with pytest.raises(InvalidInput, match="take must be one of 1, 2"):
            story.switch_take(7)
        story.append("do", "step through")
        with pytest.raises(Conflict, match="newest narration"):
            story.switch_take(2)
        assert story.check_retry() is None  # the head is a player action: retry writes its reply


def test_undo_and_redo_restore_exactly_and_a_new_action_forgets_the_redo_stack(
    sessions: sessionmaker[Session], memory: RecordingMemory
) -> None:
    with session_scope(sessions) as session:
        story = new_story(session, memory)
        story.append("do", "one")
        story.append("narration", "two")
        story.undo()
        story.undo()
        assert texts(story) == ["It begins."]
        story.redo()
        assert texts(story) == ["It begins.", "one"]
        story.append("do", "other")
        with pytest.raises(Conflict, match="nothing to redo"):
            story.redo()
        assert texts(story) == ["It begins.", "one", "other"]
        story.undo()
        story.undo()
        story.undo()
        with pytest.raises(Conflict, match="nothing to undo"):
            story.undo()


def test_delete_leaves_the_depth_unused_and_removes_the_slots_takes(
    sessions: sessionmaker[Session], memory: RecordingMemory
) -> None:
    with session_scope(sessions) as session:
        story = new_story(session, memory)
        story.append("do", "a")
        n = story.append("narration", "b1")
        story.add_take(n, "b2")
        story.append("do", "c")
        middle = story.head()
        assert middle is not None
        deleted = story.delete(story.repo.path(story.lineage())[2].id)
        assert len(deleted) == 2  # the active take and the other one
        assert texts(story) == ["It begins.", "a", "c"]
        assert [a.depth for a in story.repo.path(story.lineage())] == [0, 1, 3]
        with pytest.raises(NotFound):
            story.delete(deleted[0].id)


def test_fork_inherits_the_path_and_freezes_the_shared_slot(
    sessions: sessionmaker[Session], memory: RecordingMemory
) -> None:
    with session_scope(sessions) as session:
        story = new_story(session, memory)
        story.append("do", "a")
        fork_at = story.append("narration", "b")
        story.append("do", "c main")
        main = story.branch.id
        branch = story.fork(fork_at.id, "What if")
        assert story.branch.id == branch.id and branch.fork_depth == fork_at.depth + 1
        assert texts(story) == ["It begins.", "a", "b"]
        with pytest.raises(Conflict, match="belongs to the branch this one was forked from"):
            story.undo()
        story.append("do", "c fork")
        assert texts(story) == ["It begins.", "a", "b", "c fork"]
        story.switch_branch(main)
        assert texts(story) == ["It begins.", "a", "b", "c main"]
        story.undo()  # "c main" is the main branch's own, not shared
        with pytest.raises(Conflict, match="past of another branch"):
            story.undo()  # "b" is the fork's past
        with pytest.raises(Conflict, match="past of another branch"):
            story.delete(fork_at.id)
        edited = story.edit(fork_at.id, "b, rewritten")  # edit changes the shared past
        story.switch_branch(branch.id)
        assert texts(story)[2] == edited.text == "b, rewritten"


def test_fork_of_a_take_that_is_not_in_the_story_is_refused(
    sessions: sessionmaker[Session], memory: RecordingMemory
) -> None:
    with session_scope(sessions) as session:
        story = new_story(session, memory)
        story.append("do", "a")
        old = story.append("narration", "b")
        story.add_take(old, "b2")
        with pytest.raises(Conflict, match="switch to it first"):
            story.fork(old.id)


def test_edit_checks_the_text(sessions: sessionmaker[Session], memory: RecordingMemory) -> None:
    with session_scope(sessions) as session:
        story = new_story(session, memory)
        row = story.append("do", "a")
        with pytest.raises(InvalidInput, match="must not be empty"):
            story.edit(row.id, "   ")
        with pytest.raises(InvalidInput, match="the limit is 8,000"):
            story.edit(row.id, "x" * 8001)
        assert story.edit(row.id, " b ").text == "b"


def test_retry_switching_takes_or_deleting_the_head_forgets_the_redo_stack(
    sessions: sessionmaker[Session], memory: RecordingMemory
) -> None:
    with session_scope(sessions) as session:
        story = new_story(session, memory)
        first = story.append("narration", "n1")
        story.append("narration", "n2")
        story.undo()
        story.add_take(first, "n1 again")  # what was undone continued the old take
        with pytest.raises(Conflict, match="nothing to redo"):
            story.redo()
        story.append("narration", "n3")
        story.undo()
        story.switch_take(1)
        with pytest.raises(Conflict, match="nothing to redo"):
            story.redo()
        story.append("do", "x")
        story.undo()
        head = story.head()
        assert head is not None
        story.delete(head.id)
        with pytest.raises(Conflict, match="nothing to redo"):
            story.redo()
