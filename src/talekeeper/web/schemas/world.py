"""The world's answers (docs/world.md): the state at an action and the path's events."""

from __future__ import annotations

from talekeeper.services.common.vocabulary import EntityKind, EventKind, EventOrigin
from talekeeper.web.schemas.common import Out


class NamedRefOut(Out):
    name: str
    entity_id: int | None  # null: a player character the story has not named yet


class TimeOut(Out):
    text: str


class QuestOut(Out):
    name: str
    state: str


class EntityOut(Out):
    id: int
    name: str
    kind: EntityKind
    aliases: list[str]
    card_id: int | None
    status: str | None


class PlayerOut(Out):
    """Another player character of a shared adventure (docs/sharing.md)."""

    name: str
    entity_id: int | None
    here: bool  # with the host's character
    location: NamedRefOut | None  # where they stand (null: unknown)
    inventory: list[NamedRefOut]


class WorldOut(Out):
    at_action: int | None
    location: NamedRefOut | None
    present: list[NamedRefOut]
    inventory: list[NamedRefOut]
    time: TimeOut | None
    quests: list[QuestOut]
    entities: list[EntityOut]
    lead: str | None  # the host's character's name, where several play
    players: list[PlayerOut]  # the other player characters (empty: one player)


class EventOut(Out):
    id: int
    action_id: int
    kind: EventKind
    subject: str | None
    object: str | None
    value: str | None
    origin: EventOrigin
    evidence: str
    known_by: list[str] | None  # a secret of these characters; null: no secret
