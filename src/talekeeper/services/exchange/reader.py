"""Typed, bounded reading of an export file: every problem is refused with the JSON path of
the value and what it must be, and nothing here recurses into a client's value or copies
more of it than a message shows."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from talekeeper.core.errors import InvalidInput
from talekeeper.services import limits
from talekeeper.services.exchange.fileformat import ENTRY_CAPS, MAX_INTEGER, MAX_NESTING

NOT_VALID = "Not a valid Talekeeper export"
_SURROGATE = re.compile("[\ud800-\udfff]")


def shown(value: Any) -> str:
    """A client's value as a message may repeat it: a scalar, cut short; a list or an
    object by its kind alone (it may be huge or nested deep)."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return limits.quoted(value)


class Reader:
    """Typed access to one object of the file, with its JSON path for every message."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise InvalidInput(f"{NOT_VALID}: {where} must be an object.")
        self.data, self.where = data, where

    def fail(self, key: str, what: str) -> InvalidInput:
        return InvalidInput(f"{NOT_VALID}: {self.where}.{key} {what}.")

    def text(self, key: str, limit: int, *, required: bool = False) -> str:
        value = self.data.get(key, "")
        if not isinstance(value, str) or len(value) > limit or (required and not value.strip()):
            raise self.fail(
                key,
                f"must be {'non-empty ' if required else ''}text of at most {limit:,} characters",
            )
        return value

    def integer(self, key: str, *, optional: bool = False, minimum: int = 0) -> int | None:
        value = self.data.get(key)
        if value is None and optional:
            return None
        if (
            not isinstance(value, int)
            or isinstance(value, bool)
            or not minimum <= value <= MAX_INTEGER
        ):
            raise self.fail(key, f"must be a whole number from {minimum} to {MAX_INTEGER}")
        return value

    def number(self, key: str, *, minimum: int = 0) -> int:
        value = self.integer(key, minimum=minimum)
        assert value is not None
        return value

    def boolean(self, key: str, *, default: bool = True) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def choice(self, key: str, allowed: tuple[str, ...]) -> str:
        value = self.data.get(key)
        if not isinstance(value, str) or value not in allowed:
            raise self.fail(key, f"is {shown(value)}; it must be one of {', '.join(allowed)}")
        return value

    def ref(self, key: str, keys: set[int] | dict[int, Any], what: str) -> int:
        """A file key that must name one of ``keys``."""
        value = self.number(key, minimum=1)
        if value not in keys:
            raise self.fail(key, f"names no {what}")
        return value

    def optional_ref(self, key: str, keys: set[int] | dict[int, Any], what: str) -> int | None:
        return None if self.data.get(key) is None else self.ref(key, keys, what)

    def time(self, key: str) -> datetime:
        value = self.data.get(key)
        try:
            if not isinstance(value, str):
                raise ValueError("not text")
            parsed = datetime.fromisoformat(value)
            if parsed.tzinfo is None:
                raise ValueError("no zone")
            parsed.astimezone(UTC)  # stored as UTC: a time that cannot be is refused here
        except (ValueError, OverflowError):
            raise self.fail(key, "must be an ISO 8601 time with a zone") from None
        return parsed

    def optional_time(self, key: str) -> datetime | None:
        return None if self.data.get(key) is None else self.time(key)

    def items(self, key: str) -> list[Reader]:
        value = self.data.get(key, [])
        if not isinstance(value, list):
            raise self.fail(key, "must be a list")
        return [Reader(item, f"{self.where}.{key}[{i}]") for i, item in enumerate(value)]

    def distinct(self, key: str, keys: set[int] | dict[int, Any], what: str) -> list[int]:
        """A list of distinct file keys, each naming one of ``keys``."""
        value = self.data.get(key, [])
        if not isinstance(value, list):
            raise self.fail(key, f"must be a list of {what} keys")
        seen: set[int] = set()
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, int) or item not in keys:
                raise self.fail(f"{key}[{i}]", f"names no {what}")
            if item in seen:
                raise self.fail(f"{key}[{i}]", f"names the same {what} twice")
            seen.add(item)
        return value


def keys_of(readers: list[Reader]) -> set[int]:
    """The ``key`` of each entry of a list, each a distinct whole number."""
    seen: set[int] = set()
    for reader in readers:
        key = reader.number("key", minimum=1)
        if key in seen:
            raise InvalidInput(f"{NOT_VALID}: {reader.where}.key {key} is used twice.")
        seen.add(key)
    return seen


def check_counts(root: Reader) -> None:
    """Each list of the file within what one adventure may hold, before any entry is read."""
    for section, (cap, what) in ENTRY_CAPS.items():
        value = root.data.get(section)
        if isinstance(value, list) and len(value) > cap:
            raise InvalidInput(
                f"This file has {len(value):,} {what}; an adventure holds at most {cap:,}. "
                f"Remove some from file.{section} before importing.",
                code="limit_reached",
            )


def check_values(data: Any) -> None:
    """No value of the file nests deeper than ``MAX_NESTING``, and no text holds what no
    UTF-8 store can (a lone surrogate, ``"\\ud800"`` in JSON); walked without recursion."""
    stack: list[tuple[Any, int]] = [(data, 1)] if isinstance(data, dict | list) else []
    while stack:
        value, depth = stack.pop()
        if depth > MAX_NESTING:
            raise InvalidInput(
                f"{NOT_VALID}: a value nests more than {MAX_NESTING} lists or objects deep; "
                "an export never does. Was the file changed by hand?"
            )
        children = [*value, *value.values()] if isinstance(value, dict) else value
        for child in children:
            if isinstance(child, str):
                if _SURROGATE.search(child):
                    raise InvalidInput(
                        f"{NOT_VALID}: the text {shown(child)} holds a lone surrogate (an "
                        "escape such as \\ud800 that is half of a character); remove it."
                    )
            elif isinstance(child, dict | list):
                stack.append((child, depth + 1))
