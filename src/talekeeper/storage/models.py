"""SQLAlchemy 2 models: the schema, kept portable between SQLite and PostgreSQL.

Invariants:

- Every timestamp is stored as UTC and read back timezone-aware (``UtcDateTime``).
- Row ids, and every column that holds one, are 64-bit on SQLite and PostgreSQL alike
  (``ID``); other whole numbers (depths, takes, counts) are 32-bit.
- Every adventure and settings row belongs to a user; a local user exists from
  the first migration on, so a fresh install needs no login.
- Sign-in secrets are never stored as given: passwords as argon2id hashes,
  session ids and API tokens as the SHA-256 of the random value the client holds.
- The models and the Alembic migrations describe the same schema (a test runs
  autogenerate against a migrated database and expects no difference).
- Memories and summary versions are attached to a node (branch, depth, action):
  "on the current path" is the same lineage clause as for actions, so a fork
  inherits exactly the derived work of its path and nothing is copied.
- The story tree (see ``services.story.tree``): every action has a branch and a
  depth; a branch has a parent and the depth its own actions start at, so
  "on the current path" is one SQL clause over (branch, depth). At most one
  *active* action per (branch, depth): a partial unique index enforces it,
  so two turns racing for the same slot cannot both land.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    false,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from talekeeper.core.clock import utcnow
from talekeeper.storage.vocabulary import ActionState, MemoryOrigin, MemoryStatus, PassState

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# Row ids are 64-bit on both databases, so every id a client can name (``limits.MAX_ID``)
# fits its column: BIGINT on PostgreSQL; on SQLite INTEGER, because only an INTEGER
# PRIMARY KEY is the (64-bit) rowid that numbers new rows.
ID = BigInteger().with_variant(Integer(), "sqlite")

LOCAL_USER = "local"  # the user every request acts as until login exists


class UtcDateTime(TypeDecorator[datetime]):
    """Stores aware datetimes as naive UTC; returns aware UTC (SQLite keeps no zone)."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: use talekeeper.core.clock.utcnow()")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class User(Base):
    """A player. The local user has no password; an account (accounts mode) has one."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    password_hash: Mapped[str | None] = mapped_column(String(255), nullable=True)  # argon2id
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class AuthSession(Base):
    """A signed-in browser. The cookie carries a random id; only its SHA-256 is kept, so
    a copy of the database signs no one in."""

    __tablename__ = "auth_sessions"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    user_id: Mapped[int] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 hex of the id
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_used_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class ApiToken(Base):
    """A named bearer token for scripts, limited to its scopes; only its SHA-256 is kept."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    user_id: Mapped[int] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[str] = mapped_column(String(64))  # space-separated scope names
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class SignInCount(Base):
    """Failed sign-ins that one key of the sign-in throttle counted (``services.accounts.
    throttle``), kept in the database so that every process serving it counts together.

    The key is (``kind``, ``account``, ``address``): an account name from one address, an
    account name from anywhere (``address`` empty) or one address at any name (``account``
    empty). ``quiet_at``: from then on the row counts nothing (its failures and locks have
    aged out) and may be deleted, unless ``known_until`` (the address signed in to the
    account lately) keeps it.
    """

    __tablename__ = "sign_in_counts"

    kind: Mapped[str] = mapped_column(String(8), primary_key=True)
    account: Mapped[str] = mapped_column(String(64), primary_key=True)
    address: Mapped[str] = mapped_column(String(64), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    locks: Mapped[int] = mapped_column(Integer, default=0)
    locked_until: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_failure_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    quiet_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)
    known_until: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class UserSetting(Base):
    """One per-user override; ``value`` is JSON text of the parsed value."""

    __tablename__ = "user_settings"

    user_id: Mapped[int] = mapped_column(
        ID, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)


class AiCall(Base):
    """One model call: narration, memory, summary, embedding or test. ``status`` (a
    ``vocabulary.CallStatus``): ``ok``, ``error`` (``error`` says what failed) or
    ``cancelled`` (the consumer stopped reading before the end)."""

    __tablename__ = "ai_calls"
    __table_args__ = (Index("ix_ai_calls_user_id_id", "user_id", "id"),)

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    user_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    adventure_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="SET NULL"), nullable=True, index=True
    )
    kind: Mapped[str] = mapped_column(String(16))
    provider: Mapped[str] = mapped_column(String(255))
    model: Mapped[str] = mapped_column(String(255))
    started_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    duration_ms: Mapped[float] = mapped_column(Float())
    tokens_in: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tokens_out: Mapped[int | None] = mapped_column(Integer, nullable=True)
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class Adventure(Base):
    """One story: plot components, persona, toggles, and which branch the player is on."""

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
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)


