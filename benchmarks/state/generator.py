"""A seeded generator of stories with a ground-truth timeline of the world's state.

``generate(seed, turns, key)`` writes a story for the real engine: an opening and a list of
turns (``benchmarks.kit.play.Turn``: the player's ``do``, ``say`` or ``story`` action and
the narrator's reply), each with the changes it makes (``Change``) and the ground truth
after it (``Truth``). Invariants (the tests check them):

- **Seeded.** The same arguments give the same story, word for word.
- **The truth is the timeline's.** It is computed here, by ``Timeline``, from the changes
  the generator chose before it wrote a word, never by reading the text: where the player
  is, who is there (the living people whose last place is the player's), what the player
  carries (the items whose last holder is the player), and the time as a moment
  (day, part of the day, tick) that only moves forward, and whether it moved this turn.
- **Said, in many ways.** Each change is written by a template of its kind
  (``wording``), drawn at random, so every kind appears in many wordings; replies also
  hold refusals (a ``do`` that does not happen), distractors and scenery that change
  nothing. A ``do`` the narrator does not restate happened as the player said.
- Things have short forms ("the brass lantern", later "the lantern"): ``Thing.forms`` lists
  every form the story writes, so a reader of the product's state can tell which thing a
  name means, however the product spelled it. ``short_forms=False`` writes the same story
  with each thing named one way (every random draw is made either way), to tell what
  the short forms cost from what the wording costs.
- **Three sets of wording** (``WORDINGS``). ``wording="tuned"`` (the default) writes in
  ``wording.TUNED``, the templates the rules were tuned on, and gives the same stories as
  before the other sets existed; ``wording="fresh"`` writes the same kinds of change in
  ``wording.FRESH`` only, a second set now tuned on too; ``wording="unseen"`` in
  ``wording_unseen.UNSEEN`` only, written before any tuning on the fresh set and never to
  be tuned on. The timeline and its truth are the same code whichever set writes.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.kit.play import Turn
from benchmarks.state import wording as w
from benchmarks.state.wording_unseen import UNSEEN

PEOPLE, OTHER_SCRIPT_PEOPLE = 4, 2  # per story, drawn from the pools
PLACES, OTHER_SCRIPT_PLACES = 4, 1
ITEMS = 6
WEIGHTS = {
    "move": 3.0,
    "take": 3.0,
    "arrive": 2.0,
    "leave": 1.2,
    "time": 1.2,
    "drop": 1.0,
    "give": 1.0,
    "idle": 1.0,
    "other": 0.8,
    "die": 0.3,
}
ACTION_TYPES = {"do": 0.5, "story": 0.2, "say": 0.3}  # how the player asks for a change
REFUSE_SHARE = 0.08  # a do action of moving or taking that the story refuses
UNSTATED_SHARE = 0.25  # a do action that happens without the narrator restating it
SHORT_SHARE = 0.3  # a mention of a thing already named, by a short form
FOLLOW_SHARE = 0.3  # each person present comes along when the player moves
TIME_SHARE = 0.25  # a reply that also lets time pass
DISTRACT_SHARE = 0.55  # a reply with a sentence that changes nothing but names a thing
SCENERY_SHARE = 0.5
KILL_SHARE = 0.3  # a death at the player's hand
MAX_DEATHS = 1
PROTAGONISTS = ("Aro", "Nell", "Bram", "Tamsin")
START = (1, 1, 0)  # the first morning

Moment = tuple[int, int, int]  # (day, part of the day, tick)
Holder = tuple[str, str]  # ("player", ""), ("person", name) or ("place", name)
PLAYER: Holder = ("player", "")


@dataclass(frozen=True)
class Thing:
    name: str
    forms: tuple[str, ...]  # every way the story writes it, the name first


@dataclass(frozen=True)
class Change:
    """One change of the world, as the timeline applies it. ``kind``: move, follow,
    arrive, leave, die, take, receive, drop, give, other_take, snatch, lies (an item seen
    lying here) or time."""

    kind: str
    who: str | None = None  # a person (None: the player)
    what: str | None = None  # an item, or for move/follow the place
    to: str | None = None  # give: who receives it
    moment: Moment | None = None  # time: the new moment


@dataclass(frozen=True)
class Truth:
    location: str | None
    present: frozenset[str]
    inventory: frozenset[str]
    moment: Moment
    time_moved: bool


@dataclass(frozen=True)
class StoryTurn:
    turn: Turn
    changes: tuple[Change, ...]
    truth: Truth
    wordings: tuple[str, ...]  # the templates used, as "kind/index"
    refused: bool = False  # a do action the story refused


@dataclass(frozen=True)
class StateStory:
    key: str
    seed: int
    title: str
    protagonist: str
    opening: str
    people: tuple[Thing, ...]
    places: tuple[Thing, ...]
    items: tuple[Thing, ...]
    start: Truth
    turns: tuple[StoryTurn, ...]


@dataclass
class Timeline:
    """The world's state, changed only by ``apply``: the ground truth."""

    location: str | None = None
    places: dict[str, str | None] = field(default_factory=dict)  # person -> last place
    dead: set[str] = field(default_factory=set)
    holders: dict[str, Holder] = field(default_factory=dict)  # item -> holder, once seen
    moment: Moment = START

    def apply(self, change: Change) -> None:
        kind, who, what = change.kind, change.who, change.what
        if kind == "move" and what is not None:
            self.location = what
        elif kind == "follow" and who is not None:
            self.places[who] = what
        elif kind == "arrive" and who is not None:
            self.places[who] = self.location
        elif kind == "leave" and who is not None:
            self.places[who] = None
        elif kind == "die" and who is not None:
            self.dead.add(who)
        elif kind in ("take", "receive") and what is not None:
            self.holders[what] = PLAYER
        elif kind in ("drop", "lies") and what is not None and self.location is not None:
            self.holders[what] = ("place", self.location)
        elif kind == "give" and what is not None and change.to is not None:
            self.holders[what] = ("person", change.to)
        elif kind in ("other_take", "snatch") and what is not None and who is not None:
            self.holders[what] = ("person", who)
        elif kind == "time" and change.moment is not None:
            assert change.moment > self.moment, "time only moves forward"
            self.moment = change.moment

    def present(self) -> list[str]:
        return sorted(
            p
            for p, place in self.places.items()
            if place is not None and place == self.location and p not in self.dead
        )

    def inventory(self) -> list[str]:
        return sorted(i for i, h in self.holders.items() if h == PLAYER)

    def truth(self, time_moved: bool) -> Truth:
        return Truth(
            self.location,
            frozenset(self.present()),
            frozenset(self.inventory()),
            self.moment,
            time_moved,
        )


