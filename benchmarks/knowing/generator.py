"""A seeded generator of scenes where facts are stated with some of the cast away, some
later told to one who was away, and questions about each fact addressed to the cast.

``generate(seed, facts)`` writes a story for the real engine: ``continue`` turns only, so
each turn is one narration action at depth = its index + 1 (the opening is depth 0), and
the memory worker's blocks of six actions are depths ``6k .. 6k+5``. Invariants (the tests
check them):

- **Seeded and pure.** The same arguments give the same story, word for word.
- **Rules-readable moves.** Arrivals and leavings are sentences "Tobin arrives." and
  "Tobin leaves." that open a narration; each reads as exactly that one event. Nothing
  else the story says (facts, tellings aside, filler) is read as an event.
- **Block-aligned scenes.** A scene is one block: its first action holds every move, its
  second opens with the fact ("Maren hides the brass astrolabe under the third piling."),
  the other four are filler. So whoever is present at the fact is present throughout the
  block, except one who leaves later in it (``Fact.left_mid``, about a third of scenes):
  they saw the fact but not the whole stretch the product's rule reads.
- **Unique words.** Each fact has its own adjective, noun and place, used nowhere else in
  the story (filler shares none of them), so the object phrase names one fact and a
  telling of one fact never matches another.
- **Tellings are private.** "You tell Odo about the brass astrolabe." is said in a block
  where only Odo is with the player, to one who was away at the fact.
- **The truth is the generator's.** Who was present at the fact, throughout its block,
  and who was told, are recorded as the story is written, never read from the text.
- Filler follows the last fact long enough to push the facts out of the recent history;
  then everyone arrives, so each can be addressed by name (a vocative addresses only a
  person present).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from benchmarks.kit.play import Turn

BLOCK = 6
FIRST_NAMES = (
    "Tobin", "Maren", "Wenna", "Odo", "Idris", "Petra", "Corin", "Lisbet", "Anselm",
    "Brenna", "Jory", "Mabyn", "Nessa", "Orrin", "Sabine", "Tamar", "Ulric", "Yestin",
    "Zillah", "Elowen", "Fenwick", "Gisla", "Hollis", "Ketter",
)  # fmt: skip
PROTAGONIST = "Aro"
ADJECTIVES = (
    "brass", "cracked", "silver", "amber", "jade", "pewter", "copper", "ivory", "crimson",
    "ebony", "gilded", "tarnished", "velvet", "bone", "cobalt", "iron", "emerald", "coral",
    "scarlet", "onyx", "bronze", "tin", "ruby", "opal",
)  # fmt: skip
NOUNS = (
    "astrolabe", "ledger", "whistle", "vial", "comb", "flask", "compass", "locket", "sextant",
    "dagger", "chalice", "thimble", "spyglass", "signet", "hourglass", "amulet", "quill",
    "snuffbox", "tinderbox", "brooch", "medallion", "figurine", "inkwell", "reliquary",
)  # fmt: skip
PLACES = (
    "under the third piling",
    "beneath the old oak",
    "behind the loose brick",
    "in the sea chest",
    "inside the hollow post",
    "between the rafters",
    "beneath the cellar stairs",
    "under the chapel pew",
    "inside the broken clock",
    "behind the tapestry",
    "under the rain barrel",
    "in the well bucket",
    "beneath the hearthstone",
    "inside the ship's figurehead",
    "under the mill wheel",
    "behind the altar rail",
    "in the dovecote",
    "beneath the bell tower",
    "inside the empty cask",
    "under the lighthouse steps",
    "behind the chimney breast",
    "in the hayloft",
    "beneath the drawbridge",
    "inside the scarecrow",
)
VERBS = ("hides", "buries", "tucks", "stows", "wedges", "conceals")
PLAYER_VERBS = ("hide", "bury", "tuck", "stow", "wedge", "conceal")
FILLER = (
    "Rain drums on the shutters.", "A gull cries over the grey water.",
    "The lamps gutter in the draught.", "Somewhere a bell tolls twice.",
    "Nets hang drying from the rails.", "Smoke drifts low across the market.",
    "A cart rattles past on the cobbles.", "The tide sucks at the stones below.",
    "Wind worries at the loose slates.", "A dog barks two streets away.",
    "The fire settles with a soft crack.", "Fog creeps up from the harbour mouth.",
    "Somebody laughs in a room upstairs.", "Water drips steadily from the eaves.",
    "A moth circles the nearest candle.", "The floorboards creak as the house cools.",
    "Far off, a fiddle plays a slow tune.", "The smell of tar and salt hangs heavy.",
    "A shutter bangs, then falls quiet.", "Clouds slide across a thin moon.",
    "The kettle on the hob begins to sing.", "Gravel crunches under boots outside.",
    "A cat watches from the top of a wall.", "The wind turns and brings the smell of rain.",
    "Sparks climb the chimney and vanish.", "Ropes groan against the mooring posts.",
    "A lantern sways on its hook by the door.", "The last light fades from the windows.",
    "Distant thunder grumbles over the hills.", "A kettle of crabs clatters in a bucket.",
)  # fmt: skip
FILLER_SENTENCES = 4  # per filler narration: ~70 tokens, so ~40 actions fill the history
OPENING = "You walk into the Drowned Lantern, a tavern by the quay."
TELL_SHARE = 0.5  # facts later told to one who was away
MID_LEAVE_SHARE = 0.35  # scenes where a witness of the fact leaves before the block ends
AFTER_BLOCKS = 14  # filler blocks after the last fact: 84 actions, past the history at 4,096


@dataclass(frozen=True)
class Fact:
    index: int
    actor: str | None  # a cast member, or None for the player
    adjective: str
    noun: str
    place: str
    sentence: str
    depth: int  # the fact's action
    present: frozenset[str]  # the truth: present at the fact's action
    throughout: frozenset[str]  # present at every action of its block (the product's rule)
    left_mid: str | None = None  # saw the fact, left before the block ended
    told: tuple[tuple[str, int], ...] = ()  # (who, depth of the telling)

    @property
    def phrase(self) -> str:
        """What the detector looks for: the object, without its article."""
        return f"{self.adjective} {self.noun}"

    @property
    def obj(self) -> str:
        return f"the {self.phrase}"


@dataclass(frozen=True)
class Question:
    fact: int
    kind: str  # one of KINDS
    who: str | None  # the addressed character (None: a story action)
    type: str  # "say" or "story"
    text: str


KINDS = ("present", "present_left", "absent", "told", "story")
KIND_NAMES = {
    "present": "(a) present throughout",
    "present_left": "(a') saw it, left mid-stretch",
    "absent": "(b) absent, never told",
    "told": "(c) absent, told later",
    "story": "(d) story, addresses no one",
}


@dataclass
class KnowingStory:
    seed: int
    cast: tuple[str, ...]
    turns: list[Turn] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    opening: str = OPENING
    protagonist: str = PROTAGONIST

    @property
    def depth(self) -> int:
        """The depth of the newest action (the opening is 0)."""
        return len(self.turns)


class _Writer:
    """Writes the story block by block, keeping who is present."""

    def __init__(self, rng: random.Random, story: KnowingStory) -> None:
        self.rng, self.story = rng, story
        self.present: set[str] = set()

    def say(self, text: str) -> int:
        self.story.turns.append(Turn(("continue", ""), text))
        return self.story.depth

    def filler(self, lead: str = "") -> int:
        picked = self.rng.sample(FILLER, FILLER_SENTENCES)
        return self.say(" ".join([lead, *picked]).strip())

    def moves(self, wanted: set[str]) -> int:
        """The moves to ``wanted`` opening one narration (a filler one if none is needed)."""
        order = [n for n in self.story.cast if n in self.present and n not in wanted]
        left = [f"{n} leaves." for n in order]
        came = [f"{n} arrives." for n in self.story.cast if n in wanted and n not in self.present]
        self.present = set(wanted)
        return self.filler(" ".join(left + came))

    def pad_to_block(self) -> None:
        while (self.story.depth + 1) % BLOCK:
            self.filler()


def _fact(w: _Writer, index: int, words: tuple[str, str, str]) -> Fact:
    """One scene block: moves, the fact, filler (a witness may leave in it)."""
    rng, cast = w.rng, w.story.cast
    w.pad_to_block()
    w.moves(set(rng.sample(cast, rng.randint(1, 4))))
    adjective, noun, place = words
    actor = rng.choice(sorted(w.present)) if rng.random() < 0.8 else None
    verb = rng.choice(VERBS) if actor else rng.choice(PLAYER_VERBS)
    sentence = f"{actor or 'You'} {verb} the {adjective} {noun} {place}."
    present = frozenset(w.present)
    depth = w.filler(sentence)
    left_mid = None
    others = sorted(present - {actor} if actor else present)
    if others and rng.random() < MID_LEAVE_SHARE:
        w.filler()
        left_mid = rng.choice(others)
        w.present.discard(left_mid)
        w.filler(f"{left_mid} leaves.")
    w.pad_to_block()
    throughout = present - {left_mid} if left_mid else present
    return Fact(
        index, actor, adjective, noun, place, sentence, depth, present, throughout, left_mid
    )


def _tell(w: _Writer, fact: Fact) -> Fact:
    """A private telling block: only the told one with the player."""
    away = sorted(set(w.story.cast) - fact.present - {who for who, _ in fact.told})
    who = w.rng.choice(away)
    w.pad_to_block()
    w.moves({who})
    depth = w.filler(f"You tell {who} about {fact.obj}.")
    w.pad_to_block()
    return Fact(**{**fact.__dict__, "told": (*fact.told, (who, depth))})


def _questions(rng: random.Random, story: KnowingStory, fact: Fact) -> list[Question]:
    told = {who for who, _ in fact.told}
    asked: list[tuple[str, str | None]] = []
    if fact.throughout:
        asked.append(("present", rng.choice(sorted(fact.throughout))))
    if fact.left_mid:
        asked.append(("present_left", fact.left_mid))
    never = sorted(set(story.cast) - fact.present - told)
    if never:
        asked.append(("absent", rng.choice(never)))
    asked += [("told", who) for who in sorted(told)]
    out = [Question(fact.index, k, who, "say", f"{who}, where is {fact.obj}?") for k, who in asked]
    story_text = f"Everyone in the room wonders where {fact.obj} has gone."
    return [*out, Question(fact.index, "story", None, "story", story_text)]


def generate(seed: int, facts: int = 12, after_blocks: int = AFTER_BLOCKS) -> KnowingStory:
    rng = random.Random(seed)
    story = KnowingStory(seed, tuple(rng.sample(FIRST_NAMES, 6)))
    w = _Writer(rng, story)
    adjectives, nouns = rng.sample(ADJECTIVES, facts), rng.sample(NOUNS, facts)
    words = list(zip(adjectives, nouns, rng.sample(PLACES, facts), strict=True))
    pending: list[int] = []  # facts waiting to be told
    for index in range(facts):
        story.facts.append(_fact(w, index, words[index]))
        if rng.random() < TELL_SHARE and set(story.cast) - story.facts[index].present:
            pending.append(index)
        if pending and pending[0] < index and rng.random() < 0.6:
            first = pending.pop(0)
            story.facts[first] = _tell(w, story.facts[first])
    for index in pending:
        story.facts[index] = _tell(w, story.facts[index])
    for _ in range(after_blocks * BLOCK):
        w.filler()
    w.moves(set(story.cast))  # everyone gathers to be asked
    w.filler()
    story.questions = [q for f in story.facts for q in _questions(rng, story, f)]
    return story
