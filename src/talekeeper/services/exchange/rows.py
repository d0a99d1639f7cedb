"""The rows an import plans, and the checks that name an entry of the file by its JSON path.

Invariants:

- A planned row names the rows it refers to by the file's keys (``Ref``), resolved to new
  ids as the write inserts them (``store``).
- Every refusal here is an ``InvalidInput`` that says the file is not a valid export and
  names the entry's JSON path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from talekeeper.core.errors import InvalidInput
from talekeeper.services.exchange.reader import NOT_VALID

Ref = tuple[str, int | None]  # (the file's section, a key of it; None for no row)
Row = dict[str, object]  # a row's columns, as the insert takes them


@dataclass(frozen=True)
class Planned:
    """One row: its columns, and the columns that name other rows by their file keys."""

    values: Row
    key: int = 0  # the row's own file key, where other rows name it
    refs: dict[str, Ref] = field(default_factory=dict)  # set as the row is inserted
    later: dict[str, Ref] = field(default_factory=dict)  # set once every row exists
    uses: list[int] = field(default_factory=list)  # a memory's replies, by action key


class Keyed(Protocol):
    @property
    def key(self) -> int: ...


def keys_of(entries: Sequence[Keyed], section: str) -> set[int]:
    """The ``key`` of each entry of a list, each used once."""
    seen: set[int] = set()
    for i, entry in enumerate(entries):
        if entry.key in seen:
            raise InvalidInput(f"{NOT_VALID}: file.{section}[{i}].key {entry.key} is used twice.")
        seen.add(entry.key)
    return seen


def fail(where: str, what: str) -> InvalidInput:
    return InvalidInput(f"{NOT_VALID}: {where} {what}.")


def ref(key: int | None, keys: set[int], where: str, what: str) -> int | None:
    """A file key that names one of ``keys`` (or no row, where the file has none)."""
    if key is not None and key not in keys:
        raise fail(where, f"names no {what}")
    return key
