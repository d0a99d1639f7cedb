"""What the lore clerk is measured by, as pure functions of a story and its proposals.

The clerk is replayed as play runs it: after every ``EVERY`` actions of the path (a turn is
two), ``clerk.candidates`` over the path so far, with every card and every proposal made
before as taken (so each later run proposes only what is new, as the stored proposals
make the product do). Definitions:

- An entity **qualifies** when its names are in at least ``clerk.LEAST_ACTIONS`` actions
  (whole words, case and a leading title aside: ``names.key_of``) and it has no card.
- A proposal **is** an entity when one of its names (its name or a keyword) has the key of
  one of the entity's names. **Entity recall**: the qualifying entities some proposal is,
  made within ``WITHIN`` actions of the entity's third action. **Title precision**: the
  proposals that are some entity, of those that are not *neutral* (a name the set counts
  neither way: a play's speaker named by a role). **Duplicate rate**: the proposals that
  are an entity an earlier proposal or a card already is.
- A line of a draft is **supported** when every word of it is a word of the action it
  names (the protagonist's name standing for "you" and "your"). **Unsupported**: the
  lines that are not.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from benchmarks.lore.sets import StorySet

from talekeeper.services.world.clerk import LEAST_ACTIONS, Line, PathText, candidates
from talekeeper.services.world.names import key_of

EVERY = 2  # actions between two runs of the clerk: one turn
WITHIN = 12  # actions after the third mention by which the proposal must be there
_WORDS = re.compile(r"\w+")


@dataclass(frozen=True)
class Proposed:
    at: int  # the action after which it was first proposed
    names: tuple[str, ...]
    lines: tuple[Line, ...]


@dataclass
class Score:
    name: str
    held_out: bool
    actions: int
    qualifying: int = 0
    found: int = 0
    proposals: int = 0
    titled: int = 0
    duplicates: int = 0
    lines: int = 0
    unsupported: int = 0
    delays: list[int] = field(default_factory=list)
    seconds: float = 0.0
    misses: list[str] = field(default_factory=list)  # qualifying entities never proposed
    strays: list[str] = field(default_factory=list)  # proposals that are no entity
    neutral: int = 0  # proposals of a neutral name, left out of the precision
    repeats: list[str] = field(default_factory=list)  # each duplicate, "Kate (Katharina)"

    @property
    def recall(self) -> float:
        return self.found / self.qualifying if self.qualifying else 1.0

    @property
    def precision(self) -> float:
        return self.titled / self.proposals if self.proposals else 1.0

    @property
    def duplicate_rate(self) -> float:
        return self.duplicates / self.proposals if self.proposals else 0.0

    @property
    def median_delay(self) -> float:
        return statistics.median(self.delays) if self.delays else 0.0


def replay(story: StorySet, every: int = EVERY) -> list[Proposed]:
    """The proposals the clerk makes as the story is played, in the order it makes them."""
    path: list[PathText] = []
    taken: list[list[str]] = [list(t) for t in story.taken]
    out: list[Proposed] = []
    last = len(story.texts) - 1
    for i, text in enumerate(story.texts):
        path.append(PathText(i, text, True))
        if (i + 1) % every and i != last:
            continue
        for _, draft in candidates(path, taken, story.protagonist):
            names = (draft.name, *draft.keys)
            out.append(Proposed(i, names, draft.evidence))
            taken.append(list(names))
    return out


def _keys(names: tuple[str, ...] | list[str]) -> set[str]:
    return {k for k in map(key_of, names) if k}


def mentions(story: StorySet, names: tuple[str, ...]) -> list[int]:
    keys = _keys(names)
    return [
        i
        for i, text in enumerate(story.texts)
        if any(f" {k} " in f" {key_of(text)} " for k in keys)
    ]


def score(story: StorySet, proposed: list[Proposed], seconds: float) -> Score:
    s = Score(story.name, story.held_out, len(story.texts), seconds=seconds)
    entity_keys = [_keys(e) for e in story.entities]
    claimed = {i for i, keys in enumerate(entity_keys) for t in story.taken if keys & _keys(t)}
    neutral = _keys(story.neutral)
    first_at: dict[int, int] = {}
    for p in proposed:
        mine = _keys(p.names)
        hits = [i for i, keys in enumerate(entity_keys) if keys & mine]
        if not hits and mine & neutral:
            s.neutral += 1
        else:
            s.proposals += 1
        if hits:
            s.titled += 1
            if any(i in claimed or i in first_at for i in hits):
                s.duplicates += 1
                s.repeats.append(f"{p.names[0]} ({story.entities[hits[0]][0]})")
            for i in hits:
                first_at.setdefault(i, p.at)
        elif not mine & neutral:
            s.strays.append(p.names[0])
        for line in p.lines:
            s.lines += 1
            if not _supported(line, story.texts[line.action_id], story.protagonist):
                s.unsupported += 1
    for i, entity in enumerate(story.entities):
        named = mentions(story, entity)
        if len(named) < LEAST_ACTIONS or i in claimed:
            continue
        s.qualifying += 1
        third = named[LEAST_ACTIONS - 1]
        at = first_at.get(i)
        if at is not None and at - third <= WITHIN:
            s.found += 1
            s.delays.append(max(0, at - third))
        else:
            s.misses.append(entity[0])
    return s


def _supported(line: Line, action: str, protagonist: str) -> bool:
    said = set(_WORDS.findall(action.casefold()))
    stand_in = set(_WORDS.findall(protagonist.casefold())) | {"s"}
    words = set(_WORDS.findall(line.text.casefold()))
    if words - said and not ({"you", "your"} & said):
        return False
    return not (words - said - stand_in)
