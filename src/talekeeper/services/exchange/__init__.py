"""Export and import of a whole adventure in Talekeeper's own JSON format.

Invariants:

- Full fidelity: the tree (every branch, every action in every state, takes,
  the redo stack, deleted rows), plot components, persona, toggles, the Scene,
  story cards (with their rules: always on, secondary keywords and their rule; a
  file from before them imports its cards with the defaults), Insights snapshots,
  memories (every status, with the replies that used them) and every Story Summary
  version, with their timestamps.
- Rows are named by keys local to the file (1..n in creation order), never by
  database ids, so ``export(import(f)) == f`` for any file this version writes (imported
  by a user whose library holds the sources it names, see below).
- An import is read and checked whole before the database is written
  (``plan``): a bad file is refused with the JSON path of the first problem and
  nothing is kept. Then it is written in one short transaction of bulk inserts
  (``store``), so the write lock is held for the inserts alone, never for the
  checks, the snapshots' JSON or a memory's terms.
- An import holds no more than one adventure may: its lists within
  ``limits.MAX_BRANCHES``, ``MAX_ACTIONS``, ``MAX_CARDS`` and ``MAX_MEMORIES``
  (checked on the file's counts before any entry is read) and at most
  ``fileformat.USES_MAX`` uses of memories; no value nested deeper than
  ``fileformat.MAX_NESTING`` and no text a UTF-8 store cannot hold. Every check
  is linear in the file, and none recurses into a client's value.
- Insights snapshots are copied verbatim: they record what the model was shown
  when the reply was generated, ids included.
- What a reply leaves for the next turn (its placement record, ``services.prompt.
  placement``) is not in the file: an import reads it from the reply's snapshot, as
  migration 0013 read the snapshots already stored, with the held cards translated to the
  new adventure's (``placements``). So the first ``cache`` turn after an import keeps in
  place what the next turn of the exported adventure would have.
- Memory vectors are not exported: they belong to one embedding model, and the
  bank re-embeds imported memories over the following runs. Their terms are
  recomputed from their text; revisions start again at 1, and the adventure's revision
  counter at the number of memories.
- Library sources attached to the adventure travel by reference (``knowledge``: title,
  file name, kind, size, passage count), never their passages: they belong to a user's
  library. An import attaches the importing user's own source of the same file name and
  size (else of the same title) and reports each reference it could not match
  (``Imported.warnings``); a missing source never fails an import. At most
  ``library.MAX_ATTACHED`` references, checked like the other lists.
- The format is declared once, as pydantic models of each version (``fileformat``; a data
  format, the one place in the services that uses pydantic): the export builds one and
  dumps it, an import validates the file against it. A field no version declares is
  refused, and so is a value of the wrong type: nothing is coerced.
- Version 3 is version 2 with ``knowledge``; version 4 is version 3 with the world
  (``world_entities`` and ``world_events``: every event on any branch and take, the
  player's and dismissed ones included, its entities by their keys). An export is
  written as the lowest version that holds what the adventure has: 4 when its world has
  an entity or an event, else 3 when a source is attached, else 2. A version 1 file still
  imports: its ``story_summary`` becomes the player's Story Summary version before the
  first action of the first branch.
- Version 5 is version 4 with the lore clerk's ``card_proposals``, in every state, each
  naming its actions and its card by their file keys (``proposals``); written when the
  adventure has a proposal. An older file imports with none: the clerk proposes again from
  its story.
- A file from before the world (versions 1 to 3) imports with the world the rules read
  from its actions, read while the file is planned, outside the write: the events play
  would have written as each action was (``world.derive.derive_all``). So
  ``export(import(f))`` is ``f`` for a file this version writes; an older file comes back
  as version 4, with its world (and, from version 1, its Story Summary version). At most
  ``limits.MAX_WORLD_ENTITIES`` entities and ``MAX_WORLD_EVENTS`` events, checked like the
  other lists; an entity is one per kind and name key, and an event names entities of the
  kinds its kind does (``world.events.ROLES``).
- A story already in the database from before the world (an upgraded one: the world's
  backlog) gets its world the same way, once, at the start of background work
  (``backlog``): its tree read as its file would list it (``outbound.story_entries``),
  its world planned as an older file's (``world.derived``) and inserted as an import
  inserts it (``store.write_world``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from talekeeper.services.common import limits
from talekeeper.services.exchange.fileformat import ExportedFile, SourceRef
from talekeeper.services.exchange.outbound import export, export_file
from talekeeper.services.exchange.plan import plan_import
from talekeeper.services.exchange.store import write
from talekeeper.services.memory.base import MemoryService
from talekeeper.storage.models import Adventure
from talekeeper.storage.repositories.story import StoryRepository

__all__ = [
    "ExportedFile",
    "Imported",
    "SourceRef",
    "export",
    "export_file",
    "import_adventure",
    "import_with_report",
]


@dataclass(frozen=True)
class Imported:
    """An import's outcome: the new adventure, and what of the file it could not keep."""

    adventure: Adventure
    attached: list[int]  # the importing user's library sources now attached, by id
    unmatched: list[SourceRef]  # references to sources that user's library lacks

    @property
    def warnings(self) -> list[str]:
        """One message per thing not kept, each saying what to do about it."""
        return [
            f"The library source {limits.quoted(ref.title, 80)} "
            f"({limits.quoted(ref.filename, 80)}, {ref.size_bytes:,} bytes) is not in your "
            "library, so it was not attached: add the file to your library, then attach it "
            "to this adventure."
            for ref in self.unmatched
        ]


def import_with_report(
    session: Session, user_id: int, data: object, memory: MemoryService
) -> Imported:
    """A new adventure of ``user_id`` from an export file (parsed JSON), with what could
    not be kept. Call it before the session has run a statement: the session takes the
    write lock at its first one, which is then the adventure's insert, after every check.
    Its background work is asked for through ``memory`` in the same transaction (imported
    memories carry no vectors, and a long story may be due memories), so whichever queue
    the database has runs it without waiting for a turn."""
    plan = plan_import(data, user_id)  # every check and all the CPU work: no write yet
    written = write(session, plan)
    memory.schedule(session, written.adventure_id, user_id)
    adventure = StoryRepository(session).adventure(written.adventure_id, user_id)
    assert adventure is not None
    return Imported(adventure, written.attached, written.unmatched)


def import_adventure(
    session: Session, user_id: int, data: object, memory: MemoryService
) -> Adventure:
    """``import_with_report``'s adventure alone."""
    return import_with_report(session, user_id, data, memory).adventure
