"""The sign-in throttle's rows (``SignInCount``). Never commits (the caller's unit of work
does); what a row means and when it changes is the throttle's to say
(``services.accounts.throttle``).

Invariants:

- A row is found only by its whole key (kind, account, address), so one sign-in reads at
  most its own three rows.
- ``forget_quiet`` deletes only rows that count nothing any more (quiet) and remember no
  recent sign-in (``known_until`` passed or never set), by the ``quiet_at`` index.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session

from talekeeper.storage.models import SignInCount

Key = tuple[str, str, str]  # kind, account, address


class SignInCountRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, key: Key) -> SignInCount | None:
        return self.session.get(SignInCount, key)

    def add(self, key: Key, now: datetime) -> SignInCount:
        """A new row for ``key``, counting nothing yet (quiet from ``now``)."""
        kind, account, address = key
        row = SignInCount(
            kind=kind, account=account, address=address, failures=0, locks=0, quiet_at=now
        )
        self.session.add(row)
        return row

    def forget_quiet(self, now: datetime) -> int:
        """Delete the rows that count nothing and remember no recent sign-in; how many."""
        done = self.session.execute(
            delete(SignInCount).where(
                SignInCount.quiet_at <= now,
                or_(SignInCount.known_until.is_(None), SignInCount.known_until <= now),
            )
        )
        return int(getattr(done, "rowcount", 0) or 0)

    def count(self) -> int:
        return int(self.session.scalar(select(func.count()).select_from(SignInCount)) or 0)
