"""The stories the lore clerk is measured on, each a path of action texts and its known
entities (docs/benchmarks.md, "Lore clerk").

- **Dense** stories (``benchmarks.recall.dense.generator``): every name in them is one the
  generator made, so the entities are known exactly: each person (a post holder by first
  and full name), and each other name (towns, places). The protagonist and the two
  companions have cards (the protagonist's persona) and are never to be proposed. The
  tune seed's stories were read while the clerk's rules were set; the held-out seeds' were
  not. A second copy of a held-out story has every made name in Cyrillic letters (the
  same letters, transliterated): names outside the Latin script must stay apart too.
- The real texts are read from the corpus folder the real-text recall benchmark reads
  (``find_corpus``: ``$TALEKEEPER_CORPUS``, or a ``corpus`` folder beside the checkout).
  Each is cut in two before the rules were set on it: a part read while tuning, a part
  never read (held out).
- **Pride and Prejudice** (paragraphs as actions): its people and places, listed by hand
  below with the names each goes by. The first ``NOVEL_PARAGRAPHS`` paragraphs were read
  while the rules were set; the rest of the novel, played as a story of its own, was not.
- **Shakespeare** (each speech an action, "SPEAKER:" and its lines): its people are the
  speakers named in capitals, with their names short of a rank ("DUKE VINCENTIO" is also
  "Vincentio"), and the people, places and peoples listed by hand for each part (every
  capitalised word of the part that the plays never write in lower case, in three
  speeches or more, read and kept when it names something). A speaker named by a role
  ("Provost:", "First Citizen:") or a crowd ("ALL:") is *neutral*: a proposal of it
  ("Provost") is neither an entity nor a stray, and none is required. The first
  ``PLAY_SPEECHES`` speeches (Coriolanus, the start of Richard III) were read while the
  rules were set; speeches ``LATER_PLAYS`` (the end of Measure for Measure, The Taming
  of the Shrew, the start of The Tempest) were not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.recall.dense.generator import DenseAdventure, generate
from benchmarks.recall.real.texts import CorpusMissing, find_corpus

DENSE_ACTIONS = 220
WINDOW = 40
TUNE_SEED = 14  # the dense recall benchmark's split, kept
HELD_OUT = (41, 77)
NOVEL_PARAGRAPHS = 1200  # of about 2,100: the first half of the novel and more
PLAY_SPEECHES = 1500
LATER_PLAYS = (5700, 7200)  # held out: never read while the rules were set


@dataclass(frozen=True)
class StorySet:
    name: str
    held_out: bool
    texts: list[str]  # the path's actions, oldest first, as the player read them
    entities: list[tuple[str, ...]]  # each entity's names, the first its own
    taken: list[tuple[str, ...]]  # names with a card already (never to be proposed)
    protagonist: str = ""
    neutral: list[str] = field(default_factory=list)  # names neither required nor strays


# One Cyrillic letter for each Latin one, none twice: two names stay two.
_CYRILLIC = dict(zip("abcdefghijklmnopqrstuvwxyz", "абцдефгхийклмнопщрстувшжыз", strict=True))


def _cyrillic(name: str) -> str:
    out = "".join(_CYRILLIC.get(c, c) for c in name.lower())
    return out[:1].upper() + out[1:]


def dense(seed: int, style: str, cyrillic: bool = False) -> StorySet:
    story: DenseAdventure = generate(seed, DENSE_ACTIONS, WINDOW, style)
    texts = [text for _, text in story.actions]
    people = {p.key: p for p in story.people}
    lasts = {p.last.lower() for p in people.values() if p.last}
    entities: list[tuple[str, ...]] = []
    for p in people.values():
        if p.kind not in ("you", "companion"):
            entities.append((f"{p.first} {p.last}", p.first) if p.last else (p.first,))
    named = {p.first.lower() for p in people.values()} | lasts
    entities += [(n.capitalize(),) for n in story.names if n not in named]
    taken: list[tuple[str, ...]] = [(c,) for c in story.companions]
    protagonist = story.protagonist
    if cyrillic:
        made = sorted((n.capitalize() for n in story.names), key=len, reverse=True)
        swap = {n: _cyrillic(n) for n in made}
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, made)) + r")\b")
        texts = [pattern.sub(lambda m: swap[m.group(1)], t) for t in texts]
        entities = [tuple(pattern.sub(lambda m: swap[m.group(1)], n) for n in e) for e in entities]
        taken = [tuple(swap[c] for c in t) for t in taken]
        protagonist = swap[protagonist]
    name = f"dense {style} {seed}" + (" (Cyrillic names)" if cyrillic else "")
    return StorySet(name, seed != TUNE_SEED, texts, entities, taken, protagonist)


def corpus() -> Path | None:
    """The corpus folder the real-text recall benchmark reads (``texts.find_corpus``), or
    None when it is not there."""
    try:
        return find_corpus()
    except CorpusMissing:
        return None


def _corpus(name: str) -> str | None:
    folder = corpus()
    return (folder / name).read_text(encoding="utf-8") if folder is not None else None


# Pride and Prejudice's people and places, each with the names it goes by. Family names a
# title alone tells apart ("Mr. Bennet", "Mrs. Bennet", "Miss Bingley") are one entity
# here, the family's: the clerk sets titles aside, as its rules say.
NOVEL_ENTITIES: list[tuple[str, ...]] = [
    ("Elizabeth Bennet", "Elizabeth", "Lizzy", "Eliza"),
    ("Jane Bennet", "Jane"),
    ("Mary Bennet", "Mary"),
    ("Kitty Bennet", "Kitty"),
    ("Lydia Bennet", "Lydia"),
    ("Bennet", "Mr. Bennet", "Mrs. Bennet", "Miss Bennet"),
    ("Fitzwilliam Darcy", "Darcy", "Mr. Darcy"),
    ("Georgiana Darcy", "Georgiana"),
    ("Charles Bingley", "Bingley", "Mr. Bingley"),
    ("Caroline Bingley", "Caroline"),
    ("Hurst", "Mr. Hurst", "Mrs. Hurst", "Louisa"),
    ("William Collins", "Collins", "Mr. Collins"),
    ("Charlotte Lucas", "Charlotte"),
    ("Sir William Lucas", "Sir William", "William Lucas"),
    ("Maria Lucas", "Maria"),
    ("Lucases", "Lady Lucas"),
    ("George Wickham", "Wickham", "Mr. Wickham"),
    ("Lady Catherine de Bourgh", "Lady Catherine", "Catherine de Bourgh"),
    ("Anne de Bourgh", "Miss de Bourgh", "de Bourgh"),
    ("Sir Lewis de Bourgh",),
    ("Colonel Fitzwilliam", "Fitzwilliam"),
    ("Gardiner", "Mr. Gardiner", "Mrs. Gardiner"),
    ("Phillips", "Mrs. Phillips", "Mr. Phillips"),
    ("Colonel Forster", "Forster", "Mrs. Forster"),
    ("Mr. Denny", "Denny"),
    ("Mrs. Jenkinson", "Jenkinson"),
    ("Mrs. Long", "Long"),
    ("Mr. Jones", "Jones"),
    ("Mrs. Reynolds", "Reynolds"),
    ("Captain Carter", "Carter"),
    ("Mrs. Younge", "Younge"),
    ("Chamberlayne",),
    ("Harriet",),
    ("Pratt",),
    ("Longbourn", "Longbourn House"),
    ("Netherfield", "Netherfield Park"),
    ("Meryton",),
    ("Pemberley", "Pemberley House"),
    ("Rosings", "Rosings Park"),
    ("Hunsford", "Hunsford Parsonage", "Parsonage"),
    ("Lucas Lodge",),
    ("London",),
    ("Brighton",),
    ("Derbyshire",),
    ("Hertfordshire",),
    ("Kent",),
    ("Lambton",),
    ("Gracechurch Street",),
    ("St. James", "St. James's"),
    ("Bath",),
    ("Scotland",),
    ("Newcastle",),
    ("Ramsgate",),
    ("Epsom",),
    ("Barnet",),
    ("Gretna Green",),
    ("Cheapside",),
    ("Oxford",),
    ("Cambridge",),
    ("Matlock",),
    ("Chatsworth",),
    ("Dovedale",),
    ("Blenheim",),
    ("Kenilworth",),
    ("Birmingham",),
    ("Oakham Mount",),
    ("Haye Park",),
    ("Purvis Lodge",),
    ("Ashworth",),
    ("Kympton",),
    ("Bromley",),
    ("Westerham",),
    ("Clapham",),
    ("Stoke",),
    ("Margate",),
    ("Scarborough",),
    ("Ireland",),
    ("Hertford",),
    # People and places of the novel the list missed until a run proposed them (each
    # proposal that was no entity is read by hand; docs/benchmarks.md, "Lore clerk").
    ("England",),
    ("Miss King", "Mary King"),
    ("Lady Anne Darcy",),
    ("Mrs. Hill", "Hill"),
    ("Mrs. Annesley", "Annesley"),
    ("the Lakes", "Lakes"),
]


def novel() -> list[StorySet]:
    """The novel's tuned part and its held-out rest, each played as a story of its own."""
    text = _corpus("pride-and-prejudice.txt")
    if text is None:
        return []
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    return [
        StorySet("Pride and Prejudice", False, paragraphs[:NOVEL_PARAGRAPHS], NOVEL_ENTITIES, []),
        StorySet(
            "Pride and Prejudice, the rest", True, paragraphs[NOVEL_PARAGRAPHS:], NOVEL_ENTITIES, []
        ),
    ]