class InsightSnapshot(Base):
    """The exact context a narration was generated from, as JSON
    (``services.prompt.insights``)."""

    __tablename__ = "insights"

    action_id: Mapped[int] = mapped_column(
        ID, ForeignKey("actions.id", ondelete="CASCADE"), primary_key=True
    )
    data: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class ContextPlacement(Base):
    """Where a reply's ``cache`` prompt put what may change between turns, and which cards
    its Story Cards section held: what the next turn keeps in place (see
    ``services.prompt.placement``, which reads and writes it by ``version``). ``floating``
    is a JSON object (section name -> [depth, digest]), ``cards_held`` a JSON list of card
    ids, or NULL where the prompt's cards were not recorded."""

    __tablename__ = "context_placements"

    action_id: Mapped[int] = mapped_column(
        ID, ForeignKey("actions.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer)
    history_start: Mapped[int | None] = mapped_column(Integer, nullable=True)
    top_digest: Mapped[str] = mapped_column(String(64))
    floating: Mapped[str] = mapped_column(Text)
    cards_held: Mapped[str | None] = mapped_column(Text, nullable=True)


class Memory(Base):
    """A memory: 1-2 sentences about one block of actions, attached to the node the block
    ends on (``branch_id``, ``depth``, ``action_id``), covering ``source_start``..
    ``source_end`` (depths). A hand-written memory has no source range and is attached just
    before the branch's own depths (``fork_depth - 1``): it is on that branch's path and on
    every branch forked from it, and no undo can withdraw it.

    ``status`` (a ``vocabulary.MemoryStatus``): ``active`` (in the bank), ``forgotten``
    (pushed out by capacity: kept and listed, never retrieved), ``withdrawn`` (its source
    left the story: undo, delete, retry), ``deleted`` (the player deleted it: hidden, but its
    source stays covered so it is not written again). ``origin`` (a
    ``vocabulary.MemoryOrigin``): ``auto`` (the memory pass) or ``user`` (the player).
    ``authority`` (a ``vocabulary.Authority``): ``accepted_story`` or ``heuristic`` (its
    text hedges). ``revision`` grows with every change that a cache of the bank must see
    (see ``services.memory.bank``); it comes from the adventure's ``memory_revision`` and
    no two memories of an adventure share one.
    """

    __tablename__ = "memories"
    __table_args__ = (
        # Unique: a cache that reads the rows past the revision it holds misses none.
        Index("ix_memories_adventure_id_revision", "adventure_id", "revision", unique=True),
        Index("ix_memories_branch_id_depth", "branch_id", "depth"),
    )

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    branch_id: Mapped[int] = mapped_column(ID, ForeignKey("branches.id", ondelete="CASCADE"))
    depth: Mapped[int] = mapped_column(Integer)
    action_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("actions.id", ondelete="SET NULL"), nullable=True
    )
    source_start: Mapped[int | None] = mapped_column(Integer, nullable=True)
    source_end: Mapped[int | None] = mapped_column(Integer, nullable=True)
    text: Mapped[str] = mapped_column(Text)
    authority: Mapped[str] = mapped_column(String(16))  # a ``vocabulary.Authority``
    origin: Mapped[str] = mapped_column(String(8), default=MemoryOrigin.AUTO.value)
    writer: Mapped[str] = mapped_column(String(255), default="")  # model name or "extractive"
    status: Mapped[str] = mapped_column(String(12), default=MemoryStatus.ACTIVE.value)
    pinned: Mapped[bool] = mapped_column(Boolean, default=False)
    stale: Mapped[bool] = mapped_column(Boolean, default=False)
    use_count: Mapped[int] = mapped_column(Integer, default=0)
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    vector: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    vector_model: Mapped[str | None] = mapped_column(String(255), nullable=True)
    terms: Mapped[str] = mapped_column(Text, default="")  # the lexical terms, space-separated
    # Whether ``keys`` were read from the source as it stands (cleared whenever the text or
    # the source changes; the embedding pass reads them again).
    keyed: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    revision: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)


class MemoryKey(Base):
    """One evidence passage of a memory: a sentence (or a few short ones) of one action of
    its source block, kept as an extra retrieval key (``services.memory.evidence``). Keys
    are derived: they change only together with their memory's ``revision`` and are read
    again from the source whenever the memory's text or source changes."""

    __tablename__ = "memory_keys"
    __table_args__ = (Index("ix_memory_keys_memory_id_position", "memory_id", "position"),)

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    memory_id: Mapped[int] = mapped_column(ID, ForeignKey("memories.id", ondelete="CASCADE"))
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int] = mapped_column(Integer)  # story order within the memory
    depth: Mapped[int] = mapped_column(Integer)  # the action the passage comes from
    text: Mapped[str] = mapped_column(Text)
    terms: Mapped[str] = mapped_column(Text, default="")
    names: Mapped[str] = mapped_column(Text, default="", server_default="")  # capitalised terms
    vector: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    vector_model: Mapped[str | None] = mapped_column(String(255), nullable=True)


class MemoryUse(Base):
    """Which reply used which memory (the Memory Bank shows the turns that used it)."""

    __tablename__ = "memory_uses"

    memory_id: Mapped[int] = mapped_column(
        ID, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True
    )
    action_id: Mapped[int] = mapped_column(
        ID, ForeignKey("actions.id", ondelete="CASCADE"), primary_key=True
    )


