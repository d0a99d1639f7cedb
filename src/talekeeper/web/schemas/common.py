"""What every response model shares: the base class and how a moment in time is written."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer


class Out(BaseModel):
    """A response model: read from a service's dataclass by attribute; given a dict (a
    route that adds to a service's result, or the turn's event data), a key it does not
    declare is refused."""

    model_config = ConfigDict(from_attributes=True, extra="forbid")


def _iso(moment: datetime) -> str:
    return moment.isoformat()


# A moment as the API has always written it: Python's ISO 8601 form, offset as stored
# ("+00:00" on PostgreSQL, none on SQLite), not pydantic's "Z".
Timestamp = Annotated[datetime, PlainSerializer(_iso, return_type=str)]


def _absent(value: object) -> bool:
    return value is None


def sometimes() -> Any:
    """A field the API shows only where it is known: left out when None, never written as
    null (the schema still names it, as optional)."""
    return Field(default=None, exclude_if=_absent)
