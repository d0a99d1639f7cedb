"""The story tree: the current path, takes, undo/redo, edit, delete, fork, branches.

Invariants:

- Every action has a branch and a depth. A depth is a stable coordinate: it
  never changes once written (memories record source ranges as depths), so a
  deleted action leaves its depth unused rather than renumbering the story.
- The path of the current branch is its lineage (``core.lineage``): one clause
  over (branch, depth), never a walk over the actions.
- A new action goes to ``max(head + 1, branch.fork_depth)`` on the current
  branch, and first forgets that branch's redo stack (undone rows and their
  takes past the head).
- Retry and take switching touch only the newest action (the head); undo
  removes the head and redo restores the shallowest undone row of the branch.
  A retry, a take switch or a delete of the head forgets the redo stack: what
  was undone continued a head that is no longer there.
- A slot another branch inherits (a child forked at or after it) is frozen:
  undo, retry, take switching and delete there are refused, because they would
  silently change that other branch's past. Edit is allowed: the text is the
  shared past of both branches.
- Every change is reported to the memory service in the same transaction
  (``StoryChange``), so derived work can follow it.
- Caps (``services.common.limits``): a fork is refused at ``MAX_BRANCHES`` branches, and
  every new action row (an action, a reply, a retry's take) at ``MAX_ACTIONS``
  rows of every state. A player's action needs room for its reply too, and a
  retry is refused before its model call, so no reply is generated that could
  not be saved. The count is ``adventures.action_rows``, kept with each row
  written (counted once from the rows when it is unknown: an imported
  adventure), so the check costs a turn no query.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from talekeeper.core.clock import utcnow
from talekeeper.core.errors import Conflict, InvalidInput, NotFound
from talekeeper.core.lineage import (
    BranchLink,
    Lineage,
    Tip,
    branch_heads,
    inherited_limit,
    lineage_of,
)
from talekeeper.services.common import limits
from talekeeper.services.common.rendering import NARRATION, is_player
from talekeeper.services.memory.base import MemoryService, StoryChange
from talekeeper.services.story import feed, sharing
from talekeeper.services.story.access import load_adventure
from talekeeper.services.story.view import (
    ActionView,
    Author,
    BranchView,
    LineageStep,
    StoryPage,
    StoryState,
    TreeView,
)
from talekeeper.storage.models import Action, Adventure, Branch
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.vocabulary import ActionState, FeedKind, MemberRole


def action_adventure(session: Session, action_id: int) -> int | None:
    """The adventure the action belongs to, whoever's it is (the caller checks the owner,
    through ``Story.load``); None when there is no such action."""
    row = StoryRepository(session).action(action_id)
    return None if row is None else row.adventure_id


@dataclass
class Story:
    """One adventure's tree, read in the caller's session. Never commits."""

    session: Session
    repo: StoryRepository
    adventure: Adventure
    branches: dict[int, Branch]
    memory: MemoryService

    @classmethod
    def load(
        cls,
        session: Session,
        adventure_id: int,
        user_id: int,
        memory: MemoryService,
        need: MemberRole = MemberRole.COHOST,
    ) -> Story:
        adventure = load_adventure(session, adventure_id, user_id, need)
        repo = StoryRepository(session)
        branches = {b.id: b for b in repo.branches(adventure.id)}
        if adventure.current_branch_id not in branches:
            raise Conflict(f"Adventure {adventure_id} has no current branch; re-import it.")
        return cls(session, repo, adventure, branches, memory)

    # -- reading ------------------------------------------------------------------------

    @property
    def branch(self) -> Branch:
        assert self.adventure.current_branch_id is not None
        return self.branches[self.adventure.current_branch_id]

    def links(self) -> dict[int, BranchLink]:
        return {b.id: BranchLink(b.id, b.parent_id, b.fork_depth) for b in self.branches.values()}

    def lineage(self, branch_id: int | None = None) -> Lineage:
        return lineage_of(self.links(), branch_id or self.branch.id)

    def head(self, branch_id: int | None = None) -> Action | None:
        return self.repo.head(self.lineage(branch_id))

    def head_and_redo(self, branch_id: int) -> tuple[Action | None, bool]:
        """The branch's head and whether it has a redo stack, in one query when the branch
        has its own newest action (the common case): undone rows always lie deeper than
        the head, so if the branch's deepest live row is active, nothing is undone."""
        top = self.repo.newest_live(branch_id)
        if top is not None and top.state == ActionState.ACTIVE:
            return top, False
        return self.head(branch_id), top is not None

    def action(self, action_id: int) -> Action:
        row = self.repo.action(action_id)
        if row is None or row.adventure_id != self.adventure.id or row.state == ActionState.REMOVED:
            raise NotFound(f"There is no action {action_id} in adventure {self.adventure.id}.")
        return row

    def takes(self) -> list[Action]:
        head = self.head()
        return self.repo.slot(head.branch_id, head.depth) if head else []

    def head_view(self) -> ActionView | None:
        """The newest action as clients see it, with how many takes its slot has."""
        head = self.head()
        if head is None:
            return None
        return ActionView.of(head, takes=len(self.repo.slot(head.branch_id, head.depth)))

    def state(self) -> StoryState:
        """Where the player stands (``StoryState``)."""
        return StoryState(
            head=self.head_view(),
            can_redo=self.repo.next_undone(self.branch.id) is not None,
            branch_id=self.branch.id,
        )

    def page(self, limit: int, before_depth: int | None) -> StoryPage:
        """The current path, a page at a time: the newest ``limit`` actions (above
        ``before_depth`` when given), oldest first; the newest of all carries its takes."""
        rows = self.repo.newest(self.lineage(), limit + 1, below_depth=before_depth)
        more = len(rows) > limit
        rows = rows[:limit][::-1]
        with_insights = {s.action_id for s in self.repo.insights_for([r.id for r in rows])}
        cast = sharing.cast(self.session, self.adventure)
        actions = [
            replace(
                ActionView.of(r, speaker=cast.speaker(r.author_name) if cast else None),
                has_insights=r.id in with_insights,
            )
            for r in rows
        ]
        head = self.head_view()
        if head is not None and actions and actions[-1].id == head.id:
            actions[-1] = actions[-1].with_takes(head.takes)
        return StoryPage(actions, more, self.branch.id)

    def touch(self) -> None:
        self.adventure.updated_at = utcnow()

    # -- writing ------------------------------------------------------------------------

    def append(
        self,
        type_: str,
        text: str,
        branch_id: int | None = None,
        *,
        known: tuple[Action | None, bool] | None = None,
        touch: bool = True,
        author: Author | None = None,
    ) -> Action:
        """A new active row at the next depth of the branch (the current one unless given);
        that branch's redo stack is forgotten. ``known``: ``head_and_redo`` of the branch,
        when the caller has just read it."""
        rows = self.make_room(2 if is_player(type_) else 1)  # a player's action: and its reply
        branch = self.branches[branch_id or self.branch.id]
        head, has_redo = known or self.head_and_redo(branch.id)
        depth = max(head.depth + 1 if head else 0, branch.fork_depth)
        if has_redo:
            self.repo.discard_beyond(branch.id, depth - 1)
        row = Action(
            adventure_id=self.adventure.id,
            branch_id=branch.id,
            depth=depth,
            type=type_,
            text=text,
            state=ActionState.ACTIVE,
            take=1,
            author_id=author.user_id if author else None,
            author_name=author.persona_name if author else None,
        )
        self.repo.add(row)
        self._counted(rows)
        if touch:
            self.touch()
        self._changed("append" if is_player(type_) else "reply", row)
        return row

    def add_take(self, replaced: Action, text: str) -> Action:
        """A new take of ``replaced``'s slot becomes active; ``replaced`` becomes a take."""
        rows = self.make_room(1)
        takes = self.repo.slot(replaced.branch_id, replaced.depth)
        self.repo.discard_beyond(replaced.branch_id, replaced.depth)
        replaced.state = ActionState.TAKE
        self.session.flush()  # the old take leaves the active slot before the new one enters
        row = Action(
            adventure_id=self.adventure.id,
            branch_id=replaced.branch_id,
            depth=replaced.depth,
            type=NARRATION,
            text=text,
            state=ActionState.ACTIVE,
            take=max(t.take for t in takes) + 1,
        )
        self.repo.add(row)
        self._counted(rows)
        self.touch()
        self._changed("retry", row, replaced.id)
        return row

    def check_retry(self) -> Action | None:
        """What a retry replaces: the head narration (``None`` if the head is a player action
        still waiting for its reply). Refused when there is nothing to retry."""
        head = self.head()
        if head is None:
            raise Conflict("There is nothing to retry yet: write an action first.")
        self.make_room(1)
        if head.type != NARRATION:
            return None
        self._own_and_free(head, "retry")
        return head

    def switch_take(self, take: int) -> Action:
        head = self.head()
        if head is None or head.type != NARRATION:
            raise Conflict("Only the newest narration has takes; it is not the newest action.")
        self._own_and_free(head, "switch takes of")
        slot = self.repo.slot(head.branch_id, head.depth)
        chosen = next((row for row in slot if row.take == take), None)
        if chosen is None:
            raise InvalidInput(
                f"take must be one of {', '.join(str(r.take) for r in slot)}; got {take}."
            )
        if chosen.id != head.id:
            self.repo.discard_beyond(head.branch_id, head.depth)
            head.state = ActionState.TAKE
            self.session.flush()
            chosen.state = ActionState.ACTIVE
            self.session.flush()
            self.touch()
            self._changed("switch_take", chosen, head.id)
        return chosen

    def undo(self) -> Action:
        head = self.head()
        if head is None:
            raise Conflict("There is nothing to undo: the story is empty.")
        self._own_and_free(head, "undo")
        head.state = ActionState.UNDONE
        self.session.flush()
        self.touch()
        self._changed("undo", head)
        return head

    def redo(self) -> Action:
        row = self.repo.next_undone(self.branch.id)
        if row is None:
            raise Conflict("There is nothing to redo.")
        row.state = ActionState.ACTIVE
        self.session.flush()
        self.touch()
        self._changed("redo", row)
        return row

    def edit(self, action_id: int, text: str) -> Action:
        row = self.action(action_id)
        if row.state not in (ActionState.ACTIVE, ActionState.TAKE):
            raise Conflict(f"Action {action_id} was undone; redo it before editing it.")
        limit = limits.NARRATION_MAX if row.type == NARRATION else limits.ACTION_MAX
        row.text = limits.text_field(text, "text", limit, required=True)
        row.edited_at = utcnow()
        self.session.flush()
        self.touch()
        self._changed("edit", row)
        return row

    def delete(self, action_id: int) -> list[Action]:
        """Remove an action (an active one with its other takes; a take alone)."""
        row = self.action(action_id)
        if row.state == ActionState.UNDONE:
            raise Conflict(f"Action {action_id} was undone; it is already out of the story.")
        removed = [row]
        if row.state == ActionState.ACTIVE:
            self._free(row, "delete")
            head = self.head(row.branch_id)
            if head is not None and head.id == row.id:
                self.repo.discard_beyond(row.branch_id, row.depth)
            removed = self.repo.slot(row.branch_id, row.depth)
        for item in removed:
            item.state = ActionState.REMOVED
        self.session.flush()
        self.touch()
        self._changed("delete", row, *(r.id for r in removed if r.id != row.id))
        return removed

    def fork(self, action_id: int, name: str = "") -> Branch:
        """A new branch whose path is the path up to and including ``action_id``."""
        row = self.action(action_id)
        if row.state != ActionState.ACTIVE:
            raise Conflict(
                f"Action {action_id} is not in the story (it is a {row.state} take): "
                "switch to it first, then fork."
            )
        name = limits.text_field(name, "name", limits.BRANCH_NAME_MAX)
        if len(self.branches) >= limits.MAX_BRANCHES:
            raise Conflict(
                f"Adventure {self.adventure.id} has {len(self.branches):,} branches, the most "
                f"one adventure may hold ({limits.MAX_BRANCHES:,}): go on in a branch it has "
                "(switch to it) instead of forking, or start a new adventure for this line.",
                code="limit_reached",
            )
        branch = Branch(
            adventure_id=self.adventure.id,
            parent_id=row.branch_id,
            fork_depth=row.depth + 1,
            forked_from_action_id=row.id,
            name=name or f"Branch {len(self.branches) + 1}",
        )
        self.repo.add(branch)
        self.branches[branch.id] = branch
        self.adventure.current_branch_id = branch.id
        self.touch()
        self._changed("fork", row)
        return branch

    def switch_branch(self, branch_id: int) -> Branch:
        if branch_id not in self.branches:
            raise NotFound(f"There is no branch {branch_id} in adventure {self.adventure.id}.")
        self.adventure.current_branch_id = branch_id
        self.touch()
        return self.branches[branch_id]

    # -- the tree -------------------------------------------------------------------------

    def tree(self) -> TreeView:
        """Every branch with its head, in a constant number of queries (``branch_tips``)."""
        tips = {tip.branch_id: tip for tip in self.repo.branch_tips(self.adventure.id)}
        heads = branch_heads(
            self.links(),
            {b: own for b, t in tips.items() if (own := t.own) is not None},
            {b: base for b, t in tips.items() if (base := t.base) is not None},
            self._inherited_head,
        )
        branches = []
        for branch in self.branches.values():
            tip = tips.get(branch.id)
            count = tip.own_count if tip else 0
            current = branch.id == self.branch.id
            branches.append(BranchView.of(branch, count, heads.get(branch.id), current))
        return TreeView(
            adventure_id=self.adventure.id,
            current_branch_id=self.branch.id,
            lineage=[LineageStep(b, m) for b, m in self.lineage()],
            branches=branches,
        )

    def _inherited_head(self, branch_id: int) -> Tip | None:
        head = self.repo.head(self.lineage(branch_id)[1:])
        return (head.id, head.depth) if head else None

    # -- rules ----------------------------------------------------------------------------

    def make_room(self, rows: int) -> int:
        """Refuse, before anything is written or generated, a change that would bring the
        adventure past ``MAX_ACTIONS`` action rows (``rows``: how many it will write).
        Returns the rows it has now. Writes nothing (a retry checks in a read unit)."""
        count = self.adventure.action_rows
        if count is None:  # an adventure written without the count (an import): count once
            count = self.repo.count_actions(self.adventure.id)
        if count + rows > limits.MAX_ACTIONS:
            raise Conflict(
                f"Adventure {self.adventure.id} holds {count:,} actions (takes, undone and "
                f"deleted ones included), and one adventure may hold at most "
                f"{limits.MAX_ACTIONS:,}: start a new adventure to go on with this story "
                "(export this one first to keep it whole).",
                code="limit_reached",
            )
        return count

    def _counted(self, before: int) -> None:
        # Stored in the change's own transaction. SQLite has one writer at a time, and a
        # transaction cannot commit a count it read before another's commit, so no row
        # goes uncounted.
        self.adventure.action_rows = before + 1

    def _own_and_free(self, row: Action, verb: str) -> None:
        if row.branch_id != self.branch.id:
            raise Conflict(
                f"The newest action belongs to the branch this one was forked from, so this "
                f"branch cannot {verb} it: write a new action here, or switch to that branch."
            )
        self._free(row, verb)

    def _free(self, row: Action, verb: str) -> None:
        if row.depth <= inherited_limit(self.links(), row.branch_id):
            raise Conflict(
                f"Action {row.id} is part of the past of another branch forked from it; "
                f"you cannot {verb} it without changing that branch. Fork, or edit its text."
            )

    def _changed(self, kind: Any, row: Action, *others: int) -> None:
        feed.tell(
            self.session,
            self.adventure.id,
            FeedKind(kind),
            action_ids=[row.id, *others],
            branch_id=row.branch_id,
            depth=row.depth,
        )
        self.memory.story_changed(
            self.session,
            StoryChange(
                kind=kind,
                adventure_id=self.adventure.id,
                branch_id=row.branch_id,
                action_ids=(row.id, *others),
                depth=row.depth,
            ),
        )
