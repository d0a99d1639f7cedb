"""Card proposals as the player sees them (docs/world.md, "The lore clerk"): listed for the
current path, accepted into a card (or, an update, into lines after a card's entry),
dismissed.

Invariants:

- Proposals are written by the lore clerk's background pass (``clerk_pass``, after each
  turn, through the seam every pass goes through): ``record`` makes one open proposal for
  each candidate of the current path (``clerk.candidates``) that is not ``same_entity``
  as a new card's proposal already made, in any state (a dismissed or accepted one is
  never offered again), one open update for each card with new lines
  (``card_updates.updates``), and gives each open one the path's draft.
- A model's entry (``drafter``, ``card_drafting``) stands while every sentence it cites is
  one of the path's draft (``model_holds``); then it gives way to the path's draft.
- Listing writes nothing: it reads the current path again and shows each open proposal
  a draft of it matches, with that draft (``shown``), so every line shown traces to an
  action of the path the player is on. A proposal the path no longer supports (its
  evidence undone, deleted, retried or edited away, or on another branch) is left out,
  still open, and is listed again when a path supports it.
- Accepting (``accepting``, then ``story.adventures.accept_proposal``) makes an ordinary
  card (the draft, or the fields the player edited, checked as any card is), or adds an
  update's lines after its card's entry, and marks the proposal accepted, in one unit of
  work; only an open proposal the current path lists can be accepted (else a 409 that
  says why). Dismissing marks an open proposal dismissed; reopening a dismissed one makes
  it open again. No card the player wrote is changed but by an update they accept.
- Another user's proposal reads as no proposal at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from talekeeper.core.errors import Conflict, InvalidInput, NotFound
from talekeeper.services.cards.rules import CardView, clean_keywords
from talekeeper.services.common.rendering import is_player, render
from talekeeper.services.story.access import owned
from talekeeper.services.story.tree import Story
from talekeeper.services.world import card_drafting, card_updates, clerk
from talekeeper.services.world.card_updates import CardText
from talekeeper.services.world.clerk import Draft, Line, PathText
from talekeeper.storage.models import CardProposal
from talekeeper.storage.repositories.proposals import ProposalRepository
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.repositories.world import WorldRepository
from talekeeper.storage.vocabulary import EntityKind, ProposalKind, ProposalState

_CARD_KINDS = (EntityKind.PERSON, EntityKind.PLACE, EntityKind.ITEM, EntityKind.FACTION)


@dataclass(frozen=True)
class EvidenceView:
    action_id: int
    text: str


@dataclass(frozen=True)
class ProposalView:
    id: int
    kind: ProposalKind
    name: str
    type: str
    keys: list[str]
    entry: str
    card_id: int | None
    evidence: list[EvidenceView]
    state: ProposalState

    @classmethod
    def of(cls, row: CardProposal, made: Draft | None = None) -> ProposalView:
        """The row as stored, or with the current path's draft ``made``."""
        if made is None:
            lines = stored_lines(row)
            name, type_, keys, entry = row.name, row.type, stored_keys(row), row.entry
        else:
            made = shown(row, made)
            lines = made.evidence
            name, type_, keys, entry = made.name, made.type, list(made.keys), made.entry
        evidence = [EvidenceView(line.action_id, line.text) for line in lines]
        return cls(
            id=row.id,
            kind=ProposalKind(row.kind),
            name=name,
            type=type_,
            keys=keys,
            entry=entry,
            card_id=row.card_id,
            evidence=evidence,
            state=ProposalState(row.state),
        )


def stored_lines(row: CardProposal) -> tuple[Line, ...]:
    return tuple(
        Line(int(str(e["action_id"])), str(e["text"]))
        for e in _json(row.evidence)
        if isinstance(e, dict)
    )


def stored_keys(row: CardProposal) -> list[str]:
    """The proposal's names as ``card_proposals.keys`` holds them."""
    return [str(k) for k in _json(row.keys)]


def model_holds(row: CardProposal, made: Draft) -> bool:
    """Whether the entry a model wrote for ``row`` still rests on the path: every story
    sentence it cites is one of the path's draft ``made``."""
    if not row.drafter:
        return False
    return set(stored_lines(row)) <= set(made.evidence)


def shown(row: CardProposal, made: Draft) -> Draft:
    """The draft ``row`` shows on a path whose own draft is ``made``: the model's entry and
    evidence while they hold (``model_holds``), else ``made``."""
    if not model_holds(row, made):
        return made
    return Draft(made.key, made.name, made.type, made.keys, row.entry, stored_lines(row))


