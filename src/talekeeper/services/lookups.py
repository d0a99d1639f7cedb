"""Small reads and writes that the routes need and no larger service owns: one action
by id, the call log's newest page, a user's stored setting overrides."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from talekeeper.storage.models import Action, AiCall
from talekeeper.storage.repositories.ai_calls import AiCallRepository
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.repositories.users import UserRepository


def action(session: Session, action_id: int) -> Action | None:
    """The action with this id, whoever's it is: the caller checks the owner."""
    return StoryRepository(session).action(action_id)


def newest_calls(
    session: Session,
    user_id: int,
    *,
    limit: int,
    before_id: int | None,
    kind: str | None,
    status: str | None,
    adventure_id: int | None,
) -> Sequence[AiCall]:
    """One page of the user's call log, newest first."""
    return AiCallRepository(session).newest(
        user_id,
        limit=limit,
        before_id=before_id,
        kind=kind,
        status=status,
        adventure_id=adventure_id,
    )


def stored_settings(session: Session, user_id: int) -> dict[str, Any]:
    """The user's overrides as stored (a key absent: the server's default)."""
    return UserRepository(session).settings(user_id)


def save_settings(session: Session, user_id: int, values: dict[str, Any]) -> None:
    """Upsert each value; ``None`` removes the override."""
    UserRepository(session).save_settings(user_id, values)
