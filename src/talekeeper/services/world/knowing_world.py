"""Who knows what beyond the Memories: the Story Cards and the Current state of a turn that
addresses someone (docs/world.md, "Who knows what").

Invariants:

- Pure, as ``knowing`` is: only a turn that addresses someone, in ``label`` or ``strict``,
  is touched, and what is given is never changed (copies are marked or thinned).
- A card is the world's lore, not something that happened, so it has no witnesses: only
  a secret card (``known_by``) that the addressed character is not in on is marked.
  ``label`` names it in the note that heads the Memories section (so the Story Cards
  section, which heads the history in the ``cache`` layout, stays as it was); ``strict``
  leaves it out of that turn's Story Cards.
- In the Current state, each thing the player carries and each open quest is there by one
  event: the last one applied at its coordinate (``projection.coordinate``). The entry is
  unknown to the addressed character when that event is a secret they are not in on, or
  when they were not present at its action (``Presence.at``) and no ``learned`` event of
  theirs at or after it tells of it (``telling.told_about``, on the event's evidence and
  its thing's name). ``label`` follows the entry with "(Tobin was not there)" or "(a
  secret Tobin was not told)"; ``strict`` leaves it out. Where the player is, who is
  present and the time are the scene as everyone in it sees it: never marked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from talekeeper.services.cards.rules import FiredCard
from talekeeper.services.world.knowing import CardMark, EntryMark, Handling, Witness
from talekeeper.services.world.projection import (
    OPEN,
    Coordinate,
    Ref,
    WorldState,
    coordinate,
)
from talekeeper.services.world.secrets import in_on, secret_why
from talekeeper.services.world.telling import told_about
from talekeeper.services.world.witnesses import Presence, Step
from talekeeper.storage.vocabulary import WitnessMode


def setters(steps: Iterable[Step], ignored: Iterable[int]) -> dict[Coordinate, Step]:
    """The last applied event at each coordinate (events kept but not applied skipped)."""
    skip = set(ignored)
    found: dict[Coordinate, Step] = {}
    for depth, fact in steps:
        at = coordinate(fact)
        if at is not None and fact.id not in skip:
            found[at] = (depth, fact)
    return found


def _handling(mode: WitnessMode) -> Handling:
    return Handling.WITHHELD if mode is WitnessMode.STRICT else Handling.LABELLED


def _addressed(witness: Witness) -> tuple[Ref, Presence] | None:
    """Who the turn addresses and who was present along the path, when it touches what
    they are shown (None: it addresses no one, or the mode is ``off``)."""
    who, presence = witness.addressed, witness.presence
    if who is None or presence is None or witness.mode is WitnessMode.OFF:
        return None
    return who, presence


def cards_shown(
    cards: Sequence[FiredCard], witness: Witness
) -> tuple[list[FiredCard], tuple[CardMark, ...]]:
    """The cards a turn shows (``strict`` leaves out the secrets its addressed character
    is not in on) and the marks of those secrets."""
    found = _addressed(witness)
    if found is None:
        return list(cards), ()
    who, _ = found
    marks = tuple(
        CardMark(f.card.id, f.card.name, _handling(witness.mode), secret_why(f.card.known_by))
        for f in cards
        if f.card.known_by is not None and not in_on(f.card.known_by, who)
    )
    if witness.mode is not WitnessMode.STRICT:
        return list(cards), marks
    left_out = {m.card_id for m in marks}
    return [f for f in cards if f.card.id not in left_out], marks


def cards_note(name: str, marks: Sequence[CardMark]) -> str:
    """The line heading the Memories section of a ``label`` turn that names the secret
    cards its addressed character was not told ("" for none)."""
    labelled = [m.name for m in marks if m.handling is Handling.LABELLED]
    if not labelled:
        return ""
    return f"({name} was not told what these Story Cards say: {', '.join(labelled)}.)"


@dataclass(frozen=True)
class _Unknown:
    """Why an entry is unknown to the addressed character: the event it is there by, and
    whether that event is a secret they are not in on (else they were away at it)."""

    event_id: int
    why: str
    secret: bool


def _unknown(
    coord: Coordinate, entry: str, who: Ref, presence: Presence, witness: Witness
) -> _Unknown | None:
    """Why the entry at ``coord`` is unknown to ``who`` (None: they know it)."""
    found = witness.setters.get(coord)
    if found is None:
        return None
    depth, fact = found
    secret = witness.event_secrets.get(fact.id)
    if secret is not None:
        return None if in_on(secret, who) else _Unknown(fact.id, secret_why(secret), True)
    if who.id in {r.id for r in presence.at(depth)}:
        return None
    said = [fact.evidence, entry]
    if any(at >= depth and told_about(what, said) for at, what in witness.told):
        return None
    return _Unknown(fact.id, f"absent at action {depth}", False)


def state_shown(state: WorldState, witness: Witness) -> tuple[WorldState, tuple[EntryMark, ...]]:
    """The state the Current state section shows and the marks of its unknown entries."""
    addressed = _addressed(witness)
    if addressed is None:
        return state, ()
    who, presence = addressed
    marks: list[EntryMark] = []

    def shown(coord: Coordinate, entry: str) -> str | None:
        """The entry as shown: as it is, marked (``label``) or None (``strict``)."""
        unknown = _unknown(coord, entry, who, presence, witness)
        if unknown is None:
            return entry
        marks.append(EntryMark(unknown.event_id, entry, _handling(witness.mode), unknown.why))
        if witness.mode is WitnessMode.STRICT:
            return None
        mark = (
            f"a secret {who.name} was not told" if unknown.secret else f"{who.name} was not there"
        )
        return f"{entry} ({mark})"

    carried = [
        replace(item, name=name)
        for item in state.inventory
        if (name := shown(("holder", item.id), item.name)) is not None
    ]
    quests = []
    for quest in state.quests:
        name = shown(("quest", quest.name), quest.name) if quest.state in OPEN else quest.name
        if name is not None:
            quests.append(replace(quest, name=name))
    if not marks:
        return state, ()
    return replace(state, inventory=tuple(carried), quests=tuple(quests)), tuple(marks)
