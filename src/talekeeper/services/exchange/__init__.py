"""Export and import of a whole adventure in Talekeeper's own JSON format.

Invariants:

- Full fidelity: the tree (every branch, every action in every state, takes,
  the redo stack, deleted rows), plot components, persona, toggles, the Scene,
  story cards (with their rules: always on, secondary keywords and their rule; a
  file from before them imports its cards with the defaults), Insights snapshots,
  memories (every status, with the replies that used them) and every Story Summary
  version, with their timestamps.
- Rows are named by keys local to the file (1..n in creation order), never by
  database ids, so ``export(import(f)) == f`` for any file we wrote.
- An import is read and checked whole before the database is written
  (``plan``): a bad file is refused with the JSON path of the first problem and
  nothing is kept. Then it is written in one short transaction of bulk inserts
  (``store``), so the write lock is held for the inserts alone, never for the
  checks, the JSON or a memory's terms.
- An import holds no more than one adventure may: its lists within
  ``limits.MAX_BRANCHES``, ``MAX_ACTIONS``, ``MAX_CARDS`` and ``MAX_MEMORIES``
  (checked on the file's counts before any entry is read) and at most
  ``fileformat.USES_MAX`` uses of memories; no value nested deeper than
  ``fileformat.MAX_NESTING`` and no text a UTF-8 store cannot hold. Every check
  is linear in the file, and none recurses into a client's value.
- Insights snapshots are copied verbatim: they record what the model was shown
  when the reply was generated, ids included.
- Memory vectors are not exported: they belong to one embedding model, and the
  bank re-embeds imported memories over the following runs. Their terms are
  recomputed from their text; revisions start again at 1, and the adventure's revision
  counter at the number of memories.
- A version 1 file still imports: its ``story_summary`` becomes the player's
  Story Summary version before the first action of the first branch.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from talekeeper.services.exchange.outbound import export
from talekeeper.services.exchange.plan import plan_import
from talekeeper.services.exchange.store import write
from talekeeper.storage.models import Adventure

__all__ = ["export", "import_adventure"]


def import_adventure(session: Session, user_id: int, data: Any) -> Adventure:
    """A new adventure of ``user_id`` from an export file (parsed JSON). Call it before
    the session has run a statement: the session takes the write lock at its first one,
    which is then the adventure's insert, after every check."""
    plan = plan_import(data, user_id)  # every check and all the CPU work: no write yet
    adventure = session.get(Adventure, write(session, plan))
    assert adventure is not None
    return adventure
