"""Lineage: the path of a branch as a short list of (branch, deepest depth) entries.

A branch's own actions have depth >= its ``fork_depth``; below that its path is
its parent's path up to ``fork_depth - 1`` (and so on up to the root). So the
path of any branch is a handful of (branch_id, max_depth) entries, newest
branch first, and "is this row on the path" is one clause over (branch, depth)
with no walk over the actions. ``max_depth`` is ``None`` for the branch itself
(no upper bound: its head decides).

Invariant: the entries are ordered deepest first and their depth ranges do not
overlap, so the first entry holding an active row holds the head.

The heads of every branch at once (``branch_heads``) follow from two facts per
branch, its own newest row and its parent's newest row below its fork: a branch
with neither inherits its parent's inherited head, so each branch is resolved
once, linear in the branches however deep they nest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

Lineage = tuple[tuple[int, int | None], ...]
Tip = tuple[int, int]  # an action as (id, depth)


@dataclass(frozen=True)
class BranchLink:
    id: int
    parent_id: int | None
    fork_depth: int


def lineage_of(branches: Mapping[int, BranchLink], branch_id: int) -> Lineage:
    """The (branch_id, max_depth) entries of ``branch_id``'s path, deepest first."""
    out: list[tuple[int, int | None]] = []
    limit: int | None = None
    branch = branches[branch_id]
    seen: set[int] = set()
    while True:
        if branch.id in seen:  # a cycle can only come from a corrupt import; stop, do not hang
            break
        seen.add(branch.id)
        if limit is None or limit >= branch.fork_depth:
            out.append((branch.id, limit))
        if branch.parent_id is None or branch.parent_id not in branches:
            break
        inherited = branch.fork_depth - 1
        limit = inherited if limit is None else min(limit, inherited)
        branch = branches[branch.parent_id]
    return tuple(out)


def owner(branches: Mapping[int, BranchLink], branch_id: int, depth: int) -> int | None:
    """The branch whose own slot at ``depth`` lies on ``branch_id``'s path (None: none)."""
    for held, deepest in lineage_of(branches, branch_id):
        if (deepest is None or depth <= deepest) and depth >= branches[held].fork_depth:
            return held
    return None


def on_lineage(lineage: Lineage, branch_id: int, depth: int) -> bool:
    """Whether the slot (branch_id, depth) lies on the path ``lineage`` describes."""
    return any(b == branch_id and (m is None or depth <= m) for b, m in lineage)


def inherited_limit(branches: Mapping[int, BranchLink], branch_id: int) -> int:
    """The deepest depth of ``branch_id`` that another branch inherits (-1 if none).

    Direct children are enough: a grandchild inherits no deeper than its parent does.
    """
    return max(
        (b.fork_depth - 1 for b in branches.values() if b.parent_id == branch_id),
        default=-1,
    )


def branch_heads(
    branches: Mapping[int, BranchLink],
    own: Mapping[int, Tip],
    base: Mapping[int, Tip],
    read_inherited: Callable[[int], Tip | None],
) -> dict[int, Tip | None]:
    """Every branch's head: its own newest active row (``own``), else the newest one its
    lineage inherits. ``base``: per branch, its parent's newest active row below its fork
    depth (absent when none, or when the fork depth is not above the parent's).

    With no base row, a branch inherits what its parent inherits: the lineage bound below
    the parent is then the parent's own fork depth - 1. Only a fork depth below the
    parent's (an imported oddity) or a cycle breaks that rule; ``read_inherited`` reads
    such a branch's inherited head from its lineage instead.
    """
    inherited: dict[int, Tip | None] = {}
    for start in branches:
        chain: list[int] = []
        found: Tip | None = None
        current: int | None = start
        while current is not None and current not in inherited:
            chain.append(current)
            branch = branches[current]
            parent = branches.get(branch.parent_id) if branch.parent_id is not None else None
            if parent is None:
                break
            if current in base:
                found = base[current]
                break
            if branch.fork_depth < parent.fork_depth or parent.id in chain:
                found = read_inherited(current)
                break
            current = parent.id
        else:
            if current is not None:
                found = inherited[current]
        for resolved in chain:  # each link of the chain inherits the same row
            inherited[resolved] = found
    return {b: own.get(b) or inherited.get(b) for b in branches}
