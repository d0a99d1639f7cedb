"""A generated gazetteer: a book-sized Markdown document dense with facts, and questions that
ask for those facts in other words.

A ``Book`` describes an invented realm by topic, as a reference book does: six chapters
(``##``, ``CHAPTERS``), each going through the same regions (``###``) town by town, a
paragraph for a town's own facts of the chapter's kinds and one for each of its people's.
So an entity's facts are spread over the whole book, several towns share a passage, and a
question must find both the right entity and the right topic. Invariants (the tests check
them):

- **Seeded.** ``generate(seed, target_bytes)`` depends on nothing else: the same arguments
  give the same book, byte for byte, and the same questions.
- **Dense, and the words collide.** Every sentence states a fact. Every town states most
  of the same thirteen kinds of fact in the same few wordings and every person most of
  the same six, so a question's words other than its entity's name are held by hundreds
  of passages; town names recur in other towns' and people's sentences (rivals,
  birthplaces), first names and surnames are shared, and values repeat.
- **Stated once.** A fact is one sentence naming its entity (a town, or a person by full
  name); an entity holds at most one fact of a kind, so the passage holding the sentence
  is the only one that answers a question about it.
- **Paraphrased.** A question names the entity as its statement does and shares no other
  term (``services.memory.terms``) with any wording of its kind's statement, nor with its
  answer. Which wording states a fact and which asks for it are drawn independently.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from benchmarks.kit.names import NameMaker

BYTES_PER_TOWN = 2_000  # about: a town with its folk, to size the list of names
FOLK = (3, 6)  # notable people per town
TOWN_FACTS = (9, 12)  # of the 13 town kinds
PERSON_FACTS = (4, 6)  # of the 6 person kinds
TOWNS_PER_REGION = (8, 14)
# The chapters (``##``), each in the same regions (``###``): a town's facts are spread
# over every chapter, as a reference book sorts by topic, not by place.
CHAPTERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Foundations", ("founded", "river", "stone", "landmark")),
    ("Trade and Markets", ("export", "guild", "market", "dish")),
    ("Feasts and Faith", ("festival", "patron")),
    ("Rule and Quarrels", ("ruler", "rival", "danger")),
    ("Folk and Their Trades", ("trade", "fear", "treasure")),
    ("Households", ("born", "spouse", "debt")),
)


@dataclass(frozen=True)
class Kind:
    """One kind of fact: its statements and its paraphrased questions. ``{E}`` is the entity
    (a town, or a person's full name), ``{v}`` the value, ``{T}`` a person's town."""

    key: str
    entity: str  # "town" or "person"
    statements: tuple[str, ...]
    questions: tuple[str, ...]


# fmt: off
KINDS: tuple[Kind, ...] = (
    Kind("export", "town", (
        "The chief export of {E} is {v}, carried down to the coast by barge every autumn.",
        "{E} grows rich on {v}, which its merchants ship to every port of the realm.",
    ), ("What goods does {E} sell to other lands?", "Which product earns {E} its wealth?")),
    Kind("river", "town", (
        "{E} stands on the banks of the {v}, a slow brown river full of reeds.",
        "The {v} winds through the middle of {E}, crossed by three stone bridges.",
    ), ("Which waterway flows past {E}?", "Name the stream that runs by {E}.")),
    Kind("founded", "town", (
        "{E} was founded in the year {v} by settlers from the south.",
        "The first walls of {E} were raised in the year {v}, after a hard winter.",
    ), ("When was {E} established?", "How long ago did {E} come into being?")),
    Kind("ruler", "town", (
        "{E} is governed by {v}, who holds the charter of the town.",
        "Since the last election {v} has held the seat of power in {E}.",
    ), ("Who rules over {E}?", "Who is in charge of {E} today?")),
    Kind("festival", "town", (
        "Every midsummer {E} celebrates {v}, with music and dancing until dawn.",
        "The great day of the calendar in {E} is {v}, when every door stands open.",
    ), ("What holiday do the folk of {E} keep?", "Which festivity is observed in {E}?")),
    Kind("dish", "town", (
        "The taverns of {E} are famous for {v}.",
        "No visitor leaves {E} without tasting {v}, the local speciality.",
    ), ("What food is {E} known for?", "Which meal should a traveller order in {E}?")),
    Kind("stone", "town", (
        "Most houses in {E} are built of {v}.",
        "The walls and roofs of {E} are made of {v}, which gives the place its colour.",
    ), (
        "What material do the builders of {E} use?",
        "What are the homes of {E} constructed from?",
    )),
    Kind("rival", "town", (
        "{E} has quarrelled with {v} over grazing rights for three generations.",
        "There is bad blood between {E} and nearby {v}, and nobody remembers why.",
    ), ("Which neighbour is {E} at odds with?", "With what place does {E} feud?")),
    Kind("guild", "town", (
        "The most powerful company in {E} is {v}.",
        "Nothing happens in {E} without the say of {v}.",
    ), ("Which trade association holds sway over {E}?", "Who truly pulls the strings in {E}?")),
    Kind("patron", "town", (
        "The people of {E} pray to {v} above all others.",
        "A shrine to {v} stands in the square of {E}, lit day and night.",
    ), ("Which holy figure protects {E}?", "Whom do the faithful of {E} worship?")),
    Kind("market", "town", (
        "Market day in {E} falls on {v}.",
        "The traders of {E} set out their stalls every {v}.",
    ), ("When do sellers gather in {E} each week?", "On what weekday can one shop in {E}?")),
    Kind("landmark", "town", (
        "The oldest building in {E} is {v}.",
        "Visitors to {E} are always shown {v}, older than anything else there.",
    ), ("What is the most ancient structure in {E}?", "Which sight in {E} dates back furthest?")),
    Kind("danger", "town", (
        "Travellers near {E} are warned about {v}.",
        "The roads around {E} are unsafe after dark because of {v}.",
    ), ("What threat lurks outside {E}?", "What peril menaces wayfarers close to {E}?")),
    Kind("trade", "person", (
        "{E} works as the {v} of {T}.",
        "{E} has been the {v} in {T} for twenty years.",
    ), ("How does {E} earn a living?", "What is {E}'s occupation?")),
    Kind("born", "person", (
        "{E} was born in {v}.",
        "{E} grew up in {v} before moving here.",
    ), ("Where does {E} come from originally?", "What is the hometown of {E}?")),
    Kind("spouse", "person", (
        "{E} is married to {v}.",
        "{E} took {v} as a partner three summers ago.",
    ), ("Who is {E}'s husband or wife?", "To whom is {E} wed?")),
    Kind("fear", "person", (
        "{E} is terrified of {v}.",
        "Nothing unsettles {E} so much as {v}.",
    ), ("What frightens {E} most?", "What is {E} afraid of?")),
    Kind("debt", "person", (
        "{E} owes forty silver marks to {v}.",
        "{E} borrowed heavily from {v} and has not paid it back.",
    ), ("To whom is {E} in debt?", "Who lent {E} money?")),
    Kind("treasure", "person", (
        "{E} keeps {v} hidden beneath the floorboards.",
        "Locked in a chest at home, {E} guards {v}.",
    ), ("What does {E} conceal?", "What secret possession does {E} have?")),
)
# fmt: on
BY_KEY = {k.key: k for k in KINDS}
TOWN_KINDS = tuple(k for k in KINDS if k.entity == "town")
PERSON_KINDS = tuple(k for k in KINDS if k.entity == "person")

# The values drawn from a list, by kind. Shared words are on purpose: "tanned hides" and
# "the Guild of Tanners", "salted herring" and "herring pie", "wolves" twice: the words
# collide across kinds.
# fmt: off
POOLS: dict[str, tuple[str, ...]] = {kind: tuple(values.split(", ")) for kind, values in {
    "export": "salted herring, tanned hides, river pearls, blue dye, copper ingots, barley beer, "
        "goose feathers, slate tiles, wool cloth, amber beads, smoked eels, beeswax candles, "
        "iron nails, hemp rope, pear cider, saffron, glass beads, cheese wheels, charcoal, "
        "walnut oil, dried figs, horn combs, linen thread, salt, pewter cups, oak barrels, "
        "honey, millstones",
    "festival": "the Feast of Lanterns, the Night of Bells, the Burning of the Straw Man, "
        "the Blessing of the Nets, the First Bread, the Goose Fair, the Festival of Masks, "
        "the Drowned Bell Vigil, the Apple Wake, the Horse Races, the Candle Walk, "
        "the Feast of Fools, the Midsummer Bonfire, the Frost Market, the Day of Ribbons, "
        "the Sheep Shearing Fair",
    "dish": "herring pie, eel stew, barley bread with honey, roast goose, walnut cake, "
        "mutton broth, fried trout, blood sausage, pear dumplings, cheese soup, "
        "oat porridge with cream, smoked ham, saffron buns, pickled cabbage, lamb pie, "
        "fig tarts, carp in aspic, mushroom pasties, spiced wine, black pudding",
    "stone": "grey slate, red brick, white chalk, black basalt, yellow sandstone, river cobbles, "
        "timber and thatch, pale limestone, green marble, granite, wattle and daub, dark flint, "
        "pink granite, oak beams",
    "guild": "the Guild of Tanners, the Salt Guild, the Brotherhood of Boatmen, "
        "the Company of Brewers, the Guild of Masons, the Weavers' Hall, "
        "the Fellowship of Smiths, the Candlemakers' League, the Order of Carters, "
        "the Glassblowers' Society, the Millers' Union, the Coopers' Guild, the Dyers' Company, "
        "the Fishwives' Circle",
    "market": "Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday",
    "landmark": "the bell tower, the old mill, the round keep, the toll bridge, the chapel, "
        "the granary, the lighthouse, the watchtower, the covered market, the bathhouse, "
        "the moot hall, the tithe barn, the standing stone, the ruined abbey, the customs house, "
        "the well house",
    "danger": "wolves, bandits, bog lights that lead walkers astray, rockfalls, river fever, "
        "smugglers, wild boar, quicksand on the tidal flats, deserters, a rogue bear, "
        "snow drifts, toll thieves, sinkholes, flash floods",
    "trade": "ferryman, smith, miller, brewer, reeve, midwife, tanner, cooper, chandler, "
        "bailiff, herbalist, innkeeper, weaver, mason, carter, glassblower, dyer, beekeeper, "
        "scribe, harbourmaster, gravedigger, lamplighter, tax collector, schoolteacher",
    "fear": "deep water, thunder, spiders, the dark, fire, horses, crowds, heights, dogs, "
        "ghosts, the sea, closed rooms, snakes, owls",
    "treasure": "a silver compass, a sealed letter, a bag of old coins, a jewelled dagger, "
        "a map of the marshes, a wedding ring, a book of spells, a golden locket, "
        "a stolen ledger, a pearl necklace, a bone flute, a brass key, a lock of hair, "
        "a forged deed, a small idol, a ruby brooch",
}.items()}
# fmt: on
TITLES = ("Lord", "Lady", "Mayor", "Provost", "Elder", "Baron", "Baroness", "Warden")
REGION_WORDS = ("Marches", "Vale", "Coast", "Fells", "Downs", "Reach", "Lowlands", "Hills")


@dataclass(frozen=True)
class Fact:
    key: str  # unique in the book: "t12.export", "p40.fear"
    kind: str
    entity: str  # as the statement and the question name it
    sentence: str  # verbatim in the book
    value: str  # what the question asks for
    question: str  # the paraphrase


@dataclass
class Book:
    seed: int
    title: str
    markdown: str
    facts: list[Fact] = field(default_factory=list)
    towns: int = 0
    people: int = 0

    @property
    def data(self) -> bytes:
        return self.markdown.encode("utf-8")

    @property
    def filename(self) -> str:
        return f"gazetteer-{self.seed}.md"


def fill(template: str, entity: str, value: str = "", town: str = "") -> str:
    text = template.replace("{E}", entity).replace("{v}", value).replace("{T}", town)
    return text[0].upper() + text[1:]


@dataclass
class _Town:
    name: str
    region: int
    groups: list[dict[str, Fact]]  # its own facts, then each of its people's, by kind


class _Writer:
    def __init__(self, seed: int, target_bytes: int) -> None:
        self.rng = random.Random(f"gazetteer/{seed}")
        self.names = NameMaker(self.rng)
        self.seed = seed
        self.target = target_bytes
        count = max(4, target_bytes // BYTES_PER_TOWN * 3 // 2 + 4)
        self.town_names = [self.names.word(2) for _ in range(count)]
        # Shared name pools: a first name or a surname is held by many people.
        self.firsts = [self.names.word(1) for _ in range(max(20, count // 2))]
        self.surnames = [self.names.word(2) for _ in range(max(20, count // 2))]
        self.people: list[str] = []  # the towns' people (not their spouses)
        self.full_names: set[str] = set()
        self.facts: list[Fact] = []
        self.regions: list[str] = []
        self.region_left = 0

    def person_name(self) -> str:
        for _ in range(200):
            name = f"{self.rng.choice(self.firsts)} {self.rng.choice(self.surnames)}"
            if name not in self.full_names:
                self.full_names.add(name)
                return name
        raise ValueError("no free full name left")  # never at these pool sizes

    def value(self, kind: str, entity: str, town: str) -> str:
        rng, word = self.rng, self.names.word
        if kind in POOLS:
            return rng.choice(POOLS[kind])
        match kind:
            case "river":
                return f"{word(2)} River"
            case "founded":
                return str(rng.randint(212, 1390))
            case "ruler":
                return f"{rng.choice(TITLES)} {word(1)} {rng.choice(self.surnames)}"
            case "rival" | "born":  # another town (a person's: not their own)
                return rng.choice([t for t in self.town_names if t not in (entity, town)])
            case "patron":
                return f"Saint {word(2)}"
            case "spouse":
                return self.person_name()
            case "debt":
                others = [p for p in self.people if p != entity]
                return rng.choice(others) if others else self.person_name()
        raise ValueError(f"unknown kind {kind!r}")

    def fact(self, key: str, kind: Kind, entity: str, town: str = "") -> Fact:
        value = self.value(kind.key, entity, town)
        sentence = fill(self.rng.choice(kind.statements), entity, value, town)
        question = fill(self.rng.choice(kind.questions), entity)
        fact = Fact(key, kind.key, entity, sentence, value, question)
        self.facts.append(fact)
        return fact

    def town(self, index: int, region: int) -> _Town:
        name, rng = self.town_names[index], self.rng
        own = rng.sample(TOWN_KINDS, rng.randint(*TOWN_FACTS))
        town = _Town(name, region, [{k.key: self.fact(f"t{index}.{k.key}", k, name) for k in own}])
        for _ in range(rng.randint(*FOLK)):
            key, person = f"p{len(self.people)}", self.person_name()
            self.people.append(person)
            kinds = rng.sample(PERSON_KINDS, rng.randint(*PERSON_FACTS))
            town.groups.append({k.key: self.fact(f"{key}.{k.key}", k, person, name) for k in kinds})
        return town

    def write(self) -> Book:
        realm = self.names.word(2)
        title = f"A Gazetteer of {realm}"
        towns: list[_Town] = []
        size = len(self.render(title, realm, []).encode("utf-8"))  # then counted as rendered
        while size < self.target and len(towns) < len(self.town_names):
            size += self.add_town(towns)
        book = Book(self.seed, title, self.render(title, realm, towns), self.facts)
        book.towns, book.people = len(towns), len(self.people)
        return book

    def add_town(self, towns: list[_Town]) -> int:
        """A new town (in a new region when the last is full); the bytes it adds."""
        added = 0
        if not towns or self.region_left == 0:
            region = f"The {self.names.word(2)} {self.rng.choice(REGION_WORDS)}"
            self.regions.append(region)
            self.region_left = self.rng.randint(*TOWNS_PER_REGION)
            added += len(CHAPTERS) * (len(f"### {region}".encode()) + 2)
        town = self.town(len(towns), len(self.regions) - 1)
        towns.append(town)
        self.region_left -= 1
        for _, kinds in CHAPTERS:
            for paragraph in self.chapter_paragraphs(town, kinds):
                added += len(" ".join(paragraph).encode("utf-8")) + 2
        return added

    def render(self, title: str, realm: str, towns: list[_Town]) -> str:
        lines = [f"# {title}", ""]
        lines += [
            f"This book describes the towns of {realm} as they stand today, topic by topic "
            "and region by region: how each began, what it trades and celebrates, who "
            "governs it, and the people a traveller is likely to meet there.",
            "",
        ]
        for chapter, kinds in CHAPTERS:
            lines += [f"## {chapter}", ""]
            for r, region in enumerate(self.regions):
                lines += [f"### {region}", ""]
                for town in (t for t in towns if t.region == r):
                    for paragraph in self.chapter_paragraphs(town, kinds):
                        lines += [" ".join(paragraph), ""]
        return "\n".join(lines).rstrip() + "\n"

    def chapter_paragraphs(self, town: _Town, kinds: tuple[str, ...]) -> list[list[str]]:
        """A town's paragraphs in a chapter: its own sentences of the chapter's kinds, then
        one paragraph a person (those who state any), each in an order drawn from the
        town's and the chapter's names (the same on every rendering)."""
        out: list[list[str]] = []
        for n, facts in enumerate(town.groups):
            said = [facts[k].sentence for k in kinds if k in facts]
            if said:
                random.Random(f"{self.seed}/{town.name}/{kinds[0]}/{n}").shuffle(said)
                out.append(said)
        return out


def generate(seed: int, target_bytes: int) -> Book:
    """A gazetteer of about ``target_bytes`` of Markdown (whole towns: a little over)."""
    return _Writer(seed, target_bytes).write()


def questions(book: Book, count: int) -> list[Fact]:
    """``count`` facts of the book to ask about, drawn evenly over kinds (seeded)."""
    rng = random.Random(f"questions/{book.seed}")
    by_kind: dict[str, list[Fact]] = {}
    for fact in book.facts:
        by_kind.setdefault(fact.kind, []).append(fact)
    pools = [rng.sample(facts, len(facts)) for _, facts in sorted(by_kind.items())]
    chosen: list[Fact] = []
    while len(chosen) < count and any(pools):
        for pool in pools:
            if pool and len(chosen) < count:
                chosen.append(pool.pop())
    return chosen
