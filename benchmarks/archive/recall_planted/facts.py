"""Facts to plant and the probes that ask about them: seven kinds, several wordings each.

A ``Fact`` is one sentence that states something the story will need much later
(a name, a place, where an item is hidden, a promise, an injury, a password, a
relationship), the player action that leads into it, and the probe action that
asks about it. Invariants:

- ``answer`` holds the lowercase words that together identify the fact: every
  one of them occurs in ``sentence`` (the statement), at least one of them is
  an invented name or a word of ``ANSWER_WORDS``, which filler never uses, so a
  text holding all of them states the fact (``states``).
- The probe does not contain the answer's distinctive words: it names the
  subject (the role, the item, the gate, the person), never what was said
  about it. Subjects are unique within an adventure (``subject``).
- Wordings vary per kind (three statements, three probes), and a probe often
  shares only the subject noun with the statement, so lexical overlap alone
  does not find it among scenes that mention the same subject.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from benchmarks.recall.prose import Cast, NameMaker, Setting, alias

CAST_SHARE = 0.5  # facts a companion takes part in: in play, the cast is usually there
KINDS = ("name", "place", "item", "promise", "injury", "password", "relationship")

_HIDING = (
    ("behind a loose floorboard in the loft", "floorboard"),
    ("up in the rafters of the old stable", "rafters"),
    ("inside the cold chimney of the empty house", "chimney"),
    ("at the bottom of the dry cistern", "cistern"),
    ("in the hollow of a lightning-struck oak", "hollow"),
    ("in the lining of your left boot", "lining"),
    ("in the saddlebag of the grey mule", "saddlebag"),
)
_DEEDS = (
    ("bring back her brother's silver compass", "compass"),
    ("find his daughter's cedar lute and return it", "lute"),
    ("recover the pearl locket her mother pawned", "locket"),
    ("free his hunting falcon from the tax collector", "falcon"),
    ("carry her letters to the widow in the next valley", "letters"),
)
_DEADLINES = ("the first snow", "the midsummer fair", "the next new moon", "the spring tide")
_INJURIES = (
    (
        "hound",
        "A half-starved hound sinks its teeth into your {part}, and {healer} stitches the "
        "bite with black thread.",
    ),
    (
        "boar",
        "A boar's tusk opens a long gash across your {part}, and {healer} packs it with "
        "moss and linen.",
    ),
    (
        "lynx",
        "A lynx drops from the rocks and rakes your {part} with its claws; {healer} washes "
        "the wound with vinegar.",
    ),
    (
        "adder",
        "An adder strikes at your {part} from the long grass, and {healer} cuts the bite "
        "and sucks out the poison.",
    ),
    (
        "crossbow",
        "A crossbow bolt out of the dark grazes your {part}, and {healer} binds the wound tight.",
    ),
    (
        "kiln",
        "You burn your {part} badly on the lip of a hot kiln, and {healer} smears the "
        "blisters with goose fat.",
    ),
)
_PARTS = ("left forearm", "right thigh", "left shoulder", "right hand", "left ankle")
_PASSWORD_WORDS = "thistle saffron quillon gannet juniper verdigris bramble cinnabar heron wicker"
_PASSWORDS = [*_PASSWORD_WORDS.split(), "marigold", "hemlock"]
_RELATIONS = (
    ("half-sister", "sister"),
    ("twin brother", "twin"),
    ("stepfather", "stepfather"),
    ("godmother", "godmother"),
    ("former betrothed", "betrothed"),
    ("cousin", "cousin"),
)
_FEATURES = ("Point", "Hollow", "Chapel", "Reach", "Steps", "Barrow")

# Words only facts use: filler never does (a test checks), so a text holding them is about a fact.
ANSWER_WORDS = frozenset(
    [h for _, h in _HIDING]
    + [d for _, d in _DEEDS]
    + [c for c, _ in _INJURIES]
    + _PASSWORDS
    + [r for _, r in _RELATIONS]
)

_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


@dataclass(frozen=True)
class Fact:
    key: str  # unique in its adventure: "f3"
    kind: str  # one of KINDS
    subject: str  # what the probe asks about; unique in its adventure
    sentence: str  # the statement, verbatim in the planted action
    answer: tuple[str, ...]  # lowercase words that together identify the fact
    lead: tuple[str, str]  # the player action of the planting turn: (type, text)
    question: tuple[str, str]  # the probe: (type, text)
    in_player: bool = False  # stated in the player's own action, not the narration
    role: str = "planted"  # "planted", "never", "undone" or "forked"
    cast: bool = False  # a companion (a story card) takes part in the statement


def states(text: str, fact: Fact) -> bool:
    """Whether ``text`` states ``fact`` (holds every answer word)."""
    return set(fact.answer) <= words(text)


@dataclass
class Draw:
    """What one fact is drawn from."""

    rng: random.Random
    setting: Setting
    cast: Cast
    names: NameMaker
    cast_share: float = CAST_SHARE

    def pick(self, options: tuple[str, ...] | list[str]) -> str:
        return self.rng.choice(list(options))

    def companion(self) -> str:
        return self.rng.choice(self.cast.companions)

    def with_cast(self) -> bool:
        """Whether a companion takes part in the statement (about half the facts)."""
        return self.rng.random() < self.cast_share

    def alias(self, subject: str) -> str:
        return alias(self.rng, subject)


def _name(d: Draw) -> Fact:
    role, person, who = d.pick(d.setting.roles), d.names.person(), d.companion()
    first, last = person.split()
    place = d.pick(d.setting.places)
    cast = d.with_cast()
    if cast:
        sentence = d.pick(
            (
                f"{who} gets a name out of the {role} at last: {person}, who has kept the post "
                "at {place} for thirty years.".replace("{place}", place),
                f'"{person}," the {role} tells {who}, "and mind you remember it."',
            )
        )
    else:
        sentence = d.pick(
            (
                f"The {role} finally tells you a name, {person}, and says the job at {place} "
                "has been in the family for three generations.",
                f"You learn that the {role} is called {person}, a quiet soul who once served "
                "on a warship.",
            )
        )
    asked = d.alias(role)
    question = d.rng.choice(
        (
            ("say", f"{d.companion()}, what did the {asked} say their name was?"),
            ("do", f"I try to remember what the {asked} was called"),
            ("say", f"Who was that {asked} again, the one we met before?"),
        )
    )
    lead = ("do", f"I ask the {role} at {place} who they are")
    return Fact(
        "", "name", role, sentence, (first.lower(), last.lower()), lead, question, cast=cast
    )


def _place(d: Draw) -> Fact:
    thing, person, who = d.pick(d.setting.things), d.names.person(), d.companion()
    where = f"{d.names.word(2)} {d.pick(_FEATURES)}"
    first = person.split()[0]
    cast = d.with_cast()
    if cast:
        sentence = d.pick(
            (
                f"{person} tells {who} that the {thing} was carried off to {where}, two days' "
                "walk beyond the hills.",
                f"{who} pays {person} a silver piece to learn that the {thing} lies at {where}.",
            )
        )
    else:
        sentence = d.pick(
            (
                f"According to {person}, the {thing} now lies hidden at {where}, under guard.",
                f"{person} draws a rough map in the dust: the {thing} was taken to {where}.",
            )
        )
    asked = d.alias(thing)
    question = d.rng.choice(
        (
            ("say", f"Where did {first} say the {asked} was taken?"),
            ("do", f"I think back to where the {asked} is supposed to be hidden"),
            ("say", f"{d.companion()}, do you remember where they took the {asked}?"),
        )
    )
    lead = ("say", f"Do you know anything about the {thing}?")
    answer = (where.split()[0].lower(),)
    return Fact("", "place", thing, sentence, answer, lead, question, cast=cast)


def _item(d: Draw) -> Fact:
    item = d.pick(d.setting.items)
    hiding, key = d.rng.choice(_HIDING)
    cast = d.with_cast()
    if cast:
        sentence = f"{d.companion()} keeps watch while you tuck the {item} {hiding}."
    else:
        sentence = d.pick(
            (
                f"Before anyone sees, you wrap the {item} in oilcloth and push it {hiding}.",
                f"You hide the {item} {hiding}, where nobody would think to look.",
            )
        )
    asked = d.alias(item)
    question = d.rng.choice(
        (
            ("say", f"Where did I hide the {asked}?"),
            ("do", f"I go to fetch the {asked} from where I left it"),
            ("say", f"{d.companion()}, remind me where we put the {asked}."),
        )
    )
    lead = ("do", f"I look for a safe place to hide the {item}")
    answer = (item.split()[-1].lower(), key)
    return Fact("", "item", item, sentence, answer, lead, question, cast=cast)


def _promise(d: Draw) -> Fact:
    person = d.names.person()
    first = person.split()[0]
    deed, key = d.rng.choice(_DEEDS)
    deadline = d.pick(_DEADLINES)
    in_player = d.rng.random() < 0.5
    cast = d.with_cast()
    if in_player:
        witness = f"{d.companion()} is my witness: " if cast else ""
        sentence = f"I promise you, {first}, {witness}I will {deed} before {deadline}."
        lead = ("say", sentence)
    else:
        witness = f", with {d.companion()} as witness," if cast else ""
        sentence = f"You swear to {person}{witness} that you will {deed} before {deadline}."
        lead = ("do", f"I shake hands with {person}")
    question = d.rng.choice(
        (
            ("say", f"What exactly did I promise {first}?"),
            ("do", f"I wonder whether I can still keep my word to {first}"),
            ("say", f"{d.companion()}, what did I swear to do for {first}?"),
        )
    )
    answer = (first.lower(), key)
    return Fact("", "promise", first, sentence, answer, lead, question, in_player, cast=cast)


def _injury(d: Draw) -> Fact:
    cause, template = d.rng.choice(_INJURIES)
    part = d.pick(_PARTS)
    noun = part.split()[-1]
    cast = d.with_cast()
    healer = d.companion() if cast else d.names.person()
    sentence = template.format(part=part, healer=healer)
    asked = d.alias(noun)
    question = d.rng.choice(
        (
            ("say", f"{d.companion()}, how did I hurt my {asked} again?"),
            ("do", f"I look at the scar on my {asked} and try to remember what caused it"),
            ("say", f"Why does my {asked} still ache?"),
        )
    )
    lead = ("do", "I push on through the undergrowth")
    return Fact("", "injury", noun, sentence, (cause, noun), lead, question, cast=cast)


def _password(d: Draw) -> Fact:
    gate, person = d.pick(d.setting.gates), d.names.person()
    one, two = d.rng.sample(_PASSWORDS, 2)
    cast = d.with_cast()
    if cast:
        sentence = (
            f'{person} whispers the password for the {gate} to {d.companion()}: "{one} and {two}".'
        )
    else:
        sentence = d.pick(
            (
                f'The watchword at the {gate} this month, {person} tells you, is "{one} {two}".',
                f'To pass the {gate} you must answer "{one}, {two}" to the challenge, says '
                f"{person}.",
            )
        )
    asked = d.alias(gate)
    question = d.rng.choice(
        (
            ("say", f"What was the password for the {asked}?"),
            ("do", f"I walk up to the {asked} and try to recall the watchword"),
            ("say", f"{d.companion()}, what do we have to say at the {asked}?"),
        )
    )
    lead = ("say", f"How does anyone get through the {gate}?")
    return Fact("", "password", gate, sentence, (one, two), lead, question, cast=cast)


def _relationship(d: Draw) -> Fact:
    one, two = d.names.person(), d.names.person()
    first_one, first_two = one.split()[0], two.split()[0]
    relation, key = d.rng.choice(_RELATIONS)
    cast = d.with_cast()
    if cast:
        sentence = f"{d.companion()} finds out that {two} is the {relation} of {one}."
    else:
        sentence = d.pick(
            (
                f"{one} admits, after a long silence, that {two} is {first_one}'s {relation}.",
                f'"{two} is my {relation}," {one} says quietly, "though we have not spoken in '
                'years."',
            )
        )
    question = d.rng.choice(
        (
            ("say", f"How is {first_one} related to {first_two}?"),
            ("do", f"I think about what I learned about {first_one} and {first_two}"),
            ("say", f"What is {first_two} to {first_one}, exactly?"),
        )
    )
    lead = ("say", f"You two seem to know each other, {first_one}.")
    answer = (first_one.lower(), first_two.lower(), key)
    subject = f"{first_one}/{first_two}"
    return Fact("", "relationship", subject, sentence, answer, lead, question, cast=cast)


MAKERS: dict[str, Callable[[Draw], Fact]] = {
    "name": _name,
    "place": _place,
    "item": _item,
    "promise": _promise,
    "injury": _injury,
    "password": _password,
    "relationship": _relationship,
}


def make_fact(d: Draw, kind: str, key: str, role: str, taken: set[str]) -> Fact:
    """A fact of ``kind`` whose subject is not in ``taken`` (which it joins)."""
    for _ in range(50):
        fact = MAKERS[kind](d)
        if fact.subject not in taken:
            taken.add(fact.subject)
            return replace(fact, key=key, role=role)
    raise ValueError(f"no free subject left for a {kind} fact")
