"""Who knows what, in play: when the player's input addresses a character, the memories that
character did not witness are labelled or left out of that turn's context, by the
adventure's ``witness_mode`` (docs/world.md, "Who knows what").

Invariants:

- Pure: the same retrieval, addressed character, presence and mode give the same result,
  and the retrieval given is never changed (a copy is labelled or thinned).
- Only a turn that addresses someone (``Witness.addressed``) is touched; ``off`` and a
  turn that addresses no one leave the retrieval exactly as it was, so the narrator's own
  knowledge is never reduced for narration that addresses no one. In a shared adventure
  several play, a turn that addresses no one is its actor's (``AddressKind.ACTING``):
  what the acting character did not witness is theirs not to know (docs/sharing.md).
- A memory is unknown to the addressed character when it has a source stretch and that
  character was not present at every action of it (``Presence.throughout``, the same
  reading the Memory Bank's witnesses use). A memory without a stretch (written by hand)
  has no witnesses derived, which is not "nobody": it is never labelled for absence.
- A secret (a memory whose ``known_by`` the player set: ``secrets``) is known to those it
  names ("in on it") and to no one else, whoever witnessed it: "— a secret Tobin was not
  told", its reason "a secret: known only to Mara and you".
- A memory the character did not witness but was told of (a ``learned`` event of theirs
  on the path, at or after its stretch began, whose words are the memory's: telling's
  ``told_about``) is known to them: it is neither labelled nor withheld, and the report
  lists it as ``told``. Undo the telling and the label comes back, by construction.
- The Story Summary tells everything and is witnessed by no one as a whole: a ``label``
  turn that addresses someone heads the Memories section with ``summary_note`` (the
  summary is the narrator's knowledge, not theirs); a ``strict`` one leaves the summary
  out of that turn's context (``for_summary`` says which; the build does it). A shared
  turn read as its actor's, who was present at every action of the path
  (``Witness.saw_all``), leaves the summary as it is: it tells nothing they missed.
- A memory the character witnessed in part is theirs in part. Its text is read sentence by
  sentence (``UsedMemory.said``: the actions each sentence comes from, read from all its
  passages); when every sentence with words comes from known actions and they saw at least
  one, the memory's text keeps what they saw, and what they missed goes on a line of its
  own under it, marked (``label``) or left out (``strict``), as do its passages from the
  actions they missed. It is listed, with "only its words and passages from then" (or
  "only the passages from then", when they saw all its words) in its reason. A memory
  whose sentences were not read falls back to the offered passages it states.
- ``label`` keeps every memory and marks each unknown one "— Tobin was not there";
  ``strict`` leaves the unknown ones out. Either way the report names them with why: the
  actions of the stretch at which the character was absent.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Literal

from talekeeper.services.memory.base import Retrieval, UsedMemory
from talekeeper.services.memory.terms import term_set
from talekeeper.services.world.projection import Coordinate, Ref
from talekeeper.services.world.secrets import in_on, secret_why
from talekeeper.services.world.telling import told_about
from talekeeper.services.world.witnesses import Presence, Step
from talekeeper.storage.vocabulary import WitnessMode


@dataclass(frozen=True)
class Witness:
    """What a turn knows of who it addresses: the character, how the input named them
    (``addressed.AddressKind``'s value) and with which words, the adventure's mode, and
    who was present along the path (read only when someone is addressed and the mode is
    not ``off``)."""

    mode: WitnessMode = WitnessMode.LABEL
    addressed: Ref | None = None
    how: str | None = None
    words: str = ""
    presence: Presence | None = None
    told: tuple[tuple[int, str], ...] = ()  # their ``learned`` events: (depth, what)
    secrets: Mapping[int, Sequence[str]] = field(default_factory=dict)  # memory id -> who knows
    # The event each coordinate of the state is there by, and the events' secrets
    # (``knowing_world``: the Current state's entries).
    setters: Mapping[Coordinate, Step] = field(default_factory=dict)
    event_secrets: Mapping[int, Sequence[str]] = field(default_factory=dict)
    # They were present at every action of the path (the actor of a shared turn who never
    # left the others): the Story Summary tells nothing they missed (``for_summary``).
    saw_all: bool = False


class Handling(StrEnum):
    """What a turn addressing someone did with something they do not know."""

    LABELLED = "labelled"
    WITHHELD = "withheld"


@dataclass(frozen=True)
class CardMark:
    """A secret card the addressed character is not in on, and why (``knowing_world``)."""

    card_id: int
    name: str
    handling: Handling
    why: str


@dataclass(frozen=True)
class EntryMark:
    """An entry of the Current state the addressed character does not know: the event it
    is there by, the entry as the section names it, and why (``knowing_world``)."""

    event_id: int
    entry: str
    handling: Handling
    why: str


@dataclass(frozen=True)
class Unknown:
    """A memory the addressed character did not witness, and why."""

    memory_id: int
    why: str  # "absent at actions 12–15"


# What a turn addressing someone does with the Story Summary, which no one witnessed as a
# whole: "labelled" (``summary_note`` heads the Memories section), "withheld" (left out,
# ``strict``), or None (no one addressed, ``off``, or no summary).
SummaryHandling = Literal["labelled", "withheld"] | None


@dataclass(frozen=True)
class WitnessReport:
    """Insights' ``witness``: who was addressed, and the memories labelled or withheld."""

    mode: WitnessMode
    addressed: str | None = None
    how: str | None = None
    words: str = ""
    labelled: tuple[int, ...] = ()
    withheld: tuple[int, ...] = ()
    reasons: tuple[Unknown, ...] = field(default_factory=tuple)
    told: tuple[int, ...] = ()  # memories they did not witness but were told of
    summary: SummaryHandling = None  # what the turn did with the Story Summary
    cards: tuple[CardMark, ...] = ()  # secret cards they are not in on
    state: tuple[EntryMark, ...] = ()  # entries of the Current state they do not know


def label(name: str) -> str:
    """The words after a memory its addressed character did not witness."""
    return f"— {name} was not there"


def summary_note(name: str) -> str:
    """The line that heads the Memories section of a ``label`` turn addressing ``name``:
    the Story Summary tells all, and is marked as the narrator's knowledge, not theirs."""
    return (
        f"(The Story Summary is the narrator's knowledge, not {name}'s: {name} knows only "
        f"what {name} witnessed or was told.)"
    )


def for_summary(report: WitnessReport, summary: str, saw_all: bool = False) -> WitnessReport:
    """``report`` with what the turn does with a Story Summary of ``summary`` (text); none
    when the one it is read for ``saw_all`` of the path (``Witness.saw_all``)."""
    if report.addressed is None or not summary.strip() or report.mode is WitnessMode.OFF:
        return report
    if saw_all:
        return report
    handling: SummaryHandling = "withheld" if report.mode is WitnessMode.STRICT else "labelled"
    return replace(report, summary=handling)


def secret_label(name: str) -> str:
    """The words after a secret its addressed character is not in on."""
    return f"— a secret {name} was not told"


def absent_during(presence: Presence, who: int, first: int, last: int) -> tuple[int, int] | None:
    """The first and last actions from ``first`` to ``last`` at which ``who`` was not
    present (None: present at all of them). Presence changes only at the depths that have
    events, so each stretch between two of them is one answer."""
    starts = [first]
    i = bisect_right(presence.depths, first)
    while i < len(presence.depths) and presence.depths[i] <= last:
        starts.append(presence.depths[i])
        i += 1
    ends = [*starts[1:], last + 1]
    absent = [
        (start, end - 1)
        for start, end in zip(starts, ends, strict=True)
        if who not in {r.id for r in presence.at(start)}
    ]
    if not absent:
        return None
    return absent[0][0], absent[-1][1]


def _why(memory: UsedMemory, who: Ref, presence: Presence) -> str | None:
    start, end = memory.source.get("source_start"), memory.source.get("source_end")
    if not isinstance(start, int):
        return None
    span = absent_during(presence, who.id, start, end if isinstance(end, int) else start)
    if span is None:
        return None
    first, last = span
    return f"absent at action {first}" if first == last else f"absent at actions {first}–{last}"


def _was_told(memory: UsedMemory, told: tuple[tuple[int, str], ...]) -> bool:
    """Whether one of the character's ``learned`` events, at or after the memory's stretch
    began (any, for a memory written by hand), tells what the memory or its passages say
    (``telling.told_about``)."""
    start = memory.source.get("source_start")
    if not isinstance(start, int):
        start = -1
    texts = [memory.text, *(p.text for p in memory.passages)]
    return any(depth >= start and told_about(what, texts) for depth, what in told)


def apply(retrieval: Retrieval, witness: Witness) -> tuple[Retrieval, WitnessReport]:
    """The retrieval as this turn's context takes it, and the report (see the invariants)."""
    who, presence = witness.addressed, witness.presence
    report = WitnessReport(
        witness.mode, who.name if who else None, witness.how if who else None, witness.words
    )
    if who is None or presence is None or witness.mode is WitnessMode.OFF:
        return retrieval, report
    unknown, told, labels = [], [], {}
    partial: dict[int, Split] = {}
    for memory in retrieval.used:
        secret = witness.secrets.get(memory.id)
        if secret is not None and in_on(secret, who):
            continue
        why = secret_why(secret) if secret is not None else _why(memory, who, presence)
        if why is None:
            continue
        if _was_told(memory, witness.told):
            told.append(memory.id)
            continue
        split = _split(memory, who.id, presence) if secret is None else None
        if split is not None:
            partial[memory.id] = split
            why += IN_PART_SAID if split[1] else IN_PART
        unknown.append(Unknown(memory.id, why))
        labels[memory.id] = secret_label(who.name) if secret is not None else label(who.name)
    report = replace(report, told=tuple(told))
    if not unknown:
        return retrieval, report
    ids = [u.memory_id for u in unknown]
    used = [
        _in_part(m, who, presence, witness.mode, partial[m.id]) if m.id in partial else m
        for m in retrieval.used
    ]
    if witness.mode is WitnessMode.STRICT:
        kept = [m for m in used if m.id not in ids or m.id in partial]
        return replace(retrieval, used=kept), replace(
            report, withheld=tuple(ids), reasons=tuple(unknown)
        )
    marked = [
        replace(m, witness_label=labels[m.id]) if m.id in ids and m.id not in partial else m
        for m in used
    ]
    return replace(retrieval, used=marked), replace(
        report, labelled=tuple(ids), reasons=tuple(unknown)
    )


IN_PART = ": only the passages from then"  # the memory's own words were all witnessed
IN_PART_SAID = ": only its words and passages from then"


def _present(presence: Presence, who: int, depth: int) -> bool:
    return who in {r.id for r in presence.at(depth)}


Split = tuple[str, str, int | None]  # what they saw, what of the text they missed, its passage


def _split(memory: UsedMemory, who: int, presence: Presence) -> Split | None:
    """(what of the memory ``who`` witnessed, what of its own text they missed) when it is
    theirs in part, else None. Its text is read sentence by sentence (``UsedMemory.said``:
    the actions each comes from); a sentence from no action known is missed. A memory whose
    sentences were not read is seen whole when the offered passages it states, from actions
    they saw, hold its words (``_text_witnessed``), else missed whole. When they saw none of
    its own words, what they saw of it is its best offered passage from an action they were
    present at; with none, it is not theirs at all."""
    if not memory.said:
        seen_whole = _text_witnessed(memory, who, presence)
        seen, missed = ([memory.text], []) if seen_whole else ([], [memory.text])
    else:
        seen, missed = [], []
        for sentence, depths in memory.said:
            if depths and all(_present(presence, who, depth) for depth in depths):
                seen.append(sentence)
            elif term_set(sentence) or missed:
                missed.append(sentence)  # (a sentence without words goes with its neighbours)
            else:
                seen.append(sentence)
    if not any(term_set(sentence) for sentence in seen):
        best = next((p for p in memory.passages if _present(presence, who, p.depth)), None)
        if best is None:
            return None
        return best.text, memory.text, best.key
    return " ".join(seen), " ".join(missed), None


def _text_witnessed(memory: UsedMemory, who: int, presence: Presence) -> bool:
    """Whether the memory's words are all words of offered passages it states
    (``CarriedPassage.stated``) whose actions ``who`` saw. A text no passage accounts for
    (a model's own words) is not."""
    wanted = term_set(memory.text)
    seen = [p for p in memory.passages if p.stated and _present(presence, who, p.depth)]
    have: set[str] = set()
    for passage in seen:
        have |= term_set(passage.text)
    return bool(wanted) and wanted <= have


def _in_part(
    memory: UsedMemory, who: Ref, presence: Presence, mode: WitnessMode, split: Split
) -> UsedMemory:
    """A memory ``who`` witnessed in part: its text what they saw of it (``split``; a
    passage it heads is no longer offered under it), what they missed of its text on a
    line of its own, marked (``label``) or left out (``strict``), and so its passages from
    the actions they missed."""
    seen, missed, heading = split
    offered = [p for p in memory.passages if p.key != heading]
    if mode is WitnessMode.STRICT:
        kept = [p for p in offered if _present(presence, who.id, p.depth)]
        return replace(memory, text=seen, passages=kept)
    marked = [
        p if _present(presence, who.id, p.depth) else replace(p, witness_label=label(who.name))
        for p in offered
    ]
    line = f"{missed} {label(who.name)}" if missed else ""
    return replace(memory, text=seen, missed=line, passages=marked)
