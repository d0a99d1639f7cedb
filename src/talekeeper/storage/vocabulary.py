"""The states the database stores: one ``StrEnum`` per column, declared here once.

Invariants:

- These string values are what the database holds, what the export file carries and
  what the JSON API and the command line show. A value never changes, and none is
  added or dropped, without a migration (and, for the export file, a format version)
  that moves the rows already written; the migrations keep the literal spellings of
  their time, since they are history.
- A member is its value: ``StrEnum`` members compare equal to, hash like, format as and
  are bound to SQL and JSON as their plain strings, so a column read back as ``str``
  compares equal to the member that was written.
- Every value fits its column (``tests/storage/test_vocabulary.py`` checks the widths
  against ``storage.models``).
- Nothing else in ``talekeeper`` spells these values as constants of its own; groups of
  them (``storage.repositories.memory.COVERING``, ``LISTED``) are built from the members.

The enums and where each is stored:

- ``ActionState``: ``actions.state`` (``models.Action``).
- ``MemoryStatus``: ``memories.status`` (``models.Memory``).
- ``MemoryOrigin``: ``memories.origin``.
- ``Authority``: ``memories.authority`` (``services.memory.authority.classify`` decides).
- ``SummaryTrigger``: ``summary_versions.trigger`` (``models.SummaryVersion``).
- ``PassState``: ``derived_states.state`` (``models.DerivedState``: one row per background
  pass kind).
- ``SourceState``: ``library_sources.state`` (``models.LibrarySource``).
- ``CallStatus``: ``ai_calls.status`` (``models.AiCall``: the AI call log).
- ``WorkKind``: ``background_jobs.kind`` (``models.BackgroundJob``).
- ``EntityKind``: ``world_entities.kind`` (``models.WorldEntity``).
- ``EventKind``, ``EventOrigin``: ``world_events.kind`` and ``.origin``
  (``models.WorldEvent``: docs/world.md); ``QuestState``: a quest event's ``value``.
- ``ProposalKind``, ``ProposalState``: ``card_proposals.kind`` and ``.state``
  (``models.CardProposal``: docs/world.md, "The lore clerk").
- ``FeedKind``: ``adventure_feed.kind`` (``models.FeedEvent``: what changed in a shared
  adventure, for its members' pages: docs/sharing.md).
- ``MemberRole``: ``adventure_members.role`` and ``adventure_invites.role``
  (``models.AdventureMember``: docs/sharing.md); the host is the adventure's owner and
  has no row.
"""

from __future__ import annotations

from enum import StrEnum


class ActionState(StrEnum):
    """Where an action stands in the story tree (``services.story.tree``)."""

    ACTIVE = "active"  # on its branch's path: at most one per (branch, depth)
    TAKE = "take"  # an alternative take of a slot, not shown
    UNDONE = "undone"  # on the redo stack
    REMOVED = "removed"  # deleted, or discarded when a new action replaced an undone one


class MemoryStatus(StrEnum):
    """Where a memory stands in the Memory Bank."""

    ACTIVE = "active"  # in the bank: retrieved
    FORGOTTEN = "forgotten"  # pushed out by capacity: kept and listed, never retrieved
    WITHDRAWN = "withdrawn"  # its source left the story (undo, delete, retry)
    DELETED = "deleted"  # the player deleted it: hidden, its source stays covered


class MemoryOrigin(StrEnum):
    """Who wrote a memory."""

    AUTO = "auto"  # the memory pass, from a block of the story
    USER = "user"  # the player, by hand (no source block)


class Authority(StrEnum):
    """Whether a memory reads as established story or as a guess."""

    ACCEPTED = "accepted_story"
    HEURISTIC = "heuristic"  # its text hedges: never shown as established fact


class SummaryTrigger(StrEnum):
    """What wrote a Story Summary version."""

    INTERVAL = "interval"  # the summary pass, every ``SUMMARY_EVERY`` actions
    USER = "user"  # the player wrote it


