"""The generated world the harness plays in: a cast, its story cards, a setting bible for
the knowledge library, and a script of turns (the player's action and the narration that
answers it).

Invariants:

- Deterministic: the same seed gives the same world and the same script, whatever the
  context size played (the games at each size differ only in what the context keeps).
- The story moves through scenes (a place, two companions, an object, changing every few
  turns) and names them, so the cards keyed on those names fire and stop firing as the
  scene changes, the memories written from it are about them, and the bible's sections on
  them are what the knowledge search finds: the sections that change from turn to turn
  change as they would in a real game.
- A narration reaches a length drawn from ``NARRATION_TOKENS`` in cl100k tokens (a model's
  reply of one or two paragraphs; the sentence that reaches it is kept whole); a player's
  action is one short line. No text holds a blank line, so a
  history section's text splits back into its actions at ``context.SEPARATOR``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from talekeeper.core.tokens import TokenCounter

NARRATION_TOKENS = (120, 200)  # the range a narration's length is drawn from
SCENE_TURNS = (3, 7)  # turns a scene lasts
ELSEWHERE = 0.12  # the chance a sentence names someone or something outside the scene


@dataclass(frozen=True)
class Entity:
    name: str  # as the story writes it
    keyword: str  # what its card also fires on (a first name, the place's own word)
    kind: str  # the card's type
    epithet: str  # a phrase the narration and the bible use about it


CHARACTERS = (
    Entity("Maren Tull", "Maren", "character", "the net-mender who hears the drowned bells"),
    Entity("Alric Vane", "Alric", "character", "the harbourmaster with a ledger of debts"),
    Entity("Pip Haddow", "Pip", "character", "the orphan who runs messages for coin"),
    Entity("Sela Morrow", "Sela", "character", "the smuggler who never lies outright"),
    Entity("Brother Ostin", "Ostin", "character", "the last monk of the drowned chapel"),
    Entity("Ilse Dray", "Ilse", "character", "the captain of the grey cutter"),
    Entity("Corwin Ashe", "Corwin", "character", "the cartographer who mapped the shoals"),
    Entity("Nell Fairweather", "Nell", "character", "the innkeeper who keeps every secret"),
    Entity("Old Tobiah", "Tobiah", "character", "the lamplighter nobody remembers hiring"),
    Entity("Lady Veyra", "Veyra", "character", "the widow who owns half the coast"),
)
PLACES = (
    Entity("the Gullwatch lighthouse", "Gullwatch", "location", "a tower whose lamp burns blue"),
    Entity("Saltmarsh Quay", "Saltmarsh", "location", "the crooked quay of the fishing fleet"),
    Entity("the Drowned Chapel", "Drowned Chapel", "location", "a chapel half under the tide"),
    Entity("Hollow Fen", "Hollow Fen", "location", "a marsh of reeds and sinking paths"),
    Entity("the Brackwater Inn", "Brackwater", "location", "an inn built from a wrecked hull"),
    Entity("the Tidestone", "Tidestone", "location", "a standing stone the sea never covers"),
)
OBJECTS = (
    Entity("the brass compass", "compass", "item", "a compass that points at lost things"),
    Entity("the Lamplighters' Guild", "Lamplighters", "faction", "keepers of the coast lamps"),
    Entity("the Grey Fleet", "Grey Fleet", "faction", "the ships that sail without lights"),
    Entity("the tide ledger", "ledger", "item", "a book of every ship the sea has taken"),
)
CAST = CHARACTERS + PLACES + OBJECTS

TITLE = "The Lantern Coast"
PLOT_ESSENTIALS = (
    "The coast's lamps are going dark one by one, and each time a ship is lost. You are a "
    "courier newly arrived at Saltmarsh Quay with a sealed letter for the Lamplighters' "
    "Guild. Nobody will say who sent for you."
)
AUTHORS_NOTE = "Keep the tone quiet and uneasy; the fog hides more than it shows."
PERSONA = {"name": "Wren", "pronouns": "she/her", "description": "A courier with salt-stiff boots."}
OPENING = (
    "Fog rolls in over Saltmarsh Quay as your boat bumps the pilings. The lamps along the "
    "breakwater burn low and blue, and somewhere out past the Tidestone a bell rings once "
    "and stops. A girl in a patched coat watches you climb the ladder, then runs off toward "
    "the Brackwater Inn before you can ask her name."
)

_ADJECTIVES = (
    "cold", "quiet", "grey", "wet", "heavy", "distant", "narrow", "crooked", "salt-stained",
    "broken", "patient", "dim", "hollow", "slow", "bright", "faded",
)  # fmt: skip
_NOUNS = (
    "lantern", "tide", "fog", "rope", "bell", "gull", "pier", "cliff", "oar", "shadow", "wind",
    "storm", "lamp", "stair", "door", "coin", "net", "hook", "wave", "rock", "shore", "reed",
    "candle", "window", "ladder", "chain",
)  # fmt: skip
_VERBS = (
    "watches", "listens", "waits", "turns away", "frowns", "lowers their voice", "laughs",
    "shakes their head", "glances at the door", "counts under their breath",
)  # fmt: skip
_ACTIONS = (
    "I ask {a} about {p}",
    "I follow {a} toward {p}",
    "I show {a} the letter and wait",
    "I look closely at {o}",
    "I tell {a} what I saw near {p}",
    "I search {p} for anything out of place",
    "I ask {a} and {b} who lit the lamps last night",
    "I light a candle and study {o}",
    "I listen for the bell near {p}",
    "I offer {a} a coin for the truth",
)
_SENTENCES = (
    "{A} {verb}, and the {noun} beyond {p} creaks in the {adj} wind.",
    "Somewhere past {p} a bell answers, {adj} and patient, as if it has waited all night.",
    "{A} says that {B} was seen near {p} before the lamps went out.",
    "The fog thickens until {p} is only a {adj} smudge against the water.",
    "{A} turns {o} over in their hands and says nothing for a long moment.",
    "You notice a {adj} {noun} where there should be none, and {A} notices you noticing.",
    "When you mention {o}, {A} {verb}.",
    "{B} keeps to the edge of the lamplight, a {adj} {noun} in one hand.",
    "The smell of {noun} and salt hangs over {p}, and the gulls have gone quiet.",
    "{A} leans close: nobody on this coast speaks of {o} after dark.",
    "A {adj} {noun} knocks against the stones of {p} with every wave.",
    "{B} points toward {p} and tells you to be there before the tide turns.",
    "For a heartbeat the {noun} flickers, and {A} grips your sleeve.",
    "The {adj} light shows tracks in the mud leading away from {p}.",
)
_LORE = (
    "Fishermen say {name} has been part of the coast longer than the oldest lamp.",
    "In the years of the long fog, {name} was the only sure thing between the quay and the "
    "Tidestone.",
    "Those who know {name} speak of {epithet}, and of little else.",
    "The Lamplighters' Guild keeps a page on {name}, sealed with grey wax.",
    "Children along the shore sing a counting rhyme about {name} and the drowned bells.",
    "Every storm season, someone claims to have seen {name} walking the breakwater at midnight.",
    "Records in the tide ledger mention {name} three times, each entry in a different hand.",
    "Nobody agrees on what {name} wants, only that it has to do with the lamps going dark.",
)
_CUSTOMS = (
    ("The lamps", "Every lamp on the coast is lit at dusk by the Guild and trimmed at "
     "midnight. A lamp that burns blue is said to be watched from the sea."),
    ("The drowned bells", "When the Drowned Chapel sank, its bells went with it. They ring "
     "on nights of fog, and a ship that hears them three times turns back."),
    ("Debts and ledgers", "Harbour debts pass from parent to child. The harbourmaster's "
     "ledger is law at Saltmarsh Quay, and a page torn from it is a crime."),
    ("The fog", "The fog comes in from the east and lies thickest over Hollow Fen. Old "
     "sailors steer by sound in it: the bell, the surf on the Tidestone, the gulls."),
)  # fmt: skip


def _names(e: Entity) -> str:
    return e.name[0].upper() + e.name[1:]


@dataclass(frozen=True)
class Turn:
    action: str  # the player's "do" text
    narration: str  # the narrator's reply


@dataclass
class Scene:
    place: Entity
    people: tuple[Entity, Entity]
    thing: Entity
    turns_left: int

    @classmethod
    def draw(cls, rng: random.Random) -> Scene:
        a, b = rng.sample(CHARACTERS, 2)
        return cls(rng.choice(PLACES), (a, b), rng.choice(OBJECTS), rng.randint(*SCENE_TURNS))


@dataclass
class Script:
    """The turns of one game, drawn from ``seed`` (lengths in ``counter``'s tokens)."""

    seed: int
    counter: TokenCounter
    turns: list[Turn] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._scene = Scene.draw(self._rng)

    def turn(self, index: int) -> Turn:
        while len(self.turns) <= index:
            self.turns.append(self._next())
        return self.turns[index]

    def _next(self) -> Turn:
        rng = self._rng
        if self._scene.turns_left <= 0:
            self._scene = Scene.draw(rng)
        scene = self._scene
        scene.turns_left -= 1
        a, b = scene.people
        action = rng.choice(_ACTIONS).format(
            a=a.name, b=b.name, p=scene.place.name, o=scene.thing.name
        )
        target = rng.randint(*NARRATION_TOKENS)
        sentences: list[str] = []
        while self.counter.count(" ".join(sentences)) < target:
            sentences.append(self._sentence(scene))
        return Turn(action, " ".join(sentences))

    def _sentence(self, scene: Scene) -> str:
        rng = self._rng
        people = list(scene.people)
        rng.shuffle(people)
        place, thing = scene.place, scene.thing
        if rng.random() < ELSEWHERE:
            people[1] = rng.choice(CHARACTERS)
        if rng.random() < ELSEWHERE:
            place = rng.choice(PLACES)
        text = rng.choice(_SENTENCES).format(
            A=people[0].name,
            B=people[1].name,
            p=place.name,
            o=thing.name,
            adj=rng.choice(_ADJECTIVES),
            noun=rng.choice(_NOUNS),
            verb=rng.choice(_VERBS),
        )
        return text[0].upper() + text[1:]


def cards() -> list[dict[str, object]]:
    """One story card per member of the cast, keyed on its full name and its keyword."""
    return [
        {
            "name": _names(e),
            "type": e.kind,
            "keywords": list(dict.fromkeys([e.name.removeprefix("the "), e.keyword])),
            "entry": f"{_names(e)} is {e.epithet}. "
            + _LORE[i % len(_LORE)].format(name=e.name, epithet=e.epithet),
        }
        for i, e in enumerate(CAST)
    ]


def bible(seed: int) -> str:
    """The setting's bible as Markdown: a section per member of the cast, then customs."""
    rng = random.Random(seed * 7 + 1)
    lines = [f"# {TITLE}: the setting", ""]
    for e in CAST:
        lines += [f"## {_names(e)}", ""]
        for _ in range(2):
            lore = rng.sample(_LORE, 3)
            text = f"{_names(e)}: {e.epithet}. " + " ".join(
                s.format(name=e.name, epithet=e.epithet) for s in lore
            )
            lines += [text, ""]
    for heading, text in _CUSTOMS:
        lines += [f"## {heading}", "", text, ""]
    return "\n".join(lines)
