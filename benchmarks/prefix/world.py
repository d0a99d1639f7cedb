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
  history section's text splits back into its actions at ``sections.SEPARATOR``.
- A moving world (``Script(moving=True)``, the default) also changes what the world's
  rules read (``services.world.rules``), in plain sentences that open a narration: each
  new scene the player goes to its place (the action says so, "I head for Hollow Fen",
  and the narration, "You walk into Hollow Fen.") and its two people are there ("Maren
  Tull is waiting for you.", "Alric Vane joins you."); within a scene, on about one turn
  in ``WORLD_CHANCE``, the player picks up, puts down or hands over one of ``ITEMS``, or
  one of the people leaves; every ``TIME_TURNS`` turns the clock moves ("The next
  morning, ..."). So the context's Current state section says something and changes now
  and then, as in real play. These sentences come from a random stream of their own and
  add to the narration's drawn length, so a still world (``moving=False``) plays the same
  scenes, actions (but the goings) and narrations without them, and its rules read nothing
  the state shows (a telling, at most: who learns what is no field of it).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from talekeeper.core.tokens import TokenCounter

NARRATION_TOKENS = (120, 200)  # the range a narration's length is drawn from
SCENE_TURNS = (3, 7)  # turns a scene lasts
ELSEWHERE = 0.12  # the chance a sentence names someone or something outside the scene
WORLD_CHANCE = 0.3  # the chance a turn within a scene changes the world (moving world)
TIME_TURNS = (8, 12)  # turns between two moves of the clock (moving world)
MAX_CARRIED = 3  # the player puts something down before picking up a fourth thing


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
# What the player can carry in a moving world (the two items of the cast among them).
ITEMS = (
    "the brass compass", "the tide ledger", "the brass lantern", "the sealed letter",
    "the bone whistle", "the rusted key", "a coil of tarred rope",
)  # fmt: skip

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
# A moving world's sentences, each read by the world's rules as one change.
_GOING = ("I head for {p}", "I make my way to {p}", "I walk to {p}", "I go to {p}")
_ARRIVING = ("You walk into {p}.", "You arrive at {p}.", "You step into {p}.")
_WAITING = ("{A} is waiting for you.", "{A} steps out of the shadows.", "{A} turns up.")
_JOINING = ("{B} joins you.", "{B} arrives.", "{B} hurries over.")
_TAKING = ("You pick up {i}.", "You tuck {i} into your coat.", "You pocket {i}.")
_PUTTING = ("You set {i} down.", "You leave {i} behind.", "You put down {i}.")
_HANDING = ("You hand {i} to {A}.", "You give {i} to {A}.")
_LEAVING = ("{A} slips away.", "{A} leaves.", "{A} walks away.")
_TIMES = (
    "The next morning, the fog lies low over {p}.",
    "At dusk, the lamps along the shore burn blue.",
    "Night falls over {p}.",
    "By noon, the tide has turned.",
    "Hours later, the bell sounds once more.",
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
    world: tuple[str, ...] = ()  # the sentences of the narration that change the world


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
    """The turns of one game, drawn from ``seed`` (lengths in ``counter``'s tokens); in a
    ``moving`` world its narrations also move the player, the things carried, the people
    present and the clock (see the module's docstring)."""

    seed: int
    counter: TokenCounter
    moving: bool = True
    turns: list[Turn] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._scene = Scene.draw(self._rng)
        self._new_scene = True
        # The world's changes draw from a stream of their own: a still world's script is
        # the moving one's without them.
        self._world = random.Random(self.seed * 7919 + 3)
        self._carried: list[str] = []
        self._present: list[Entity] = []
        self._clock = self._world.randint(*TIME_TURNS)

    def turn(self, index: int) -> Turn:
        while len(self.turns) <= index:
            self.turns.append(self._next())
        return self.turns[index]

    def _next(self) -> Turn:
        rng = self._rng
        if self._scene.turns_left <= 0:
            self._scene = Scene.draw(rng)
            self._new_scene = True
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
        world: list[str] = []
        if self.moving:
            if self._new_scene:
                action = self._world.choice(_GOING).format(p=scene.place.name)
            world = self._changes(scene)
        self._new_scene = False
        return Turn(action, " ".join(world + sentences), tuple(world))

    def _changes(self, scene: Scene) -> list[str]:
        """This turn's changes to the world, as the sentences that open its narration."""
        rng = self._world
        out: list[str] = []
        if self._new_scene:
            a, b = scene.people
            out.append(_capital(rng.choice(_ARRIVING).format(p=scene.place.name)))
            out.append(rng.choice(_WAITING).format(A=a.name))
            out.append(rng.choice(_JOINING).format(B=b.name))
            self._present = [a, b]
        elif rng.random() < WORLD_CHANCE:
            out.append(self._change(scene))
        self._clock -= 1
        if self._clock <= 0:
            out.append(rng.choice(_TIMES).format(p=scene.place.name))
            self._clock = rng.randint(*TIME_TURNS)
        return out

    def _change(self, scene: Scene) -> str:
        """One change within a scene: something taken, put down or handed over, or someone
        leaving."""
        rng = self._world
        kinds = ["take"] if len(self._carried) < MAX_CARRIED else []
        if self._carried:
            kinds += ["put", "hand"] if self._present else ["put"]
        if len(self._present) > 1:
            kinds.append("leave")
        kind = rng.choice(kinds)
        if kind == "take":
            item = rng.choice([i for i in ITEMS if i not in self._carried])
            self._carried.append(item)
            return _capital(rng.choice(_TAKING).format(i=item))
        if kind == "leave":
            person = self._present.pop(rng.randrange(len(self._present)))
            return rng.choice(_LEAVING).format(A=person.name)
        item = self._carried.pop(rng.randrange(len(self._carried)))
        if kind == "hand":
            return rng.choice(_HANDING).format(i=item, A=rng.choice(self._present).name)
        return _capital(rng.choice(_PUTTING).format(i=item))

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
        return _capital(text)


def _capital(text: str) -> str:
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