class PassState(StrEnum):
    """The outcome of a background pass's last run."""

    IDLE = "idle"  # not running; the last run (if any) succeeded
    RUNNING = "running"
    FAILED = "failed"  # the last run failed (``last_error`` says why); the next retries


class WorkKind(StrEnum):
    """What a background job works on (``background_jobs.kind``; the queue's lock prefix)."""

    ADVENTURE = "adventure"  # the memory passes of one adventure
    LIBRARY_SOURCE = "library_source"  # the vectors of one knowledge library source


class SourceState(StrEnum):
    """Where a knowledge library source's vectors stand."""

    INDEXING = "indexing"  # passages without a vector of ``vector_model`` remain
    READY = "ready"
    FAILED = "failed"  # the last batch failed (``error``); retried at ``retry_at``
    WORDS_ONLY = "words_only"  # no embedding model: searched by words


class CallStatus(StrEnum):
    """How a model call ended (the AI call log)."""

    OK = "ok"
    ERROR = "error"
    CANCELLED = "cancelled"  # the consumer stopped reading (the client went away)


class EntityKind(StrEnum):
    """What a named thing of the world is (docs/world.md)."""

    PERSON = "person"
    PLACE = "place"
    ITEM = "item"
    FACTION = "faction"
    QUEST = "quest"  # a quest's name: listed among the quests, not the entities


class EventKind(StrEnum):
    """One change to the world, said by one action (docs/world.md lists each one's roles)."""

    MOVED = "moved"
    ARRIVED = "arrived"
    LEFT = "left"
    TOOK = "took"
    DROPPED = "dropped"
    GAVE = "gave"
    EQUIPPED = "equipped"
    USED_UP = "used_up"
    STATUS = "status"
    RELATION = "relation"
    TIME = "time"
    QUEST = "quest"
    LEARNED = "learned"


class WitnessMode(StrEnum):
    """What a turn that addresses a character does with a memory that character did not
    witness (docs/world.md, "Who knows what")."""

    LABEL = "label"  # kept, marked "— Tobin was not there"
    STRICT = "strict"  # left out of that turn's context
    OFF = "off"  # kept as it is


class TurnOrder(StrEnum):
    """Who may act next in a shared adventure (docs/sharing.md, "Round-robin")."""

    FREE = "free"  # anyone who plays, whenever they like (turns still go one at a time)
    ROUND_ROBIN = "round_robin"  # one action each per round: after acting, wait for the rest


class EventOrigin(StrEnum):
    """Who said an event: patterns in the text, a model, or the player (the last word)."""

    RULES = "rules"
    MODEL = "model"
    PLAYER = "player"


class QuestState(StrEnum):
    """Where a quest stands: the ``value`` of a ``quest`` event."""

    OPENED = "opened"
    ADVANCED = "advanced"
    DONE = "done"
    FAILED = "failed"


class ProposalKind(StrEnum):
    """What a card proposal offers: a new card, or lines added to an existing one."""

    NEW = "new"
    UPDATE = "update"


class ProposalState(StrEnum):
    """Where a card proposal stands: waiting for the player, taken, or turned down."""

    OPEN = "open"
    ACCEPTED = "accepted"
    DISMISSED = "dismissed"


class MemberRole(StrEnum):
    """What a member of a shared adventure may do: the host (its owner) everything, a
    co-host everything of the story (not its sharing, its library or deleting it), a
    player act in the story, a viewer only follow it."""

    HOST = "host"
    COHOST = "cohost"
    PLAYER = "player"
    VIEWER = "viewer"


class FeedKind(StrEnum):
    """What changed in a shared adventure: the story (as the tree service names its
    changes) or its members."""

    APPEND = "append"
    REPLY = "reply"
    RETRY = "retry"
    SWITCH_TAKE = "switch_take"
    UNDO = "undo"
    REDO = "redo"
    EDIT = "edit"
    DELETE = "delete"
    FORK = "fork"
    MEMBERS = "members"
