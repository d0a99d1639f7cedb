"""The recall benchmark's prose: settings, invented names, filler scenes and player actions.

What this module guarantees (the generator relies on it):

- Deterministic: every function draws only from the ``random.Random`` it is given.
- Filler never states a fact: it may name the roles, items and places the facts are
  about ("the ferryman", "the brass key", "the north gate"), so a probe's subject
  words also occur in scenes that hold no answer, but it never uses an invented
  name from ``NameMaker`` (those are reserved for facts) and never an answer word
  of a fact (``facts.ANSWER_WORDS``; a test checks).
- Filler shares vocabulary across scenes (the same places, weather, sounds and
  companions recur), so a look-alike scene is always near at hand.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    """One world: where the adventure happens and what fills its scenes."""

    name: str
    title: str
    places: tuple[str, ...]  # where filler scenes happen
    roles: tuple[str, ...]  # people named by their trade: the subjects of name facts
    gates: tuple[str, ...]  # what a password opens
    items: tuple[str, ...]  # what gets hidden
    things: tuple[str, ...]  # what gets taken somewhere (place facts)
    weather: tuple[str, ...]
    sounds: tuple[str, ...]
    smells: tuple[str, ...]


SETTINGS: tuple[Setting, ...] = (
    Setting(
        name="coast",
        title="The Drowned Bells of Saltmere",
        places=(
            "the harbour wall",
            "the fish market",
            "the lighthouse stair",
            "the tide caves",
            "the chandler's shop",
            "the customs house",
            "the net lofts",
            "the breakwater",
        ),
        roles=("ferryman", "harbourmaster", "lamplighter", "net-mender", "customs clerk"),
        gates=("sea gate", "customs vault", "lighthouse door"),
        items=("brass key", "tide chart", "signet ring", "bone whistle"),
        things=("ship's bell", "smuggled ledger", "drowned bride's veil"),
        weather=("a cold drizzle", "a low fog", "a salt wind", "a grey squall"),
        sounds=("gulls crying", "rigging creaking", "a distant bell", "waves on the stones"),
        smells=("tar", "wet rope", "fish guts", "woodsmoke"),
    ),
    Setting(
        name="mountain",
        title="The Pass of Nine Lanterns",
        places=(
            "the monastery gate",
            "the goat track",
            "the scriptorium",
            "the frozen tarn",
            "the shepherd's hut",
            "the bell tower",
            "the rope bridge",
            "the refectory",
        ),
        roles=("gatekeeper", "abbess", "shepherd", "bellringer", "herbalist"),
        gates=("north gate", "scriptorium door", "ossuary grate"),
        items=("iron key", "star map", "jade seal", "prayer rope"),
        things=("silver chalice", "heretic's psalter", "abbot's crozier"),
        weather=("driving snow", "a thin sun", "a hard frost", "low cloud"),
        sounds=("bells tolling", "wind in the crags", "goats bleating", "ice cracking"),
        smells=("incense", "tallow", "pine resin", "wet wool"),
    ),
    Setting(
        name="city",
        title="The Canals of Vescara",
        places=(
            "the glassblowers' quarter",
            "the grain quay",
            "the night market",
            "the old aqueduct",
            "the counting house",
            "the bathhouse",
            "the lamp-lit bridges",
            "the guild hall",
        ),
        roles=("gondolier", "moneylender", "glassblower", "watch captain", "archivist"),
        gates=("guild vault", "watch-house door", "archive stacks"),
        items=("copper key", "cipher wheel", "glass eye", "wax tablet"),
        things=("doge's seal", "forged charter", "stolen glass crown"),
        weather=("a warm rain", "a stinking heat", "canal mist", "a thunderstorm"),
        sounds=("oars knocking", "hawkers shouting", "church bells", "water lapping"),
        smells=("canal rot", "hot glass", "spiced wine", "damp stone"),
    ),
)

_ONSETS = "b br c d dr f g gr h k l m n p r s st t th v w z".split()  # noqa: SIM905
_VOWELS = "a e i o u a e o ai".split()  # noqa: SIM905
_CODAS = "l n r s th nd rk ll m st".split()  # noqa: SIM905
_ENDINGS = ("a", "en", "ric", "wyn", "ra", "is", "o", "el", "mar", "ith")


class NameMaker:
    """Invented proper names, each used once in an adventure (so a name identifies a fact)."""

    def __init__(self, rng: random.Random, taken: set[str] | None = None) -> None:
        self.rng = rng
        self.used: set[str] = set(taken or ())

    def _word(self, syllables: int) -> str:
        rng = self.rng
        parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)]
        word = "".join(parts) + rng.choice(_CODAS + list(_ENDINGS))
        return word.capitalize()

    def word(self, syllables: int = 2) -> str:
        while True:
            word = self._word(syllables)
            if word.lower() not in self.used and len(word) >= 4:
                self.used.add(word.lower())
                return word

    def person(self) -> str:
        return f"{self.word(1)} {self.word(2)}"


# -- filler ----------------------------------------------------------------------------------

_SCENE_SENTENCES = (
    "{weather} settles over {place}, and {companion} pulls {pos} collar up against it.",
    "You cross {place} with {companion} a step behind, listening to {sound}.",
    "The air at {place} smells of {smell}, and somewhere close you hear {sound}.",
    "{companion} stops to watch the {role} at work near {place}, then shrugs and walks on.",
    "The {role} nods to you in passing but has nothing new to say.",
    "A child runs past {place} with a basket of bread, scattering pigeons.",
    "You check your pack again: rope, a flint, the last of the dried apples.",
    "{companion} mutters that the {gate} is watched more closely since the thefts.",
    "Rumour at {place} says the {thing} has been seen again, though nobody agrees where.",
    "You sit for a while on a cold bench at {place} and let your feet rest.",
    "{companion} laughs at something you say, the first laugh in days.",
    "Lamps are being lit along {place} as the light goes out of the sky.",
    "The {role} is arguing with a carter about a debt, loudly and at length.",
    "Your boots are soaked through, and {weather} shows no sign of lifting.",
    "{companion} studies the crowd at {place} and says nobody seems to be following you.",
    "You buy a hot pie from a stall and share it with {companion}.",
    "Old men play dice in a doorway near {place}, arguing over every throw.",
    "The {item} in your pack feels heavier than it should, or perhaps you are only tired.",
    "Somewhere beyond {place} you hear {sound}, and then only the wind.",
    "{companion} hums an old tune under {pos} breath as you walk.",
    "A stray dog follows you halfway across {place} before losing interest.",
    "You pause to get your bearings; {place} looks different in {weather}.",
    "{companion} asks whether the {role} can be trusted, and you have no good answer.",
    "Nothing much happens for an hour except {weather} and {sound}.",
    "The {role} at {place} swears the prices were lower last winter.",
    "Your {part} aches from the weight of the pack.",
    "Two guards in faded tabards lean on their spears by the {gate}.",
    "A notice nailed up near {place} offers a reward for news of the {thing}.",
    "Someone has chalked a crude map of {place} on a wall, already half washed away.",
    "The {role} counts coins into a leather purse and does not look up.",
    "A cart loaded with barrels rattles past, and you step aside to let it by.",
    "The bells ring the hour, three slow strokes, and the street empties a little.",
    "You keep one hand on the {item} through the cloth of your pack.",
    "Smoke from a dozen cookfires hangs low over {place}.",
    "An old woman sells charms against bad luck at the edge of {place}.",
    "A beggar asks you for a coin and blesses you when you give one.",
    # The words probes use ("password", "name", "hide", "promise", "scar", ...), in scenes that
    # hold no answer: a probe's own words are not enough to find its fact.
    "The guards at the {gate} demand the password from a carter and wave him through.",
    "A pedlar at {place} asks your name, then forgets it before you have finished saying it.",
    "Children play at hide and seek among the crates at {place}.",
    "Thieves carried off a crate of goods from {place} last night, people say.",
    "The {role} talks about family quarrels to anyone who will listen.",
    "Somebody near {place} is shouting that a promise is a promise.",
    "Your old scar itches in {weather}, the way it always does.",
    "{companion} wants to know where you hid the last of the coins, so you show {pos} the purse.",
    "The watchword of the night watch changes every month, or so the {role} claims.",
    "You try to remember the way back to {place} and take a wrong turn anyway.",
)

_PARTS = ("forearm", "thigh", "shoulder", "hand", "ankle")

# Other words for the subjects of facts: a probe names its subject this way about one time
# in three, so finding the fact takes more than matching the subject's own words.
ALIASES = {
    "ferryman": "boatman",
    "harbourmaster": "master of the harbour",
    "lamplighter": "man who lights the lamps",
    "net-mender": "old one who mends the nets",
    "customs clerk": "tax clerk",
    "sea gate": "harbour gate",
    "customs vault": "strongroom at the customs house",
    "lighthouse door": "door of the light tower",
    "brass key": "old yellow key",
    "tide chart": "sea chart",
    "signet ring": "seal ring",
    "bone whistle": "whistle carved from bone",
    "ship's bell": "bell from the wreck",
    "smuggled ledger": "contraband account book",
    "drowned bride's veil": "dead bride's veil",
    "gatekeeper": "porter at the gate",
    "abbess": "mother superior",
    "shepherd": "goatherd",
    "bellringer": "one who rings the bells",
    "herbalist": "healer who grows herbs",
    "north gate": "northern gate",
    "scriptorium door": "door of the writing room",
    "ossuary grate": "grille of the bone-house",
    "iron key": "heavy black key",
    "star map": "chart of the stars",
    "jade seal": "green stone seal",
    "prayer rope": "knotted prayer cord",
    "silver chalice": "silver cup",
    "heretic's psalter": "forbidden prayer book",
    "abbot's crozier": "abbot's staff",
    "gondolier": "boatman",
    "moneylender": "usurer",
    "glassblower": "glass maker",
    "watch captain": "captain of the watch",
    "archivist": "keeper of the records",
    "guild vault": "guild's strongroom",
    "watch-house door": "door of the watch post",
    "archive stacks": "record shelves",
    "copper key": "little red-gold key",
    "cipher wheel": "code wheel",
    "glass eye": "false eye",
    "wax tablet": "writing tablet",
    "doge's seal": "doge's signet",
    "forged charter": "fake charter",
    "stolen glass crown": "crown of glass",
    "forearm": "arm",
    "thigh": "leg",
    "ankle": "foot",
}
ALIAS_SHARE = 1 / 3


def alias(rng: random.Random, subject: str) -> str:
    """Another name for ``subject``, one time in three (the subject itself otherwise)."""
    other = ALIASES.get(subject)
    return other if other is not None and rng.random() < ALIAS_SHARE else subject


_DO_ACTIONS = (
    "walk with {companion} to {place}",
    "look around {place} for anything out of place",
    "follow {companion} through {place}",
    "wait near {place} and watch the crowd",
    "ask the {role} whether anything has changed",
    "check that the {item} is still in my pack",
    "buy some bread and share it with {companion}",
    "rest for a while at {place}",
    "head toward {place} before the light goes",
    "listen for {sound} and keep walking",
    "keep an eye on the {gate} from a distance",
    "count my coins and make a plan with {companion}",
)

_SAY_ACTIONS = (
    "{companion}, let's try {place} next.",
    "Do you think the {role} knows more than they say?",
    "We should keep moving before {weather} gets worse.",
    "I'm tired, {companion}. Let's stop for a bit.",
    "What do people here say about the {thing}?",
    "Stay close, {companion}. I don't like this crowd.",
    "Have you ever been to {place} before?",
    "We need to think about the {gate} before we try anything.",
    "Is it always this loud near {place}?",
    "Thank you for coming with me, {companion}.",
)


@dataclass(frozen=True)
class Cast:
    """The recurring people of one adventure: the protagonist and two companions."""

    protagonist: str
    companions: tuple[str, str]
    pronouns: tuple[str, str]  # the companions' possessive pronouns


def _slots(rng: random.Random, setting: Setting, cast: Cast) -> dict[str, str]:
    which = rng.randrange(2)
    return {
        "place": rng.choice(setting.places),
        "companion": cast.companions[which],
        "pos": cast.pronouns[which],
        "role": rng.choice(setting.roles),
        "gate": rng.choice(setting.gates),
        "item": rng.choice(setting.items),
        "thing": rng.choice(setting.things),
        "weather": rng.choice(setting.weather),
        "sound": rng.choice(setting.sounds),
        "smell": rng.choice(setting.smells),
        "part": rng.choice(_PARTS),
    }


def _sentence(template: str, rng: random.Random, setting: Setting, cast: Cast) -> str:
    text = template.format(**_slots(rng, setting, cast))
    return text[0].upper() + text[1:]


def narration(rng: random.Random, setting: Setting, cast: Cast, chars: int = 420) -> str:
    """A filler narration of about ``chars`` characters: scene sentences, no template twice."""
    order = rng.sample(range(len(_SCENE_SENTENCES)), len(_SCENE_SENTENCES))
    picked: list[str] = []
    for index in order:
        if sum(len(s) + 1 for s in picked) >= chars:
            break
        picked.append(_sentence(_SCENE_SENTENCES[index], rng, setting, cast))
    return " ".join(picked)


def player_action(rng: random.Random, setting: Setting, cast: Cast) -> tuple[str, str]:
    """A filler player action: ("do", text) or ("say", text)."""
    slots = _slots(rng, setting, cast)
    if rng.random() < 0.5:
        return "do", "I " + rng.choice(_DO_ACTIONS).format(**slots)
    return "say", rng.choice(_SAY_ACTIONS).format(**slots)


def opening(setting: Setting, cast: Cast) -> str:
    first, second = cast.companions
    return (
        f"You arrive with {first} and {second} as {setting.weather[0]} rolls in. "
        f"Nobody at {setting.places[0]} looks pleased to see strangers, and the "
        f"{setting.roles[0]} watches your little party for a long time before turning away."
    )
