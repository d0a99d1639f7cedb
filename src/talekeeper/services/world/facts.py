"""The path's events as the fold reads them (``fact_of``: a path read's row to a
``projection.Fact``).

Invariant: a fact says exactly what its row does (its ids, kind, entities' names and
kinds, value, origin and evidence). Every turn folds every event of its path, so this runs
thousands of times a turn in a long story: stored words become enums by a dict lookup
(calling an enum class costs several times that), and the entity rows a read shares give
one ``Ref`` each.
"""

from __future__ import annotations

import functools

from talekeeper.services.world.projection import Fact, Ref
from talekeeper.storage.repositories.world import EntityRow, PathEvent
from talekeeper.storage.vocabulary import EntityKind, EventKind, EventOrigin

_KINDS = {k.value: k for k in EventKind}
_ORIGINS = {o.value: o for o in EventOrigin}
_ENTITY_KINDS = {k.value: k for k in EntityKind}


def ref_of(row: EntityRow | None) -> Ref | None:
    return None if row is None else _row_ref(row)


@functools.lru_cache(maxsize=4096)
def _row_ref(row: EntityRow) -> Ref:
    # A row is its whole value (id, kind, name, aliases): a renamed entity is a new key.
    return Ref(row.id, row.name, _ENTITY_KINDS[row.kind])


def fact_of(row: PathEvent) -> Fact:
    event = row.event
    return Fact(
        event.id,
        event.action_id,
        _KINDS[event.kind],
        ref_of(row.subject),
        ref_of(row.object),
        ref_of(row.target),
        event.value,
        _ORIGINS[event.origin],
        event.evidence,
    )
