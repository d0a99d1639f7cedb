"""The dense benchmark's vocabulary: fact templates, value pools, frames around a fact.

A ``Template`` is one way to state one fact about a person (its *subject*): the
statement (``sentence``), the question that asks for it in the statement's own
words (``direct``) and, where one exists, the question that asks for it in
other words (``paraphrase``). Placeholders (filled by ``world``):

- ``{S}``, ``{S's}``, ``{So}``, ``{Sp}``: the subject as subject, possessive,
  object and possessive pronoun ("Tal", "Tal's", "Tal", "his"; "I", "my", "me",
  "my"; "you", "your", "you", "your"), ``{Sa}``: a role subject under its
  alias; ``{R}``, ``{Ro}``: a second person; ``{v:lives}``: a verb agreeing with
  the subject (written in the third person);
- values: ``{P}`` a fresh place, ``{N}`` / ``{NL}`` a fresh first / full name,
  ``{D}`` a date ("ninth of March"), ``{O}`` / ``{aO}`` an object ("grey mare" /
  "a grey mare"), ``{food}``, ``{music}``, ``{shop}``, ``{trade}``,
  ``{verdict}``; scenery: ``{Q}`` one of the adventure's towns, ``{thing}``.

Invariants (``world`` and the tests rely on them):

- ``answer`` names the value placeholders whose words identify the fact; those
  words are never a person's name, a subject's words or "you", and never occur
  in ``direct`` or ``paraphrase`` (the value is what is asked for).
- A paraphrase shares with the statement at most the words naming the people
  in it (subject and second person): the thing asked about is said otherwise.
- No word of a value pool occurs in another pool, a template, a frame, a post
  or a relation, so a value word in a text is there because a fact put it
  there (values within one pool may share a word: "a print shop", "a hat shop").
- ``slot``: a person holds one statement per slot in an adventure ("where
  Tal lives" is said once), so every question has exactly one answer.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("name", "relation", "date", "place", "possession", "plan", "opinion")


@dataclass(frozen=True)
class Template:
    key: str
    kind: str  # one of KINDS
    slot: str  # "{R}" in it stands for the second person's key
    sentence: str  # lowercase but for names: framed and capitalised later
    direct: str
    paraphrase: str = ""
    answer: tuple[str, ...] = ()  # value placeholders whose words are the answer
    subject: str = "any"  # "any", "other" (never the protagonist), "relative", "role"
    other: bool = False  # the sentence names a second person ({R})


# Records: "key | slot | answer placeholders [| subject]", then the statement, the direct
# question and the paraphrase ("-": none), indented.
_TABLE = """
place.lives | home | P
    {S} {v:lives} in {P}
    Where {v:does} {S} live?
    Which town is home to {So} these days?

place.moved | home | P
    {S} moved to {P} last spring
    Where did {S} move to last spring?
    Which town {v:does} {S} call home now?

place.born | born | P
    {S} {v:was} born in {P}
    Where {v:was} {S} born?
    What town {v:does} {S} come from originally?

relation.called | named | N | relative
    {S} is called {N}
    What is {S} called?
    What name does {S} go by?

relation.is | named | N | relative
    {N} is {S}
    Who is {S}?
    What name does {S} go by?

name.called | named | NL | role
    {S} is called {NL}
    What is {S} called?
    What name does {Sa} go by?

name.is | named | NL | role
    {NL} is {S}
    Who is {S}?
    What is {Sa} called?

