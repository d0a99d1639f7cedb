"""The story: adventures, the branches of their tree, the actions on them, and their story
cards.

Invariants:

- Every adventure belongs to a user (``accounts.User``); deleting either deletes what
  hangs from it.
- The story tree (see ``services.story.tree``): every action has a branch and a depth; a
  branch has a parent and the depth its own actions start at, so "on the current path" is
  one SQL clause over (branch, depth). At most one *active* action per (branch, depth): a
  partial unique index enforces it, so two turns racing for the same slot cannot both land.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, false, text
from sqlalchemy.orm import Mapped, mapped_column

from talekeeper.core.clock import utcnow
from talekeeper.storage.models.base import ID, Base, UtcDateTime
from talekeeper.storage.vocabulary import ActionState


class Adventure(Base):
    """One story: plot components, persona, toggles, and which branch the player is on.
    ``witness_mode`` (a ``vocabulary.WitnessMode``) is what a turn addressing a character
    does with a memory that character did not witness: ``label`` it, leave it out
    (``strict``) or nothing (``off``). ``turn_order`` (a ``vocabulary.TurnOrder``): who may
    act next while it is shared, ``free`` or ``round_robin``."""

    __tablename__ = "adventures"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    user_id: Mapped[int] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(200))
    scenario_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    persona_name: Mapped[str] = mapped_column(String(120), default="")
    persona_pronouns: Mapped[str] = mapped_column(String(40), default="")
    persona_description: Mapped[str] = mapped_column(Text, default="")
    ai_instructions: Mapped[str] = mapped_column(Text, default="")
    plot_essentials: Mapped[str] = mapped_column(Text, default="")
    authors_note: Mapped[str] = mapped_column(Text, default="")
    auto_summarize: Mapped[bool] = mapped_column(Boolean, default=True)
    memory_bank: Mapped[bool] = mapped_column(Boolean, default=True)
    # A ``vocabulary.WitnessMode``: what a turn addressing a character does with a memory
    # that character did not witness.
    witness_mode: Mapped[str] = mapped_column(String(8), default="label", server_default="label")
    turn_order: Mapped[str] = mapped_column(String(12), default="free", server_default="free")
    # The shares and ceilings the player set for the sections with budgets of their own
    # (JSON, checked by ``services.prompt.budgets``); NULL: the documented defaults.
    section_budgets: Mapped[str | None] = mapped_column(Text, nullable=True, default=None)
    # The lore clerk's proposals become cards without asking (docs/world.md); off at first.
    auto_accept_cards: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The Scene: where the story is, who is there, what is happening. Set by the player
    # (``scene_by_player``) or, when not, filled from the story cards of the newest actions.
    scene_location: Mapped[str] = mapped_column(String(200), default="")
    scene_present: Mapped[str] = mapped_column(Text, default="[]")  # JSON list of names
    scene_summary: Mapped[str] = mapped_column(Text, default="")
    scene_by_player: Mapped[bool] = mapped_column(Boolean, default=False)
    # No foreign key: adventures and branches would reference each other, which SQLite's
    # table-copy migrations handle badly; the tree service keeps it pointing at a branch.
    current_branch_id: Mapped[int | None] = mapped_column(ID, nullable=True)
    # Action rows of every state, kept by the tree service as it writes them (the cap on
    # rows per adventure reads it instead of counting); NULL until first counted.
    action_rows: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # The last revision given to one of its memories (``MemoryRepository.next_revision``
    # bumps it under this row's lock, so revisions are given in commit order).
    memory_revision: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)


class Branch(Base):
    """A line of the story tree. Its own actions have depth >= ``fork_depth``; below that
    its path is its parent's path (up to ``fork_depth - 1``)."""

    __tablename__ = "branches"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    parent_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("branches.id", ondelete="CASCADE"), nullable=True
    )
    fork_depth: Mapped[int] = mapped_column(Integer, default=0)
    forked_from_action_id: Mapped[int | None] = mapped_column(ID, nullable=True)
    name: Mapped[str] = mapped_column(String(120), default="")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Action(Base):
    """One entry of the story: a player action (do, say, story) or a narration.

    ``state`` (a ``vocabulary.ActionState``): ``active`` (on its branch's path), ``take``
    (an alternative take of a slot, not shown), ``undone`` (on the redo stack), ``removed``
    (deleted, or discarded when a new action replaced an undone one). Rows are never erased
    while their adventure exists.
    """

    __tablename__ = "actions"
    __table_args__ = (
        Index("ix_actions_branch_id_state_depth", "branch_id", "state", "depth"),
        # The deepest rows of a branch whatever their state (the head and its redo stack).
        Index("ix_actions_branch_id_depth", "branch_id", "depth"),
        Index(
            "uq_actions_active_slot",
            "branch_id",
            "depth",
            unique=True,
            sqlite_where=text(f"state = '{ActionState.ACTIVE}'"),
            postgresql_where=text(f"state = '{ActionState.ACTIVE}'"),
        ),
    )

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    branch_id: Mapped[int] = mapped_column(ID, ForeignKey("branches.id", ondelete="CASCADE"))
    depth: Mapped[int] = mapped_column(Integer)
    type: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(8), default=ActionState.ACTIVE.value)
    take: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    edited_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # Who wrote a player's action in a shared adventure, and the persona they wrote it as, at
    # the time (docs/sharing.md); NULL in single play, for narrations and openings, and for
    # rows written before. No foreign key: the name stays when the account goes.
    author_id: Mapped[int | None] = mapped_column(ID, nullable=True)
    author_name: Mapped[str | None] = mapped_column(String(120), nullable=True)


class StoryCard(Base):
    """A story card (lorebook entry / world info). ``keywords`` and ``secondary_keywords``
    are JSON lists of text; ``secondary_rule`` is one of ``services.cards.rules.SecondaryRule``."""

    __tablename__ = "story_cards"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(120))
    type: Mapped[str] = mapped_column(String(16))
    keywords: Mapped[str] = mapped_column(Text, default="[]")
    entry: Mapped[str] = mapped_column(Text, default="")
    notes: Mapped[str] = mapped_column(Text, default="")
    always_on: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    secondary_keywords: Mapped[str] = mapped_column(Text, default="[]", server_default="[]")
    secondary_rule: Mapped[str] = mapped_column(String(8), default="any", server_default="any")
    # A secret of the characters named (a JSON list of names; ``services.world.secrets``);
    # None: no secret.
    known_by: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)