_RANKS = {"king", "queen", "duke", "duchess", "prince", "princess", "lord", "lady", "earl"}
_SPEAKER = re.compile(r"^([A-Z][A-Za-z' ]+):$")


def _speaker_names(tag: str) -> tuple[str, ...]:
    words = tag.title().split()
    while words and re.fullmatch(r"I{1,3}|Iv|Vi{0,3}", words[-1]):
        words.pop()  # "King Richard III": "Richard"'s number
    names = [" ".join(words)]
    if len(words) > 1 and words[0].lower() in _RANKS:
        names.append(" ".join(words[1:]))
    if len(words) > 1 and words[1].lower() == "of":  # "Duchess Of York": a title, no name
        names = [" ".join(words)]
    return tuple(dict.fromkeys(names))


# Each part's named things beside its speakers, listed by hand (see the module docstring); a
# tuple is one entity's names, and a speaker's other names join its entity.
PLAY_NAMES: dict[str, list[tuple[str, ...]]] = {
    "first": [
        ("Caius Marcius Coriolanus", "Coriolanus", "Marcius", "Caius Marcius"),
        ("Tullus Aufidius", "Aufidius", "Tullus"),
        ("Titus Lartius", "Lartius", "Titus"),
        ("Clarence", "George"),
        ("Gloucester", "Richard Gloucester", "Richard"),
        ("King Edward", "Edward"),
        ("King Henry", "Henry"),
        ("Rome",), ("Volsces", "Volscians", "Volscian", "Volsce"), ("Romans", "Roman"),
        ("Corioli",), ("Capitol",), ("Antium",), ("Antiates",), ("Tarpeian",),
        ("Jupiter",), ("Jove",), ("York",), ("Lancaster",), ("Tewksbury",), ("Chertsey",),
        ("Paul",), ("Derby",), ("Warwick",), ("Margaret", "Queen Margaret"),
        # Named, missed by the list until a run proposed them (read by hand).
        ("England",), ("Tower",), ("Mars",), ("Mistress Shore", "Shore"), ("Tarquin",),
        ("Plantagenet",),
    ],
    "later": [
        ("Katharina", "Kate"),
        ("Isabella", "Isabel"),
        ("Baptista", "Baptista Minola", "Minola"),
        ("Hortensio", "Licio"),
        ("Lucentio", "Cambio"),
        ("Duke Vincentio", "Vincentio", "Lodowick"),
        ("Padua",), ("Pisa",), ("Naples",), ("Milan",), ("Carthage",), ("Verona",),
        ("Venice",), ("Tunis",), ("Mantua",), ("Italy",), ("Sycorax",), ("Dido",),
        ("Simois",), ("Sigeia",), ("Priam", "Priami"),
    ],
}  # fmt: skip
_ORDINALS = {"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "a", "all"}
# Speakers in capitals that are a crowd, not someone: neutral, as a role is.
_CROWDS = {"all", "both", "gentlemen", "lords", "citizens", "senators", "servants", "players"}


def _role(tag: str) -> str:
    """The role a speaker named in lower case plays ("First Citizen" is "Citizen")."""
    words = [w for w in tag.split() if w.casefold() not in _ORDINALS]
    return " ".join(words)


def _entities(tags: list[str], named: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The speakers' entities, each joined by the listed entity sharing one of its names."""
    out: list[tuple[str, ...]] = [tuple(n) for n in named]
    for tag in tags:
        names = _speaker_names(tag)
        at = next((i for i, e in enumerate(out) if set(e) & set(names)), None)
        if at is None:
            out.append(names)
        else:
            out[at] = tuple(dict.fromkeys((*out[at], *names)))
    return out


def _play(name: str, held_out: bool, speeches: list[str], named: list[tuple[str, ...]]) -> StorySet:
    tags: list[str] = []
    roles: list[str] = []
    for speech in speeches:
        match = _SPEAKER.match(speech.split("\n", 1)[0])
        if match is None:
            continue
        tag = match.group(1)
        if tag.casefold() in _CROWDS:
            roles.append(tag.title())
        elif tag.isupper():
            tags.append(tag)
        elif _role(tag):
            roles += [tag, _role(tag)]
    entities = _entities(list(dict.fromkeys(tags)), named)
    named_keys = {n.casefold() for e in entities for n in e}
    neutral = [r for r in dict.fromkeys(roles) if r.casefold() not in named_keys]
    return StorySet(name, held_out, speeches, entities, [], neutral=neutral)


def plays() -> list[StorySet]:
    """The plays' tuned part and their held-out later part."""
    text = _corpus("shakespeare-plays.txt")
    if text is None:
        return []
    speeches = [s.strip() for s in re.split(r"\n\s*\n", text) if s.strip()]
    start, end = LATER_PLAYS
    return [
        _play("Shakespeare", False, speeches[:PLAY_SPEECHES], PLAY_NAMES["first"]),
        _play("Shakespeare, later plays", True, speeches[start:end], PLAY_NAMES["later"]),
    ]


def all_sets(quick: bool = False) -> list[StorySet]:
    sets = [dense(TUNE_SEED, "narrative"), dense(TUNE_SEED, "dialogue")]
    if quick:
        return sets
    for seed in HELD_OUT:
        sets += [dense(seed, "narrative"), dense(seed, "dialogue")]
    sets.append(dense(HELD_OUT[0], "narrative", cyrillic=True))
    sets += novel() + plays()
    return sets