class SummaryVersion(Base):
    """One version of the Story Summary, anchored to a node (``branch_id``, ``depth``,
    ``action_id``).

    The version in force is the deepest (then newest) one whose anchor is an active
    action on the current path (or, with no anchor, whose branch is on the path).
    ``covers_to`` is the summary cursor: the depth its content covers up to. An automatic
    version is anchored where it covers up to; the player's edit is anchored at the head
    it was made at (so it stays on that path) and covers what its base covered.
    ``trigger`` (a ``vocabulary.SummaryTrigger``) is ``interval`` (the summary pass) or
    ``user`` (the player wrote it).
    """

    __tablename__ = "summary_versions"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    branch_id: Mapped[int] = mapped_column(ID, ForeignKey("branches.id", ondelete="CASCADE"))
    depth: Mapped[int] = mapped_column(Integer)  # -1: before the first action
    action_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("actions.id", ondelete="SET NULL"), nullable=True
    )
    covers_to: Mapped[int] = mapped_column(Integer)  # the depth its content covers up to
    text: Mapped[str] = mapped_column(Text)
    trigger: Mapped[str] = mapped_column(String(12))  # a ``vocabulary.SummaryTrigger``
    writer: Mapped[str] = mapped_column(String(255), default="")
    base_id: Mapped[int | None] = mapped_column(ID, nullable=True)
    refreshes_id: Mapped[int | None] = mapped_column(ID, nullable=True)
    stale: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class DerivedJob(Base):
    """Background work waiting for an adventure, written in the transaction that causes it.

    One row per adventure: a worker claims it (``claimed_by``, its own token, and
    ``claimed_at``), refreshes ``claimed_at`` while its run goes on, runs every pass, and
    deletes it unless a newer request arrived meanwhile. A claim nobody refreshed for
    ``STALE`` (its process died) is claimed again (see ``services.memory.worker``).
    """

    __tablename__ = "derived_jobs"

    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), primary_key=True
    )
    requested_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    claimed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    claimed_by: Mapped[str | None] = mapped_column(String(64), nullable=True)


class DerivedState(Base):
    """The outcome of the last run of one pass (memory, summary, embedding, eviction):
    ``state`` (a ``vocabulary.PassState``) is ``idle``, ``running`` or ``failed``."""

    __tablename__ = "derived_states"

    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), primary_key=True
    )
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    state: Mapped[str] = mapped_column(String(8), default=PassState.IDLE.value)
    last_run_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_success_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_failure_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    did_work: Mapped[bool] = mapped_column(Boolean, default=False)
    failures: Mapped[int] = mapped_column(Integer, default=0)  # in a row


class LibrarySource(Base):
    """A document of a user's knowledge library (``services.library``): read and split into
    ``LibraryPassage`` rows when uploaded, in one transaction (a file is either whole or
    absent); its passages' vectors are made afterwards by the library indexer.

    ``state`` is a ``vocabulary.SourceState``: ``indexing`` (passages without a
    vector of ``vector_model`` remain), ``ready``, ``failed`` (``error`` says why;
    retried from ``retry_at``), ``words_only`` (no embedding model: searched by words).
    ``embedded`` counts the passages that have a vector of ``vector_model`` (the progress);
    ``revision`` grows with every write of vectors, so a cache of them knows it is stale.
    ``claimed_by``/``claimed_at``: the indexer working on it (see ``services.library.indexer``).
    """

    __tablename__ = "library_sources"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    user_id: Mapped[int] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(300))
    filename: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(8))
    size_bytes: Mapped[int] = mapped_column(Integer)
    characters: Mapped[int] = mapped_column(Integer)
    passage_count: Mapped[int] = mapped_column(Integer)
    token_count: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(12))
    vector_model: Mapped[str | None] = mapped_column(String(255), nullable=True)
    embedded: Mapped[int] = mapped_column(Integer, default=0)
    revision: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)  # in a row
    retry_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    claimed_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    claimed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)


class LibraryPassage(Base):
    """One passage of a source, in reading order (``position`` from 0), with where it came
    from (``heading_path``: a JSON list of headings; ``page`` for a PDF). ``terms``: its
    lexical terms (``services.memory.terms``), space-separated: what the full-text index
    holds, so the library and the memories agree on what a word is."""

    __tablename__ = "library_passages"
    __table_args__ = (
        Index("ix_library_passages_source_id_position", "source_id", "position", unique=True),
    )

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    source_id: Mapped[int] = mapped_column(ID, ForeignKey("library_sources.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    heading_path: Mapped[str] = mapped_column(Text, default="[]")
    page: Mapped[int | None] = mapped_column(Integer, nullable=True)
    text: Mapped[str] = mapped_column(Text)
    tokens: Mapped[int] = mapped_column(Integer)
    terms: Mapped[str] = mapped_column(Text, default="")
    vector: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    vector_model: Mapped[str | None] = mapped_column(String(255), nullable=True)


class AdventureKnowledge(Base):
    """A library source attached to an adventure (many to many); both belong to one user."""

    __tablename__ = "adventure_knowledge"

    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), primary_key=True
    )
    source_id: Mapped[int] = mapped_column(
        ID, ForeignKey("library_sources.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    attached_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
