"""The story tree's operations for the property machines (``tests/services/world``): one
random operation on a ``Story`` as production runs it, by name, with the text it writes.

``tree_op`` returns the action it wrote or rewrote (a turn, a retry's take, an edit), so
a caller that derives from writes (the world's rules) can read it; None for the rest and
for an operation that does not apply (a retry with no reply at the head). The tree's own
refusals (``Conflict``, ``InvalidInput``) are the caller's to catch.
"""

from __future__ import annotations

from talekeeper.services.story.tree import Story
from talekeeper.storage.models import Action

TREE_OPS = ("retry", "switch", "undo", "redo", "edit", "delete", "fork", "branch")


def tree_op(story: Story, op: str, pick: int, text: str, kind: str = "do") -> Action | None:
    """Do ``op`` (a turn: "do" or "reply"; else one of ``TREE_OPS``); ``pick`` chooses the
    take, the action or the branch; ``kind``: the type a "do" writes."""
    head = story.head()
    if op in ("do", "reply"):
        return story.append(kind if op == "do" else "narration", text)
    if op == "retry" and head is not None and head.type == "narration":
        return story.add_take(head, text)
    if op == "switch" and head is not None and head.type == "narration":
        takes = story.repo.slot(head.branch_id, head.depth)
        story.switch_take(takes[pick % len(takes)].take)
    elif op == "undo":
        story.undo()
    elif op == "redo":
        story.redo()
    elif op in ("edit", "delete", "fork") and head is not None:
        path = story.repo.path(story.lineage())
        target = path[pick % len(path)]
        if op == "edit":
            return story.edit(target.id, text)
        if op == "delete":
            story.delete(target.id)
        else:
            story.fork(target.id)
    elif op == "branch":
        story.switch_branch(sorted(story.branches)[pick % len(story.branches)])
    return None
