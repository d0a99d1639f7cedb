"""Accounts, signed-in sessions and API tokens. Never commits (the caller's unit of work
does).

Invariants:

- Account names are looked up ignoring ASCII case (the names an account may have are
  ASCII), so ``Mara`` and ``mara`` are one account.
- Sessions and tokens are found only by the SHA-256 of their secret (``token_hash``);
  nothing here sees or stores the secret itself.
- ``touch_*`` writes ``last_used_at`` only when it is older than the given cut-off, in one
  conditional ``UPDATE``, so two requests racing to touch the same row write it once.
- ``usage`` is one statement whatever the number of accounts: each figure comes from a
  grouped subquery joined to the accounts, never a query per account.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import case, delete, func, select, update
from sqlalchemy.orm import Session

from talekeeper.storage.db import READ_ONLY
from talekeeper.storage.models import Action, Adventure, AiCall, ApiToken, AuthSession, User


class UsageFigures(NamedTuple):
    """What an account used (each count 0 when it has none); ``last_seen`` is None when
    none of its sessions was ever used."""

    adventures: int
    turns: int
    ai_calls: int
    tokens_in: int
    tokens_out: int
    sessions: int
    api_tokens: int
    last_seen: datetime | None


def _grouped(now: datetime, player_types: Collection[str]) -> list[Any]:
    """The per-user subqueries ``usage`` joins; each is keyed by ``user_id``."""
    adventures = (
        select(Adventure.user_id, func.count().label("adventures"))
        .group_by(Adventure.user_id)
        .subquery()
    )
    turns = (
        select(Adventure.user_id, func.count(Action.id).label("turns"))
        .join(Action, Action.adventure_id == Adventure.id)
        .where(Action.type.in_(player_types))
        .group_by(Adventure.user_id)
        .subquery()
    )
    calls = (
        select(
            AiCall.user_id,
            func.count().label("ai_calls"),
            func.coalesce(func.sum(AiCall.tokens_in), 0).label("tokens_in"),
            func.coalesce(func.sum(AiCall.tokens_out), 0).label("tokens_out"),
        )
        .group_by(AiCall.user_id)
        .subquery()
    )
    sessions = (
        select(
            AuthSession.user_id,
            func.count(case((AuthSession.expires_at > now, AuthSession.id))).label("sessions"),
            func.max(AuthSession.last_used_at).label("last_seen"),
        )
        .group_by(AuthSession.user_id)
        .subquery()
    )
    tokens = (
        select(ApiToken.user_id, func.count().label("api_tokens"))
        .group_by(ApiToken.user_id)
        .subquery()
    )
    return [adventures, turns, calls, sessions, tokens]


class AccountRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def writable(self) -> bool:
        """Whether this unit of work may write (``read_scope`` units may not)."""
        options = self.session.connection().get_execution_options()
        return not options.get(READ_ONLY, False)

    # -- users ------------------------------------------------------------------------------

    def user_named(self, name: str) -> User | None:
        return self.session.scalar(select(User).where(func.lower(User.name) == name.lower()))

    def user(self, user_id: int) -> User | None:
        return self.session.get(User, user_id)

    def all_users(self) -> Sequence[User]:
        return self.session.scalars(select(User).order_by(User.id)).all()

    def accounts(self) -> Sequence[User]:
        """Users with a password, by name."""
        query = select(User).where(User.password_hash.is_not(None))
        return self.session.scalars(query.order_by(func.lower(User.name))).all()

    def has_accounts(self) -> bool:
        query = select(User.id).where(User.password_hash.is_not(None)).limit(1)
        return self.session.scalar(query) is not None

    def usage(
        self, now: datetime, player_types: Collection[str], *, user_id: int | None = None
    ) -> list[tuple[User, UsageFigures]]:
        """Every account (or only ``user_id``) with its figures, by name, in one statement:
        ``turns`` counts the actions of ``player_types``, ``sessions`` those not expired at
        ``now``."""
        adventures, turns, calls, sessions, tokens = _grouped(now, player_types)

        def figure(column: Any) -> Any:
            return func.coalesce(column, 0)

        query = (
            select(
                User,
                figure(adventures.c.adventures),
                figure(turns.c.turns),
                figure(calls.c.ai_calls),
                figure(calls.c.tokens_in),
                figure(calls.c.tokens_out),
                figure(sessions.c.sessions),
                figure(tokens.c.api_tokens),
                sessions.c.last_seen,
            )
            .outerjoin(adventures, adventures.c.user_id == User.id)
            .outerjoin(turns, turns.c.user_id == User.id)
            .outerjoin(calls, calls.c.user_id == User.id)
            .outerjoin(sessions, sessions.c.user_id == User.id)
            .outerjoin(tokens, tokens.c.user_id == User.id)
            .where(User.password_hash.is_not(None))
            .order_by(func.lower(User.name), User.id)
        )
        if user_id is not None:
            query = query.where(User.id == user_id)
        return [(user, _figures(*rest)) for user, *rest in self.session.execute(query).all()]

    def add_user(self, name: str, password_hash: str, *, admin: bool) -> User:
        user = User(name=name, password_hash=password_hash, is_admin=admin, disabled=False)
        self.session.add(user)
        self.session.flush()
        return user

    # -- sessions ---------------------------------------------------------------------------

    def add_session(
        self, user_id: int, token_hash: str, now: datetime, expires_at: datetime
    ) -> AuthSession:
        row = AuthSession(
            user_id=user_id,
            token_hash=token_hash,
            created_at=now,
            expires_at=expires_at,
            last_used_at=now,
        )
        self.session.add(row)
        self.session.flush()
        return row

    def session_by_hash(self, token_hash: str) -> tuple[AuthSession, User] | None:
        query = (
            select(AuthSession, User)
            .join(User, User.id == AuthSession.user_id)
            .where(AuthSession.token_hash == token_hash)
        )
        found = self.session.execute(query).one_or_none()
        return None if found is None else (found[0], found[1])

    def live_sessions(self, user_id: int, now: datetime) -> Sequence[AuthSession]:
        """The user's sessions not expired at ``now``, most recently used first."""
        query = (
            select(AuthSession)
            .where(AuthSession.user_id == user_id, AuthSession.expires_at > now)
            .order_by(AuthSession.last_used_at.desc(), AuthSession.id.desc())
        )
        return self.session.scalars(query).all()

    def delete_session(self, token_hash: str) -> None:
        self.session.execute(delete(AuthSession).where(AuthSession.token_hash == token_hash))

    def delete_sessions(self, user_id: int) -> int:
        done = self.session.execute(delete(AuthSession).where(AuthSession.user_id == user_id))
        return int(getattr(done, "rowcount", 0) or 0)

    def delete_expired_sessions(self, user_id: int, now: datetime) -> None:
        self.session.execute(
            delete(AuthSession).where(AuthSession.user_id == user_id, AuthSession.expires_at <= now)
        )

    def keep_newest_sessions(self, user_id: int, keep: int) -> None:
        """Delete all but the ``keep`` most recently used sessions of a user."""
        newest = (
            select(AuthSession.id)
            .where(AuthSession.user_id == user_id)
            .order_by(AuthSession.last_used_at.desc(), AuthSession.id.desc())
            .limit(keep)
        )
        self.session.execute(
            delete(AuthSession).where(
                AuthSession.user_id == user_id, AuthSession.id.not_in(newest.scalar_subquery())
            )
        )

    def touch_session(self, session_id: int, now: datetime, older_than: datetime) -> bool:
        done = self.session.execute(
            update(AuthSession)
            .where(AuthSession.id == session_id, AuthSession.last_used_at < older_than)
            .values(last_used_at=now)
        )
        return bool(getattr(done, "rowcount", 0))

    # -- API tokens -------------------------------------------------------------------------

    def add_token(
        self,
        user_id: int,
        name: str,
        token_hash: str,
        scopes: str,
        now: datetime,
        expires_at: datetime | None,
    ) -> ApiToken:
        row = ApiToken(
            user_id=user_id,
            name=name,
            token_hash=token_hash,
            scopes=scopes,
            created_at=now,
            expires_at=expires_at,
        )
        self.session.add(row)
        self.session.flush()
        return row

    def tokens(self, user_id: int) -> Sequence[ApiToken]:
        query = select(ApiToken).where(ApiToken.user_id == user_id).order_by(ApiToken.id)
        return self.session.scalars(query).all()

    def count_tokens(self, user_id: int) -> int:
        query = select(func.count()).select_from(ApiToken).where(ApiToken.user_id == user_id)
        return int(self.session.scalar(query) or 0)

    def token_owner(self, token_id: int) -> int | None:
        """The id of the user the token belongs to; None when there is no such token."""
        return self.session.scalar(select(ApiToken.user_id).where(ApiToken.id == token_id))

    def token_by_hash(self, token_hash: str) -> tuple[ApiToken, User] | None:
        query = (
            select(ApiToken, User)
            .join(User, User.id == ApiToken.user_id)
            .where(ApiToken.token_hash == token_hash)
        )
        found = self.session.execute(query).one_or_none()
        return None if found is None else (found[0], found[1])

    def delete_token(self, user_id: int, token_id: int) -> bool:
        done = self.session.execute(
            delete(ApiToken).where(ApiToken.id == token_id, ApiToken.user_id == user_id)
        )
        return bool(getattr(done, "rowcount", 0))

    def delete_tokens(self, user_id: int) -> int:
        """Delete every token of the account; how many there were."""
        done = self.session.execute(delete(ApiToken).where(ApiToken.user_id == user_id))
        return int(getattr(done, "rowcount", 0) or 0)

    def touch_token(self, token_id: int, now: datetime, older_than: datetime) -> bool:
        stale = (ApiToken.last_used_at.is_(None)) | (ApiToken.last_used_at < older_than)
        done = self.session.execute(
            update(ApiToken).where(ApiToken.id == token_id, stale).values(last_used_at=now)
        )
        return bool(getattr(done, "rowcount", 0))


def _figures(*values: Any) -> UsageFigures:
    *counts, last_seen = values
    adventures, turns, ai_calls, tokens_in, tokens_out, sessions, api_tokens = map(int, counts)
    return UsageFigures(
        adventures, turns, ai_calls, tokens_in, tokens_out, sessions, api_tokens, last_seen
    )
