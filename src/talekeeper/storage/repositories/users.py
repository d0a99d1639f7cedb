"""Users and their per-user settings rows. Never commits (the caller's unit of work does)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from talekeeper.storage.models import LOCAL_USER, User, UserSetting


class UserRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def local_user(self) -> User:
        """The local user; created if a database lost it (the first migration creates it)."""
        user = self.session.scalar(select(User).where(User.name == LOCAL_USER))
        if user is None:
            user = User(name=LOCAL_USER)
            self.session.add(user)
            self.session.flush()
        return user

    def settings(self, user_id: int) -> dict[str, Any]:
        rows = self.session.scalars(select(UserSetting).where(UserSetting.user_id == user_id))
        return {row.key: json.loads(row.value) for row in rows}

    def save_settings(self, user_id: int, values: dict[str, Any]) -> None:
        """Upsert each value; a value of ``None`` removes the override (back to the default)."""
        for key, value in values.items():
            if value is None:
                self.session.execute(
                    delete(UserSetting).where(
                        UserSetting.user_id == user_id, UserSetting.key == key
                    )
                )
                continue
            row = self.session.get(UserSetting, (user_id, key))
            if row is None:
                self.session.add(UserSetting(user_id=user_id, key=key, value=json.dumps(value)))
            else:
                row.value = json.dumps(value)
        self.session.flush()