date.wedding | wedding | D
    {S's} wedding is on the {D}
    When is {S's} wedding?
    On what day will {S} be married?

date.birthday | birthday | D
    {S} {v:was} born on the {D}
    When {v:was} {S} born?
    What day is {S's} birthday?

date.trial | trial | D
    {S's} trial is set for the {D}
    When is {S's} trial?
    On what day will {S} face the judges?

date.sold | sold-date | D
    {S} sold {Sp} {O} on the {D}
    When did {S} sell {Sp} {O}?
    -

date.arrives | arrives | D
    {S} {v:arrives} in {Q} on the {D}
    When {v:does} {S} arrive in {Q}?
    -

date.left | left | D
    {S} left {Q} at dawn on the {D}
    When did {S} leave {Q}?
    -

possession.gave | gave:{R} | O
    {S} gave {Ro} {aO}
    What did {S} give {Ro}?
    What present did {R} get from {So}?

possession.lost | lost | O
    {S} lost {Sp} {O} at {Q}
    What did {S} lose at {Q}?
    Which of {S's} belongings went missing?

possession.owns | owns | O
    {S} {v:owns} {aO}
    What {v:does} {S} own?
    What belongs to {So}?

possession.sold | sold:{R} | O
    {S} sold {Ro} {aO}
    What did {S} sell {Ro}?
    What did {R} buy from {So}?

possession.bought | bought | O
    {S} bought {aO} at the fair in {Q}
    What did {S} buy at the fair in {Q}?
    -

plan.sail | plan | P
    {S} will sail to {P} next month
    Where will {S} sail next month?
    What voyage {v:is} {S} planning?

plan.shop | plan | shop P
    {S} {v:means} to open {shop} in {P} after the harvest
    What {v:does} {S} mean to open after the harvest?
    What business {v:is} {S} starting?

plan.farm | plan | P
    {S} {v:plans} to buy a farm near {P} in the spring
    Where {v:does} {S} plan to buy a farm?
    Where {v:does} {S} hope to settle on the land?

plan.marry | plan | trade P
    next month {S} will marry {trade} from {P}
    Whom will {S} marry next month?
    Who is {S's} intended?

opinion.hates | food | food
    {S} {v:hates} {food}
    What food {v:does} {S} hate?
    Which dish can {S} not stand?

opinion.loves | music | music
    {S} {v:loves} {music}
    What music {v:does} {S} love?
    Which tunes please {So} most?

opinion.thinks | thinks | verdict
    {S} {v:thinks} the {thing} at {Q} is {verdict}
    What {v:does} {S} think of the {thing} at {Q}?
    -
"""


def _templates() -> tuple[Template, ...]:
    out = []
    for record in _TABLE.strip().split("\n\n"):
        head, sentence, direct, paraphrase = (line.strip() for line in record.splitlines())
        key, slot, answer, *subject = (c.strip() for c in head.split("|"))
        out.append(
            Template(
                key,
                key.split(".")[0],
                slot,
                sentence,
                direct,
                "" if paraphrase == "-" else paraphrase,
                tuple(answer.split()),
                subject[0] if subject else "any",
                other="{R" in sentence,
            )
        )
    return tuple(out)


TEMPLATES = _templates()
BY_KEY = {t.key: t for t in TEMPLATES}

# Verbs as the third person writes them -> (first person, second person).
VERBS = {
    "lives": ("live", "live"),
    "is": ("am", "are"),
    "was": ("was", "were"),
    "does": ("do", "do"),
    "owns": ("own", "own"),
    "hates": ("hate", "hate"),
    "loves": ("love", "love"),
    "thinks": ("think", "think"),
    "means": ("mean", "mean"),
    "plans": ("plan", "plan"),
    "arrives": ("arrive", "arrive"),
}

FEMALE_RELATIONS = ("sister", "mother", "aunt", "daughter", "niece", "grandmother", "wife")
MALE_RELATIONS = ("brother", "father", "uncle", "son", "nephew", "grandfather", "husband")
EITHER_RELATIONS = ("cousin",)

# Posts held in the towns, each with another name for it (a paraphrase asks by the alias).
ROLES = {
    "ferryman": "boatman",
    "miller": "grain grinder",
    "blacksmith": "smith",
    "innkeeper": "landlord",
    "harbourmaster": "master of the docks",
    "cooper": "barrel maker",
    "tanner": "leather worker",
    "chandler": "candle seller",
    "weaver": "cloth maker",
    "baker": "bread seller",
    "apothecary": "herb seller",
    "tollkeeper": "bridge warden",
    "shepherd": "sheep herder",
    "carter": "wagon driver",
    "glazier": "glass cutter",
    "potter": "clay worker",
    "midwife": "birth nurse",
    "gravedigger": "sexton",
    "bellringer": "bell puller",
    "scribe": "letter writer",
    "fletcher": "arrow maker",
    "thatcher": "roofer",
    "cobbler": "shoemaker",
}


def _pool(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(";"))


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Value pools (see the module docstring: their words occur nowhere else; a test checks).
ORDINALS = _words(
    "first third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
    "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
)
# No May: "may" is a common word. No "second": "a second time".
MONTHS = _words("January February March April June July August September October November December")
ADJECTIVES = _words(
    "grey copper bone silver oak cedar brass amber iron ivory walnut pewter jade horn "
    "woollen painted carved gilded rusty speckled"
)
NOUNS = _words(
    "mare comb compass ring locket flute dagger lantern kettle loom saddle cloak hound falcon "
    "goat rowboat anvil mirror spindle quilt chessboard telescope hourglass inkwell brooch "
    "buckle sextant abacus teapot whetstone plough beehive canoe sledge pony ferret parrot "
    "tortoise spyglass thimble ladle skillet bellows cradle wheelbarrow"
)
FOODS = _pool(
    "eels; boiled cabbage; pickled herring; ewe's cheese; blood sausage; turnip soup; "
    "mutton pie; barley porridge; smoked trout; fried liver; oyster stew; candied ginger; "
    "plum dumplings; black pudding; roast pigeon; salted cod; leek broth; sour cherries; "
    "honey cakes; buttered parsnips; nettle soup; burnt almonds; lamb kidneys; rye porridge; "
    "mushroom pasties; duck eggs; cockles; quince jelly"
)
MUSIC = _pool(
    "the hurdy-gurdy; sea shanties; the bagpipes; the harp; drinking songs; the tin whistle; "
    "church hymns; lullabies; marching drums; the crumhorn; bawdy ballads; the dulcimer; "
    "choir singing; the psaltery; the bodhran; work chants; the shawm; the zither; "
    "reed pipes; the bugle"
)
SHOPS = _pool(
    "a bakery; a tavern; a bathhouse; a print shop; a dye works; a rope walk; a pawnshop; "
    "a wine shop; a school; a brewery; a boatyard; a smithy; a dairy; a tea house; "
    "a hat shop; a toy shop; a bookshop; a spice stall; a kennel; a laundry"
)
TRADES = _pool(
    "a sailmaker; a dyer; a wheelwright; a goldsmith; a stonemason; a falconer; a ropemaker; "
    "a brewer; a vintner; a locksmith; a jeweller; a bookbinder; a clockmaker; a perfumer; "
    "a furrier; a hatter; a lacemaker; a soapmaker; a tinker; a cartographer"
)
THINGS = _pool("bridge; well; tower; chapel; mill; lighthouse; market; graveyard; castle; shrine")
VERDICTS = _pool(
    "haunted; cursed; a death trap; older than the hills; built on a grave; "
    "a smugglers' den; a swindle; sinking into the marsh; full of rats; worth a fortune; "
    "badly built; a royal folly; blessed; unlucky; a den of thieves; about to collapse; "
    "a forgery; bewitched; a scandal; infested with bats"
)

# Frames put one fact's clause ({c}) into a sentence; {C} is a companion not in the fact.
NARRATION_FRAMES = (
    "{c}.",
    "{c}.",
    "{c}.",
    "You learn that {c}.",
    "Word at the inn is that {c}.",
    "It turns out that {c}.",
    "Everyone in {Q} knows that {c}.",
)
STORY_FRAMES = ("You tell {C} that {c}.", "You remind {C} that {c}.", "You recall that {c}.")
DO_FRAMES = ("I tell {C} that {c}", "I remind {C} that {c}", "I mention to {C} that {c}")
SAY_FRAMES = (
    "{c}.",
    "Did I ever tell you that {c}?",
    "I heard that {c}.",
    "You know, {c}.",
    "{C}, did you know that {c}?",
)
SPEECH_FRAMES = (
    '"{c}," {C} says.',
    '"{c}," {C} tells you.',
    '"{c}," {C} admits.',
    '"{c}," {C} adds.',
    '"{c}," {C} says with a grin.',
    '"{c}," {C} mutters.',
)
