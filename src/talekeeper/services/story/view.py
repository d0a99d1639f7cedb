"""The story as clients see it: an action, where the player stands, the branch tree.

These are the story engine's typed results; the JSON API's models
(``web/schemas/story.py``) are read from them by attribute, so a field shown to clients
is declared here once and named again only by the contract that shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from talekeeper.services.common.rendering import NARRATION, render
from talekeeper.storage.models import Action, Branch
from talekeeper.storage.vocabulary import ActionState


@dataclass(frozen=True)
class ActionText:
    """An action as the story shows it: where it is, what it says and how it reads (a
    memory's source block lists its actions so)."""

    id: int
    type: str
    text: str
    rendered: str
    depth: int
    branch_id: int

    @classmethod
    def of_text(cls, id: int, type: str, text: str, depth: int, branch_id: int) -> ActionText:
        return cls(id, type, text, render(type, text), depth, branch_id)


@dataclass(frozen=True)
class Persona:
    """Who a player is in a story: the adventure's, or a member's of a shared one."""

    name: str
    pronouns: str
    description: str


@dataclass(frozen=True)
class Author:
    """Who wrote a player's action, and as whom (docs/sharing.md)."""

    user_id: int
    persona_name: str


@dataclass(frozen=True)
class ActionView(ActionText):
    """One action. ``takes`` (how many takes its slot has) is known only for the head, and
    ``has_insights`` only on a page of the story; each is None elsewhere."""

    take: int
    state: ActionState
    created_at: datetime
    edited_at: datetime | None
    takes: int | None = None
    has_insights: bool | None = None
    author: Author | None = None  # a player's action written through the API

    @classmethod
    def of(cls, row: Action, *, takes: int | None = None, speaker: str | None = None) -> ActionView:
        """``speaker``: whom a player's action reads of, in a shared adventure several play
        (``rendering``); None: the second person."""
        return cls(
            id=row.id,
            type=row.type,
            text=row.text,
            rendered=render(row.type, row.text, speaker),
            depth=row.depth,
            branch_id=row.branch_id,
            take=row.take,
            state=ActionState(row.state),
            created_at=row.created_at,
            edited_at=row.edited_at,
            takes=takes,
            author=None if row.author_id is None else Author(row.author_id, row.author_name or ""),
        )

    def with_takes(self, takes: int | None) -> ActionView:
        return replace(self, takes=takes)


@dataclass(frozen=True)
class StoryState:
    """Where the player stands: the head, whether it still waits for a reply (the narrator
    failed or the app stopped mid-reply), whether redo can restore something."""

    head: ActionView | None
    can_redo: bool
    branch_id: int

    @property
    def awaiting_reply(self) -> bool:
        return self.head is not None and self.head.type != NARRATION


@dataclass(frozen=True)
class StoryPage:
    """A page of the current path, oldest first, and whether older actions remain."""

    actions: list[ActionView]
    more_before: bool
    branch_id: int


@dataclass(frozen=True)
class BranchView:
    id: int
    name: str
    parent_id: int | None
    fork_depth: int
    forked_from_action_id: int | None
    own_actions: int
    head_action_id: int | None
    head_depth: int | None
    current: bool
    created_at: datetime

    @classmethod
    def of(
        cls, branch: Branch, own_actions: int, head: tuple[int, int] | None, current: bool
    ) -> BranchView:
        return cls(
            id=branch.id,
            name=branch.name,
            parent_id=branch.parent_id,
            fork_depth=branch.fork_depth,
            forked_from_action_id=branch.forked_from_action_id,
            own_actions=own_actions,
            head_action_id=head[0] if head else None,
            head_depth=head[1] if head else None,
            current=current,
            created_at=branch.created_at,
        )


@dataclass(frozen=True)
class LineageStep:
    """One branch of the current path and the deepest of its actions the path takes."""

    branch_id: int
    max_depth: int | None  # None: the branch itself, to its head


@dataclass(frozen=True)
class TreeView:
    adventure_id: int
    current_branch_id: int
    lineage: list[LineageStep]
    branches: list[BranchView]