def forward(now: Moment, days: int, part: int | None, tick: bool) -> Moment | None:
    """The moment a time sentence brings from ``now``; None when it would not move time
    forward (a narrator says "at dusk" only while dusk is still ahead)."""
    day, at, ticks = now
    if days:
        new = (day + days, part if part is not None else 0, 0)
    elif part is not None:
        new = (day, part, 0)
    elif tick:
        new = (day, at, ticks + 1)
    else:
        return None
    return new if new > now else None


def fields_of(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _things(pool: Sequence[tuple[str, ...]], count: int, rng: random.Random) -> list[Thing]:
    return [Thing(forms[0], tuple(forms)) for forms in rng.sample(list(pool), count)]


def _items(rng: random.Random) -> list[Thing]:
    return [
        Thing(f"{adjective} {noun}", (f"{adjective} {noun}", noun))
        for adjective, noun in rng.sample(list(w.ITEMS), ITEMS)
    ]


@dataclass
class _Writer:
    """One story's turns: picks each turn's changes, applies them, then words them."""

    rng: random.Random
    people: list[Thing]
    places: list[Thing]
    items: list[Thing]
    timeline: Timeline
    short_forms: bool = True
    words: w.Wording = w.TUNED
    named: set[str] = field(default_factory=set)  # things mentioned once: short forms allowed
    deaths: int = 0
    sentences: list[str] = field(default_factory=list)
    used: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    # -- names as written ------------------------------------------------------------------

    def form(self, thing: Thing) -> str:
        """How this mention names ``thing``. The draws are the same with or without short
        forms, so the story of one name per thing is the same story, otherwise word for
        word."""
        short = thing.name in self.named and len(thing.forms) > 1
        self.named.add(thing.name)
        if short and self.rng.random() < SHORT_SHARE:
            form = self.rng.choice(thing.forms[1:])
            return form if self.short_forms else thing.name
        return thing.name

    def thing(self, name: str) -> Thing:
        return next(t for t in (*self.people, *self.places, *self.items) if t.name == name)

    def slots(self, **names: str | None) -> dict[str, str]:
        """Template slots for the named people, place and item, each in a form drawn now."""
        out: dict[str, str] = {}
        for slot in ("person", "other", "place"):
            name = names.get(slot)
            if name is not None:
                out[slot] = self.form(self.thing(name))
        if "place" in out:
            out["Place"] = capital(out["place"])
        item = names.get("item")
        if item is not None:
            thing = self.thing(item)
            bare = self.form(thing)
            out |= {
                "bare": bare,
                "item": f"the {bare}",
                "Item": f"The {bare}",
                "an_item": f"an {thing.name}" if thing.name[0] in "aeiou" else f"a {thing.name}",
            }
            out["An_item"] = capital(out["an_item"])
        out["clause"] = self.rng.choice(self.words.clauses)
        return out

    def say(self, kind: str, pool: Sequence[str], **names: str | None) -> str:
        """A sentence of ``pool`` (only those whose slots can be filled), recorded as used."""
        slots = self.slots(**names)
        fit = [(i, t) for i, t in enumerate(pool) if fields_of(t) <= set(slots)]
        index, template = self.rng.choice(fit)
        self.used.append(f"{kind}/{index}")
        return template.format(**slots)

    def action(self, key: str, *types: str, **names: str | None) -> tuple[str, str]:
        """The player's action of ``key`` ("move", "take", …), of a type drawn from ``types``
        (the ones the wording's ``player`` has for it)."""
        player = self.words.player
        shares = [(t, ACTION_TYPES[t]) for t in types if f"{key}.{t}" in player]
        kind = self.rng.choices([t for t, _ in shares], [s for _, s in shares])[0]
        return kind, self.say(f"player.{key}.{kind}", player[f"{key}.{kind}"], **names)

    def change(self, change: Change) -> None:
        self.timeline.apply(change)
        self.changes.append(change)

    # -- what can happen now ---------------------------------------------------------------

    def present(self) -> list[str]:
        return self.timeline.present()

    def absent(self) -> list[str]:
        here = set(self.present())
        return [
            p.name for p in self.people if p.name not in here and p.name not in self.timeline.dead
        ]

    def loose(self) -> list[str]:
        """Items the player could pick up here: unseen yet, or lying here."""
        here = ("place", self.timeline.location or "")
        return [i.name for i in self.items if self.timeline.holders.get(i.name, here) == here]

    def held_by_present(self) -> list[str]:
        people = {("person", p) for p in self.present()}
        return [i for i, h in self.timeline.holders.items() if h in people]

    def possible(self) -> list[str]:
        inventory, present = self.timeline.inventory(), self.present()
        able = {
            "move": True,
            "take": bool(self.loose() or self.held_by_present()),
            "arrive": bool(self.absent()),
            "leave": bool(present),
            "time": True,
            "drop": bool(inventory),
            "give": bool(inventory and present),
            "idle": True,
            "other": bool(present and (self.loose() or inventory)),
            "die": bool(present) and self.deaths < MAX_DEATHS,
        }
        return [k for k, ok in able.items() if ok]


def _move(wr: _Writer) -> tuple[str, str]:
    here = wr.timeline.location
    dest = wr.rng.choice([p.name for p in wr.places if p.name != here])
    kind, text = wr.action("move", "do", "story", "say", place=dest)
    if kind == "do" and wr.rng.random() < REFUSE_SHARE:
        wr.sentences.append(wr.say("refuse.move", wr.words.refuse_move, place=dest))
        return kind, text
    company = [p for p in wr.present() if wr.rng.random() < FOLLOW_SHARE]
    wr.change(Change("move", what=dest))
    if kind == "do" and wr.rng.random() < UNSTATED_SHARE:
        wr.sentences.append(wr.say("after.move", wr.words.after_move))
    else:
        wr.sentences.append(wr.say("move", wr.words.move, place=dest))
    for person in company:
        wr.change(Change("follow", who=person, what=dest))
        wr.sentences.append(wr.say("follow", wr.words.follow, person=person))
    return kind, text


def _take(wr: _Writer) -> tuple[str, str]:
    givers = wr.held_by_present()
    if givers and (not wr.loose() or wr.rng.random() < 0.3):
        item = wr.rng.choice(givers)
        holder = wr.timeline.holders[item][1]
        kind, text = wr.action("receive", "do", "say", person=holder, item=item)
        wr.change(Change("receive", what=item))
        wr.sentences.append(wr.say("receive", wr.words.receive, person=holder, item=item))
        return kind, text
    item = wr.rng.choice(wr.loose())
    unseen = item not in wr.timeline.holders
    if unseen and wr.rng.random() < 0.6:
        wr.change(Change("lies", what=item))
        wr.sentences.append(wr.say("intro", wr.words.intro, item=item))
    kind, text = wr.action("take", "do", "story", "say", item=item)
    if kind == "do" and wr.rng.random() < REFUSE_SHARE:
        if unseen:
            wr.change(Change("lies", what=item))
        wr.sentences.append(wr.say("refuse.take", wr.words.refuse_take, item=item))
        return kind, text
    wr.change(Change("take", what=item))
    if kind == "do" and wr.rng.random() < UNSTATED_SHARE:
        wr.sentences.append(wr.say("after.take", wr.words.after_take))
    else:
        wr.sentences.append(wr.say("take", wr.words.take, item=item))
    return kind, text


def _drop(wr: _Writer) -> tuple[str, str]:
    item = wr.rng.choice(wr.timeline.inventory())
    kind, text = wr.action("drop", "do", "story", item=item)
    wr.change(Change("drop", what=item))
    wr.sentences.append(wr.say("drop", wr.words.drop, item=item))
    return kind, text


def _give(wr: _Writer) -> tuple[str, str]:
    item = wr.rng.choice(wr.timeline.inventory())
    person = wr.rng.choice(wr.present())
    kind, text = wr.action("give", "do", "story", "say", item=item, person=person)
    wr.change(Change("give", what=item, to=person))
    wr.sentences.append(wr.say("give", wr.words.give, item=item, person=person))
    return kind, text


def _other(wr: _Writer) -> tuple[str, str]:
    person = wr.rng.choice(wr.present())
    inventory = wr.timeline.inventory()
    action = _idle_action(wr)
    if inventory and (not wr.loose() or wr.rng.random() < 0.4):
        item = wr.rng.choice(inventory)
        wr.change(Change("snatch", who=person, what=item))
        wr.sentences.append(wr.say("snatch", wr.words.snatch, person=person, item=item))
        return action
    item = wr.rng.choice(wr.loose())
    if item not in wr.timeline.holders and wr.rng.random() < 0.5:
        wr.sentences.append(wr.say("intro", wr.words.intro, item=item))
    wr.change(Change("other_take", who=person, what=item))
    wr.sentences.append(wr.say("other_take", wr.words.other_take, person=person, item=item))
    return action


def _arrive(wr: _Writer) -> tuple[str, str]:
    person = wr.rng.choice(wr.absent())
    action = _idle_action(wr)
    wr.change(Change("arrive", who=person))
    wr.sentences.append(wr.say("arrive", wr.words.arrive, person=person))
    return action


def _leave(wr: _Writer) -> tuple[str, str]:
    person = wr.rng.choice(wr.present())
    action = _idle_action(wr)
    wr.change(Change("leave", who=person))
    wr.sentences.append(wr.say("leave", wr.words.leave, person=person))
    return action


def _die(wr: _Writer) -> tuple[str, str]:
    person = wr.rng.choice(wr.present())
    wr.deaths += 1
    if wr.rng.random() < KILL_SHARE:
        action = ("do", wr.say("player.kill.do", wr.words.player["kill.do"], person=person))
        wr.change(Change("die", who=person))
        wr.sentences.append(wr.say("kill", wr.words.kill, person=person))
        return action
    action = _idle_action(wr)
    wr.change(Change("die", who=person))
    wr.sentences.append(wr.say("die", wr.words.die, person=person))
    return action


def _time(wr: _Writer) -> bool:
    """A sentence letting time pass (first in the reply); whether one could."""
    ahead = [
        (i, t, m)
        for i, (t, days, part, tick) in enumerate(wr.words.time)
        if (m := forward(wr.timeline.moment, days, part, tick)) is not None
    ]
    if not ahead:
        return False
    index, template, moment = wr.rng.choice(ahead)
    wr.change(Change("time", moment=moment))
    wr.used.append(f"time/{index}")
    wr.sentences.insert(0, template.format(clause=wr.rng.choice(wr.words.clauses)))
    return True


def _idle_action(wr: _Writer) -> tuple[str, str]:
    present, here = wr.present(), wr.timeline.location
    person = wr.rng.choice(present) if present else None
    others = wr.absent()
    other = wr.rng.choice(others) if others else None
    return wr.action("idle", "do", "story", "say", person=person, place=here, other=other)


def _idle(wr: _Writer) -> tuple[str, str]:
    action = _idle_action(wr)
    unseen = [i.name for i in wr.items if i.name not in wr.timeline.holders]
    if unseen and wr.rng.random() < 0.4:
        item = wr.rng.choice(unseen)
        wr.change(Change("lies", what=item))
        wr.sentences.append(wr.say("intro", wr.words.intro, item=item))
    else:
        wr.sentences.append(wr.say("scenery", wr.words.scenery))
    return action


def _distract(wr: _Writer) -> None:
    """A sentence that changes nothing, about what the state after the turn makes it a
    trap for: a place the player is not at, an item they do not hold (or do), someone
    away, a time not reached."""
    tl, rng = wr.timeline, wr.rng
    present = wr.present()
    person = rng.choice(present) if present else None
    others = [p.name for p in wr.people if p.name not in present]
    other = rng.choice(others) if others else None
    elsewhere = rng.choice([p.name for p in wr.places if p.name != tl.location])
    inventory = tl.inventory()
    not_held = [i.name for i in wr.items if i.name not in inventory]
    options: list[tuple[str, dict[str, str | None]]] = [
        ("place", {"place": elsewhere, "person": person, "other": other}),
        ("time", {"person": person}),
    ]
    if not_held:
        options.append(("item", {"item": rng.choice(not_held), "person": person}))
    if inventory:
        options.append(("held", {"item": rng.choice(inventory), "person": person}))
    if other is not None:
        options.append(("person", {"other": other, "person": person}))
    kind, names = rng.choice(options)
    sentence = wr.say(f"distract.{kind}", wr.words.distract[kind], **names)
    wr.sentences.insert(rng.randint(1 if wr.sentences else 0, len(wr.sentences)), sentence)


PRIMARY = {
    "move": _move,
    "take": _take,
    "arrive": _arrive,
    "leave": _leave,
    "drop": _drop,
    "give": _give,
    "idle": _idle,
    "other": _other,
    "die": _die,
}


def _turn(wr: _Writer) -> StoryTurn:
    wr.sentences, wr.used, wr.changes = [], [], []
    kinds = wr.possible()
    primary = wr.rng.choices(kinds, [WEIGHTS[k] for k in kinds])[0]
    if primary == "time":
        action = _idle_action(wr)
        moved = _time(wr)
        if not moved:
            wr.sentences.append(wr.say("scenery", wr.words.scenery))
    else:
        action = PRIMARY[primary](wr)
        moved = wr.rng.random() < TIME_SHARE and _time(wr)
    if wr.rng.random() < DISTRACT_SHARE:
        _distract(wr)
    if wr.rng.random() < SCENERY_SHARE:
        scenery = wr.say("scenery", wr.words.scenery)
        wr.sentences.insert(wr.rng.randint(0, len(wr.sentences)), scenery)
    refused = any(u.startswith("refuse.") for u in wr.used)
    return StoryTurn(
        Turn(action, " ".join(wr.sentences)),
        tuple(wr.changes),
        wr.timeline.truth(moved),
        tuple(wr.used),
        refused,
    )


# Every set of wording, by name. The unseen set lives in a module of its own, which imports
# ``Wording`` from ``wording``, so it joins the other two here rather than in ``wording``.
WORDINGS: dict[str, w.Wording] = {**w.WORDINGS, "unseen": UNSEEN}


def generate(
    seed: int, turns: int, key: str = "", short_forms: bool = True, wording: str = "tuned"
) -> StateStory:
    """A story of ``turns`` turns for ``seed``; without ``short_forms``, each thing is named
    the one way (the same story otherwise); ``wording``: the set it is written in
    ("tuned", "fresh" or "unseen", ``WORDINGS``)."""
    words = WORDINGS[wording]
    rng = random.Random(f"state/{seed}")
    title = rng.choice(w.TITLES)
    protagonist = rng.choice(PROTAGONISTS)
    people = _things(w.PEOPLE, PEOPLE, rng) + _things(
        w.PEOPLE_OTHER_SCRIPTS, OTHER_SCRIPT_PEOPLE, rng
    )
    places = _things(w.PLACES, PLACES, rng) + _things(
        w.PLACES_OTHER_SCRIPTS, OTHER_SCRIPT_PLACES, rng
    )
    rng.shuffle(people)
    rng.shuffle(places)
    items = _items(rng)
    timeline = Timeline()
    wr = _Writer(rng, people, places, items, timeline, short_forms, words)
    start = places[0].name
    opening = wr.say("opening", words.opening, place=start)
    timeline.apply(Change("move", what=start))
    first = timeline.truth(False)
    story_turns = tuple(_turn(wr) for _ in range(turns))
    return StateStory(
        key or str(seed),
        seed,
        title,
        protagonist,
        opening,
        tuple(people),
        tuple(places),
        tuple(items),
        first,
        story_turns,
    )
