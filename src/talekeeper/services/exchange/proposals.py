"""Card proposals in the export file (version 5, ``card_proposals``; docs/world.md, "The
lore clerk"): what the lore clerk offered and what the player decided.

Invariants:

- Every proposal travels, in every state: an open one waits again after an import, and a
  dismissed or accepted one keeps its name from being proposed again (the player's
  decision is part of the adventure).
- A proposal names rows by the file's keys: each line of its evidence its action (a key
  of ``actions``), its card (an update's card, or the card it became) a key of ``cards``
  (their places in the list, from 1). A key that names no row is refused with the
  entry's JSON path, as every other reference of the file.
- What the clerk reads again (the entity's ``key``) travels as stored: the clerk compares
  names by it, so an import never offers again what the export had.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from talekeeper.services.exchange.proposal_entries import EvidenceLine, ProposalEntry
from talekeeper.services.exchange.rows import Row, ref
from talekeeper.services.world.clerk import Line
from talekeeper.services.world.proposals import lines_json, stored_keys, stored_lines
from talekeeper.storage.models import CardProposal


def exported(
    rows: Sequence[CardProposal], action_key: dict[int, int], card_key: dict[int, int]
) -> list[ProposalEntry]:
    """The adventure's proposals as the file lists them, in the order given (the repository
    gives the oldest first); a line whose action is gone (never, as actions are kept in
    every state) is left out."""
    out: list[ProposalEntry] = []
    for row in rows:
        lines = [line for line in stored_lines(row) if line.action_id in action_key]
        out.append(
            ProposalEntry(
                kind=row.kind,
                state=row.state,
                key=row.key,
                name=row.name,
                type=row.type,
                keys=stored_keys(row),
                entry=row.entry,
                evidence=[EvidenceLine(action=action_key[x.action_id], text=x.text) for x in lines],
                drafter=row.drafter,
                card=card_key.get(row.card_id) if row.card_id is not None else None,
                created_at=row.created_at,
                updated_at=row.updated_at,
            )
        )
    return out


@dataclass(frozen=True)
class PlannedProposal:
    """A proposal's columns, its card's file key and its evidence by action keys: the
    write resolves both to the new rows' ids (``store``)."""

    values: Row
    card: int | None
    evidence: list[tuple[int, str]]

    def row(self, actions: dict[int, int], cards: dict[int, int]) -> Row:
        lines = [Line(actions[key], text) for key, text in self.evidence]
        card = None if self.card is None else cards[self.card]
        return self.values | {"card_id": card, "evidence": lines_json(lines)}


def planned(
    entries: Sequence[ProposalEntry], action_keys: set[int], cards: int
) -> list[PlannedProposal]:
    """The file's proposals checked (every key they name is a row of the file) and planned."""
    out: list[PlannedProposal] = []
    card_keys = set(range(1, cards + 1))
    for i, p in enumerate(entries):
        where = f"file.card_proposals[{i}]"
        for j, line in enumerate(p.evidence):
            ref(line.action, action_keys, f"{where}.evidence[{j}].action", "action")
        card = ref(p.card, card_keys, f"{where}.card", "story card")
        values: Row = {
            "kind": p.kind,
            "state": p.state,
            "key": p.key,
            "name": p.name,
            "type": p.type,
            "keys": json.dumps(p.keys, ensure_ascii=False),
            "entry": p.entry,
            "drafter": p.drafter,
            "created_at": p.created_at,
            "updated_at": p.updated_at,
        }
        out.append(PlannedProposal(values, card, [(x.action, x.text) for x in p.evidence]))
    return out