def lines_json(lines: Sequence[Line]) -> str:
    """Evidence as ``card_proposals.evidence`` holds it (``stored_lines`` reads it back)."""
    return json.dumps(
        [{"action_id": e.action_id, "text": e.text} for e in lines], ensure_ascii=False
    )


def _json(text: str) -> list[dict[str, object]] | list[str]:
    value = json.loads(text or "[]")
    return value if isinstance(value, list) else []


def listed(story: Story) -> list[ProposalView]:
    """The open proposals the current path supports, each with the path's draft."""
    return [
        ProposalView.of(m.row, m.made)
        for m in matched(story)
        if m.row is not None and m.row.state == ProposalState.OPEN
    ]


@dataclass(frozen=True)
class Match:
    """A draft the path supports, and the proposal already made for it (None: none yet)."""

    row: CardProposal | None
    made: Draft
    kind: ProposalKind
    card_id: int | None = None  # an update's card


def matched(story: Story) -> list[Match]:
    """The path's new cards (``clerk.candidates``, in order of first mention), then its
    updates (``card_updates.updates``, in card order), each with its proposal. Writes
    nothing."""
    session, adventure = story.session, story.adventure
    path = [
        PathText(
            a.id, render(a.type, a.text), not is_player(a.type) or a.type == "story", a.created_at
        )
        for a in story.repo.path(story.lineage())
    ]
    rows_ = StoryRepository(session).cards(adventure.id)
    cards = [
        CardText(c.id, c.name, c.type, c.keywords, c.entry, r.created_at)
        for r, c in zip(rows_, map(CardView.of, rows_), strict=True)
    ]
    rows = ProposalRepository(session).proposals(adventure.id)
    news = [r for r in rows if r.kind == ProposalKind.NEW]
    taken = [[c.name, *c.keywords] for c in cards]
    out: list[Match] = []
    known = _known(session, adventure.id)
    for entity, made in clerk.candidates(path, taken, adventure.persona_name, known):
        forms = [entity.name, *entity.keys]
        row = next((r for r in news if clerk.same_entity(forms, [r.name, *stored_keys(r)])), None)
        out.append(Match(row, made, ProposalKind.NEW))
    olds = [r for r in rows if r.kind == ProposalKind.UPDATE]
    offered: dict[int, list[str]] = {}
    for r in olds:
        if r.state == ProposalState.DISMISSED and r.card_id is not None:
            offered.setdefault(r.card_id, []).extend(e.text for e in stored_lines(r))
    for card, made in card_updates.updates(path, cards, adventure.persona_name, offered):
        row = next(
            (r for r in olds if r.card_id == card.id and r.state == ProposalState.OPEN), None
        )
        out.append(Match(row, made, ProposalKind.UPDATE, card.id))
    return out


def record(story: Story, found: Sequence[Match]) -> bool:
    """Write what ``matched`` found (``found``): a new open proposal for each draft without
    one, the path's draft on each open one (only what changed); whether anything was
    written. The lore clerk's background pass calls it in its write transaction."""
    wrote = False
    for m in found:
        if m.row is None:
            row = CardProposal(
                adventure_id=story.adventure.id,
                kind=m.kind,
                state=ProposalState.OPEN,
                card_id=m.card_id,
                **_values(m.made),
            )
            ProposalRepository(story.session).add(row)  # the next candidate sees it
            wrote = True
        elif m.row.state == ProposalState.OPEN:
            wrote = _fill(m.row, m.made) or wrote
    return wrote


def _known(session: Session, adventure_id: int) -> dict[str, str]:
    """The world's people, places, items and factions: name -> kind."""
    rows = WorldRepository(session).entities(adventure_id)
    return {r.name: r.kind for r in rows if r.kind in _CARD_KINDS}


def _values(made: Draft) -> dict[str, str]:
    return {
        "key": made.key,
        "name": made.name,
        "type": made.type,
        "keys": json.dumps(list(made.keys), ensure_ascii=False),
        "entry": made.entry,
        "evidence": lines_json(made.evidence),
    }


def _stale(row: CardProposal | None, made: Draft) -> bool:
    """Whether ``record`` would write: no proposal yet, or an open one with another draft."""
    if row is None:
        return True
    if row.state != ProposalState.OPEN:
        return False
    if row.drafter and not model_holds(row, made):
        return True  # the model's entry no longer rests on the path: the path's draft
    return any(getattr(row, k) != v for k, v in _values(shown(row, made)).items())


def pending(found: Sequence[Match]) -> bool:
    """Whether ``record`` would write any of ``found`` (``matched``)."""
    return any(_stale(m.row, m.made) for m in found)


