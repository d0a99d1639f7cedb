"""What the story routes answer: actions, where the player stands, the branch tree.

Read from ``services.story.view``'s dataclasses. A key that an action carries only in
some answers (``takes`` on the head, ``has_insights`` on a page of the story) is left
out where it is unknown, as it always was, rather than written as null.
"""

from __future__ import annotations

from collections.abc import Mapping

from talekeeper.services.common.vocabulary import ActionState
from talekeeper.services.prompt.insights import Snapshot
from talekeeper.services.story.view import ActionView
from talekeeper.web.schemas.common import Out, Timestamp, sometimes


class ActionTextOut(Out):
    """An action as the story shows it (``ActionText``)."""

    id: int
    type: str
    text: str
    rendered: str
    depth: int
    branch_id: int


class AuthorOut(Out):
    """Who wrote a player's action, and as whom (docs/sharing.md)."""

    user_id: int
    persona_name: str


class ActionOut(ActionTextOut):
    take: int
    state: ActionState
    created_at: Timestamp
    edited_at: Timestamp | None
    takes: int | None = sometimes()
    has_insights: bool | None = sometimes()
    author: AuthorOut | None = sometimes()  # a player's action written through the API


class StateOut(Out):
    head: ActionOut | None
    awaiting_reply: bool
    can_redo: bool
    branch_id: int


class StoryPageOut(Out):
    actions: list[ActionOut]
    more_before: bool
    branch_id: int


class TakesOut(Out):
    takes: list[ActionOut]


class UndoneOut(StateOut):
    undone: ActionOut


class RedoneOut(StateOut):
    redone: ActionOut


class DeletedOut(StateOut):
    deleted: list[int]


class BranchRef(Out):
    id: int
    name: str


class ForkedOut(StateOut):
    branch: BranchRef


class BranchOut(Out):
    id: int
    name: str
    parent_id: int | None
    fork_depth: int
    forked_from_action_id: int | None
    own_actions: int
    head_action_id: int | None
    head_depth: int | None
    current: bool
    created_at: Timestamp


class LineageStepOut(Out):
    branch_id: int
    max_depth: int | None


class TreeOut(Out):
    adventure_id: int
    current_branch_id: int
    lineage: list[LineageStepOut]
    branches: list[BranchOut]


class TurnOut(Out):
    """A turn answered as JSON: the player's saved action (null for a continue or a retry),
    the reply, and the reply's Insights as stored (only the keys that apply)."""

    action: ActionOut | None
    reply: ActionOut
    insights: Snapshot


def event_json(data: Mapping[str, object]) -> dict[str, object]:
    """A turn event's data as JSON values: each action in it as ``ActionOut`` writes it."""
    return {
        key: ActionOut.model_validate(value).model_dump(mode="json")
        if isinstance(value, ActionView)
        else value
        for key, value in data.items()
    }
