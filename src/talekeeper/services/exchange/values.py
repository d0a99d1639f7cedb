"""The values of the export file's fields: the types its models are built of, and how a
value is refused.

Invariants:

- Validated for an import (``context=IMPORT``), a value is also held to what one adventure
  may hold: lengths and ranges, the values a choice takes. Built by the export it is only
  typed, so an export never fails on what the database holds.
- No value is coerced: a number is never read from text, a boolean is never a number, and
  text is never read from anything else.
- A time is aware: read from ISO 8601 with a zone, written as ``datetime.isoformat()``.
- A value is refused with a ``PydanticCustomError`` of type ``FIELD`` (what it must be,
  said after its JSON path) or ``ENTRY`` (a sentence of its own, said after the path);
  ``reader`` makes the import's message of it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, PlainSerializer, PlainValidator, ValidationInfo
from pydantic_core import PydanticCustomError

from talekeeper.services.common import limits

MAX_INTEGER = 2**31 - 1  # depths, takes and keys fit a 32-bit column on every database
IMPORT: Final = {"import": True}  # the context that holds a file to an import's limits
FIELD = "export_field"
ENTRY = "export_entry"


def refusal(kind: str, what: str) -> PydanticCustomError:
    # The message is a template: ``what`` goes in as a value, so a brace in it stays text.
    return PydanticCustomError(kind, "{what}", {"what": what})


def shown(value: object) -> str:
    """A client's value as a message may repeat it: a scalar, cut short; a list or an
    object by its kind alone (it may be huge or nested deep)."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return limits.quoted(value)


def importing(info: ValidationInfo) -> bool:
    return info.context is IMPORT


def chars(limit: int, *, required: bool = False) -> PlainValidator:
    what = f"must be {'non-empty ' if required else ''}text of at most {limit:,} characters"

    def check(value: object, info: ValidationInfo) -> str:
        if not isinstance(value, str) or (
            importing(info) and (len(value) > limit or (required and not value.strip()))
        ):
            raise refusal(FIELD, what)
        return str(value)  # a StrEnum's value, as the file spells it

    return PlainValidator(check)


def maybe_chars(limit: int) -> PlainValidator:
    what = f"must be null or text of at most {limit:,} characters"

    def check(value: object, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) or (importing(info) and len(value) > limit):
            raise refusal(FIELD, what)
        return str(value)

    return PlainValidator(check)


def whole(minimum: int = 0, *, optional: bool = False) -> PlainValidator:
    what = f"must be a whole number from {minimum} to {MAX_INTEGER}"

    def check(value: object, info: ValidationInfo) -> int | None:
        if value is None and optional:
            return None
        if (
            not isinstance(value, int)
            or isinstance(value, bool)
            or (importing(info) and not minimum <= value <= MAX_INTEGER)
        ):
            raise refusal(FIELD, what)
        return value

    return PlainValidator(check)


def choice(allowed: tuple[str, ...]) -> PlainValidator:
    def check(value: object, info: ValidationInfo) -> str:
        if not isinstance(value, str) or (importing(info) and value not in allowed):
            raise refusal(FIELD, f"is {shown(value)}; it must be one of {', '.join(allowed)}")
        return str(value)

    return PlainValidator(check)


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise refusal(FIELD, "must be true or false")
    return value


def _time(value: object) -> datetime:
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value
    try:
        if not isinstance(value, str):
            raise ValueError("not text")
        parsed = datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            raise ValueError("no zone")
        parsed.astimezone(UTC)  # stored as UTC: a time that cannot be is refused here
    except (ValueError, OverflowError):
        raise refusal(FIELD, "must be an ISO 8601 time with a zone") from None
    return parsed


def _maybe_time(value: object) -> datetime | None:
    return None if value is None else _time(value)


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


Flag = Annotated[bool, PlainValidator(_flag)]
Time = Annotated[datetime, PlainValidator(_time), PlainSerializer(_iso, return_type=str)]
MaybeTime = Annotated[
    datetime | None,
    PlainValidator(_maybe_time),
    PlainSerializer(_iso, return_type=str | None),
]
Key = Annotated[int, whole(1)]  # an entry's own key, or a key naming another entry
MaybeKey = Annotated[int | None, whole(1, optional=True)]
Depth = Annotated[int, whole(-1)]  # a player's memory or summary sits before depth 0
Count = Annotated[int, whole()]
MaybeCount = Annotated[int | None, whole(optional=True)]


class Entry(BaseModel):
    """One object of the file: strict, immutable, refusing a field it does not declare."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def names_list(cap: int, longest: int) -> PlainValidator:
    """A list of at most ``cap`` names of at most ``longest`` characters, none blank."""
    what = f"must be a list of at most {cap} names of at most {longest} characters"

    def check(value: object, info: ValidationInfo) -> list[str]:
        names: list[str] = value if isinstance(value, list) else []
        if (
            not isinstance(value, list)
            or not all(isinstance(name, str) for name in names)
            or (
                importing(info)
                and (
                    len(names) > cap
                    or not all(name.strip() and len(name) <= longest for name in names)
                )
            )
        ):
            raise refusal(FIELD, what)
        return [str(name) for name in names]

    return PlainValidator(check)
