"""Secrets: a memory the player marks as known only by the characters it names
(``known_by``), whatever the story says of who was present (docs/world.md, "Who knows
what").

Invariants:

- ``known_by`` is None (no secret: who knows it is who witnessed it) or a list of names,
  each cleaned as any name the player gives (``names.clean_name``), two names of one key
  kept once, at most ``KNOWN_BY_MAX``. An empty list is a secret the player's character
  keeps alone. Everything is checked before anything is written.
- A character is in on a secret when one of its names is theirs: the same key, the same
  name told shorter ("Maren" for "Old Maren"), or their first name alone. The player's
  own character is in on every secret.
- Setting ``known_by`` changes nothing retrieval reads (text, pin, status), so no cache
  or revision moves; a withdrawn or deleted memory is refused as for any other edit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from sqlalchemy.orm import Session

from talekeeper.core.errors import InvalidInput
from talekeeper.services.memory import manage
from talekeeper.services.memory.base import MemoryService
from talekeeper.services.world.names import clean_name, key_of, told_shorter
from talekeeper.services.world.projection import PLAYER, Ref
from talekeeper.storage.models import Memory

KNOWN_BY_MAX = 20


def clean_known_by(value: object) -> list[str] | None:
    """``value`` as stored (see the invariants), or refused saying what to send."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(
            '\'known_by\' must be a list of names, e.g. ["Mara", "Tobin"] '
            "([] for a secret only your character keeps; null for none)."
        )
    if len(value) > KNOWN_BY_MAX:
        raise InvalidInput(f"'known_by' has {len(value):,} names; at most {KNOWN_BY_MAX} fit.")
    kept: dict[str, str] = {}
    for name in value:
        clean = clean_name(name, "name in 'known_by'")
        kept.setdefault(key_of(clean), clean)
    return list(kept.values())


def dumps(names: list[str] | None) -> str | None:
    return None if names is None else json.dumps(names, ensure_ascii=False)


def in_on(names: Sequence[str], who: Ref) -> bool:
    """Whether ``who`` is one of the characters ``names`` names (see the invariants), or
    the player's own character (a shared adventure's host's: ``party``), who keeps every
    secret the player marks."""
    if who.id == PLAYER:
        return True
    theirs = key_of(who.name)
    first = theirs.split(" ")[0] if theirs else ""
    for name in names:
        key = key_of(name)
        if key and (key in (theirs, first) or told_shorter(key, theirs)):
            return True
    return False


def secret_why(names: Sequence[str]) -> str:
    """Why a secret is unknown to someone not in on it."""
    return "a secret: known only to " + (", ".join(names) + " and you" if names else "you")


def edit_memory(
    session: Session,
    row: Memory,
    fields: Mapping[str, object],
    memory: MemoryService,
    user_id: int,
) -> None:
    """A memory's new text, pin and secret (``known_by``, where given: null clears it);
    everything checked before anything changes."""
    rest = {k: v for k, v in fields.items() if k != "known_by"}
    if "known_by" not in fields:
        manage.edit(session, row, rest, memory, user_id)
        return
    known_by = clean_known_by(fields["known_by"])
    manage.editable(row, "mark as a secret")
    if any(v is not None for v in rest.values()):
        manage.edit(session, row, rest, memory, user_id)
    row.known_by = dumps(known_by)
    session.flush()