def waiting(found: Sequence[Match]) -> list[int]:
    """The open proposals of ``found`` (``matched``), by id: those a player could accept."""
    return [m.row.id for m in found if m.row is not None and m.row.state == ProposalState.OPEN]


def _fill(row: CardProposal, made: Draft) -> bool:
    """The row takes the draft (a model's entry while it holds: ``shown``), writing only
    what changed; whether anything did. A model's entry that no longer holds gives way to
    the path's draft, and the model may be asked again."""
    changed = False
    if row.drafter and not model_holds(row, made):
        row.drafter, changed = None, True
    for name, value in _values(shown(row, made)).items():
        if getattr(row, name, None) != value:
            setattr(row, name, value)
            changed = True
    return changed


def proposal_row(session: Session, proposal_id: int, user_id: int) -> CardProposal:
    row = ProposalRepository(session).proposal(proposal_id)
    return owned(session, row, user_id, NotFound(f"There is no card proposal {proposal_id}."))


@dataclass(frozen=True)
class Acceptance:
    """What accepting a proposal does: a new card with ``fields``, or (an update) the
    entry ``entry`` for card ``card_id``."""

    row: CardProposal
    fields: dict[str, object]
    card_id: int | None = None
    entry: str = ""


def accepting(
    story: Story,
    proposal_id: int,
    edited: Mapping[str, object],
    found: Sequence[Match] | None = None,
) -> Acceptance:
    """What accepting the open proposal ``proposal_id`` the current path supports does
    (the path's draft; ``edited``: the fields the player changed first, by the proposal's
    names ``name``, ``type``, ``keys``, ``entry``; an update takes only ``entry``, the
    lines it adds; ``found``: the path's ``matched``, when the caller has it). ``accepted``
    marks it once done (``story.adventures.accept_proposal``)."""
    changes = dict(edited)
    if "keys" in changes:  # checked here, so that a refusal names the field sent
        changes["keywords"] = list(clean_keywords(changes.pop("keys"), "keys"))
    row = _open(story, proposal_id)
    found = matched(story) if found is None else found
    made = next((m.made for m in found if m.row is not None and m.row.id == row.id), None)
    if made is None:
        raise Conflict(
            f"Card proposal {proposal_id} is no longer supported by the story on this path "
            "(its sentences were undone, edited or are on another branch)."
        )
    _fill(row, made)
    made = shown(row, made)
    if row.kind == ProposalKind.UPDATE:
        other = sorted(set(changes) - {"entry"})
        if other:
            raise InvalidInput(
                f"An update adds lines to its card's entry: send only 'entry' (the lines), "
                f"not {', '.join(repr(o) for o in other)}."
            )
        lines = changes.get("entry", made.entry)
        return Acceptance(row, {}, row.card_id, lines if isinstance(lines, str) else "")
    fields: dict[str, object] = {
        "name": made.name,
        "type": made.type,
        "keywords": list(made.keys),
        "entry": made.entry,
    }
    fields.update(changes)
    return Acceptance(row, fields)


def written_by(row: CardProposal, model: str, written: card_drafting.Written) -> None:
    """A model's entry on the proposal (``card_drafting``); none kept: the story's own
    sentences stay, and the model is not asked again ("")."""
    if not written.lines:
        row.drafter = ""
        return
    row.entry, row.evidence, row.drafter = written.entry, lines_json(written.evidence), model


def accepted(row: CardProposal, card_id: int) -> None:
    row.state, row.card_id = ProposalState.ACCEPTED, card_id


def dismiss(story: Story, proposal_id: int) -> ProposalView:
    row = _open(story, proposal_id)
    row.state = ProposalState.DISMISSED
    return ProposalView.of(row)


def reopen(story: Story, proposal_id: int) -> ProposalView:
    row = _in(story, proposal_id)
    if row.state != ProposalState.DISMISSED:
        raise Conflict(f"Card proposal {proposal_id} is {row.state}; only a dismissed one reopens.")
    row.state = ProposalState.OPEN
    return ProposalView.of(row)


def _in(story: Story, proposal_id: int) -> CardProposal:
    row = ProposalRepository(story.session).proposal(proposal_id)
    if row is None or row.adventure_id != story.adventure.id:
        raise NotFound(f"There is no card proposal {proposal_id}.")
    return row


def _open(story: Story, proposal_id: int) -> CardProposal:
    row = _in(story, proposal_id)
    if row.state != ProposalState.OPEN:
        raise Conflict(f"Card proposal {proposal_id} is already {row.state}.")
    return row
