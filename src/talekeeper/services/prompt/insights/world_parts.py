"""The world's parts of a stored Insights snapshot (``insights.stored`` states the format's
invariants): the state the turn read and what changed in it (``StatePart``), and who the
player's input addressed with what that character did not know (``WitnessPart``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field

from talekeeper.services.prompt.insights.part import Part
from talekeeper.storage.vocabulary import WitnessMode

if TYPE_CHECKING:
    from talekeeper.services.world.events import EventView
    from talekeeper.services.world.knowing import WitnessReport
    from talekeeper.services.world.projection import WorldState


class ChangePart(Part):
    """A world event since the previous turn read the world (``world.events.EventView``)."""

    id: int = 0
    action_id: int = 0
    kind: str = ""
    subject: str | None = None
    object: str | None = None
    value: str | None = None
    origin: str = ""
    evidence: str = ""
    overrides: int | None = None  # the player's event whose fact this one changed
    kept: str | None = None  # why it was kept as evidence and not applied (``Why``)


class QuestPart(Part):
    name: str = ""
    state: str = ""


def _change(event: EventView, state: WorldState) -> ChangePart:
    """One event since the previous turn, with what the fold did with it."""
    overrode = {o.event_id: o.player_event_id for o in state.overrides}
    why = state.why.get(event.id)
    return ChangePart.model_validate(event).model_copy(
        update={"overrides": overrode.get(event.id), "kept": why.value if why else None}
    )


class StatePart(Part):
    """The world's state the turn read (its Current state section), and what changed in it
    since the previous turn read it."""

    location: str | None = None
    present: list[str] = Field(default_factory=list)
    inventory: list[str] = Field(default_factory=list)
    time: str | None = None
    quests: list[QuestPart] = Field(default_factory=list)
    changed: list[ChangePart] = Field(default_factory=list)
    ignored: list[int] = Field(default_factory=list)  # events kept but not applied

    @classmethod
    def of(cls, state: WorldState | None, changes: Sequence[EventView]) -> StatePart:
        if state is None:
            return cls()
        return cls(
            location=state.location.name if state.location is not None else None,
            present=[r.name for r in state.present],
            inventory=[r.name for r in state.inventory],
            time=state.time,
            quests=[QuestPart(name=q.name, state=q.state) for q in state.quests],
            changed=[_change(c, state) for c in changes],
            ignored=list(state.ignored),
        )


class UnknownPart(Part):
    memory_id: int = 0
    why: str = ""  # "absent at actions 12–15"


class MarkPart(Part):
    """A secret card (``id``: the card's, ``name`` its name) or an entry of the Current
    state (``id``: the event it is there by, ``name`` the entry) the addressed character
    did not know, what the turn did with it and why."""

    id: int = 0
    name: str = ""
    handling: str = ""  # "labelled" or "withheld" (``knowing_world.Handling``)
    why: str = ""  # "a secret: known only to Mara and you", "absent at action 12"


class WitnessPart(Part):
    """Who the player's input addressed, and the memories that character did not witness:
    labelled or withheld by the adventure's witness mode (docs/world.md, "Who knows
    what"). A snapshot from before there was one reads as nobody addressed."""

    mode: str = WitnessMode.LABEL.value
    addressed: str | None = None
    how: str | None = None  # vocative, spoken_to, about_knowledge, acting (a shared story)
    words: str = ""  # the input's words that named them
    labelled: list[int] = Field(default_factory=list)
    withheld: list[int] = Field(default_factory=list)
    reasons: list[UnknownPart] = Field(default_factory=list)
    told: list[int] = Field(default_factory=list)  # not witnessed, but told of
    summary: str | None = None  # the Story Summary: "labelled", "withheld" or untouched
    cards: list[MarkPart] = Field(default_factory=list)  # secret cards not theirs
    state: list[MarkPart] = Field(default_factory=list)  # Current state entries not theirs

    @classmethod
    def of(cls, report: WitnessReport | None) -> WitnessPart:
        if report is None:
            return cls()
        return cls(
            mode=report.mode.value,
            addressed=report.addressed,
            how=report.how,
            words=report.words,
            labelled=list(report.labelled),
            withheld=list(report.withheld),
            reasons=[UnknownPart(memory_id=u.memory_id, why=u.why) for u in report.reasons],
            told=list(report.told),
            summary=report.summary,
            cards=[
                MarkPart(id=m.card_id, name=m.name, handling=m.handling, why=m.why)
                for m in report.cards
            ],
            state=[
                MarkPart(id=m.event_id, name=m.entry, handling=m.handling, why=m.why)
                for m in report.state
            ],
        )
