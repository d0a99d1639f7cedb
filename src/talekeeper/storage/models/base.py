"""What every model shares: the declarative base, its naming convention, and the column
types the tables are built of.

Invariants:

- Every model derives from ``Base``, so one ``MetaData`` (``Base.metadata``) holds every
  table, with constraint and index names given by ``NAMING``: the names the migrations
  create, so autogenerate compares like with like.
- Every timestamp is stored as UTC and read back timezone-aware (``UtcDateTime``).
- Row ids, and every column that holds one, are 64-bit on SQLite and PostgreSQL alike
  (``ID``); other whole numbers (depths, takes, counts) are 32-bit.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Integer, MetaData, TypeDecorator
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase

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
