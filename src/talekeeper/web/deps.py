"""Request-scoped dependencies: the runtime, a unit of work, the current user.

A request that uses ``db`` commits when the handler returns and rolls back if
it raised: only this entry point owns the transaction.
"""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import Request
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.storage.db import session_scope


def runtime(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


def db(request: Request) -> Iterator[Session]:
    with session_scope(runtime(request).sessions) as session:
        yield session


def user_id(request: Request) -> int:
    """The acting user. Until login exists, everyone is the local user."""
    uid: int = request.app.state.local_user_id
    return uid
