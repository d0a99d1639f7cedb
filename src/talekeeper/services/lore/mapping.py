"""The mapping every reader shares: entries of any format become card drafts.

A reader turns each entry of its file into a ``RawEntry`` (the fields that
matter, still as the file had them); ``build_cards`` applies the rules below.

Invariants:

- Name: the format's title field, else the first keyword, else "Untitled entry
  N" (N its place in the file); whitespace collapsed; over
  ``limits.CARD_NAME_MAX`` characters it is cut, reported. Duplicate names are
  kept and reported.
- Type: an explicit type, else the category/folder/group name, matched by its
  words (``TYPE_WORDS``), else ``lore``. The original text is kept in the notes
  when it was not exactly a card type.
- Keywords: see ``keywords``. No keyword left: the card's name is its keyword,
  reported.
- Always-on entries become always-on cards; one that reads as an instruction is
  flagged ``instruction_like`` so the preview can offer it for AI Instructions.
- Disabled entries are skipped and listed, unless the reading includes them.
- Cards come out in ascending source order (ties and entries without one in
  file order), numbered from 1.
- An entry over ``limits.CARD_ENTRY_MAX`` characters is refused with its length,
  unless the reading splits it into parts ``Name (1)``, ``Name (2)`` with the same
  keywords, cut at paragraph, line, sentence or word ends. Never truncated.
- Notes carry the provenance (format, file, entry), the original comment, and a
  line naming the settings dropped; notes over ``limits.CARD_NOTES_MAX`` are cut,
  reported. A card Talekeeper itself wrote (``Own``) keeps its notes as written.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from talekeeper.services.cards.match import CARD_TYPES
from talekeeper.services.cards.rules import SecondaryRule
from talekeeper.services.common import limits
from talekeeper.services.lore.fields import (
    EntryRefused,
    JsonObject,
    all_text,
    as_object,
    describe,
    quote,
    storable,
)
from talekeeper.services.lore.keywords import KeyMode, clean_keywords
from talekeeper.services.lore.model import CardDraft, LoreFormat
from talekeeper.services.lore.report import ReportBuilder

# Words of a type, category, folder or group name, and the card type each one means.
TYPE_WORDS = {
    **dict.fromkeys(("character", "npc", "person", "people", "cast"), "character"),
    **dict.fromkeys(("location", "place", "city", "region", "world"), "location"),
    **dict.fromkeys(("item", "weapon", "armor", "armour", "artifact"), "item"),
    **dict.fromkeys(("faction", "guild", "house", "clan", "order"), "faction"),
    **dict.fromkeys(
        ("lore", "history", "race", "magic", "culture", "religion", "event", "creature"),
        "lore",
    ),
}
# "must" and "format" read as instructions anywhere; "always"/"never" only opening a sentence
# ("Never break character."), since lore says "the beacon never goes out". Every pattern
# here runs in linear time on any text: a file's text is never matched by a pattern that
# can backtrack over it.
INSTRUCTION_WORDS = re.compile(r"\b(must|format)\b", re.IGNORECASE)
SENTENCE_OPENERS = frozenset(("always", "never"))
_SENTENCE_END = re.compile(r"[.!?:\n]")
# Words an instruction to the model opens with.
_IMPERATIVE_TEXT = """write use describe respond reply keep avoid do don't dont be make include
refer speak narrate focus ensure remember stay treat act portray continue end begin start limit
show give follow"""
IMPERATIVES = frozenset(_IMPERATIVE_TEXT.split())
_WORD = re.compile(r"[^\W\d_]+")
MAX_CHANGES_SHOWN = 5  # keyword changes reported one by one per entry
_FIRST_WORD = re.compile(r"[\W_]*+([\w']+)")


@dataclass(frozen=True)
class Own:
    """Fields Talekeeper wrote for its own cards (``extensions.talekeeper``); each one
    given wins over what the format itself says."""

    type: str | None = None
    notes: str | None = None
    always_on: bool | None = None
    secondary_keywords: tuple[str, ...] | None = None
    secondary_rule: SecondaryRule | None = None


@dataclass
class RawEntry:
    """One entry as its file had it, before the mapping rules."""

    path: str  # JSON path of the entry
    label: str  # the entry in a provenance note: "entry uid 3"
    title: str
    keys: list[str]
    text: str
    mode: KeyMode = KeyMode.PLAIN
    secondary: list[str] = field(default_factory=list)
    rule: SecondaryRule = SecondaryRule.ANY
    always_on: bool = False
    disabled: bool = False
    order: float | None = None
    type_text: str = ""
    comment: str = ""
    notes: list[str] = field(default_factory=list)
    lost: list[tuple[str, str]] = field(default_factory=list)  # (setting, "field value")
    own: Own | None = None


@dataclass
class Source:
    """One reading: the file, the player's choices, and the report being written."""

    filename: str
    format: LoreFormat = LoreFormat.CHARACTER_BOOK  # set once the file is recognised
    report: ReportBuilder = field(default_factory=ReportBuilder)
    include_disabled: bool = False
    split_long: bool = False
    persona_name: str | None = None  # who {{user}} is in a character card

    def provenance(self, label: str) -> str:
        name = " ".join(storable(self.filename).replace("`", "'").split())[-80:]
        name = name or "(unnamed file)"
        return f"Imported from {self.format.label} `{name}`, {label}."


def collect(
    members: Iterable[tuple[str, object]],
    read: Callable[[JsonObject, str], RawEntry | None],
    src: Source,
) -> list[RawEntry]:
    """``read`` applied to each (path, value) member that is an object; a member that is
    not, or that ``read`` refuses, is reported and skipped."""
    out: list[RawEntry] = []
    for path, value in members:
        obj = as_object(value)
        if obj is None:
            src.report.refuse(f"{path} must be an object; got {describe(value)}", path)
            continue
        try:
            entry = read(obj, path)
        except EntryRefused as refused:
            src.report.refuse(refused.message, path)
            continue
        if entry is not None:
            out.append(entry)
    return out


def own_fields(extensions: object) -> Own | None:
    """Talekeeper's own fields from an entry's ``extensions`` object, when it has them."""
    ext = as_object(extensions)
    mine = as_object(ext.get("talekeeper")) if ext is not None else None
    if mine is None:
        return None
    kind, notes, always = mine.get("type"), mine.get("notes"), mine.get("always_on")
    seconds, rule = all_text(mine.get("secondary_keywords")), mine.get("secondary_rule")
    rules = {str(r): r for r in SecondaryRule}
    return Own(
        type=kind if isinstance(kind, str) and kind in CARD_TYPES else None,
        notes=notes if isinstance(notes, str) else None,
        always_on=always if isinstance(always, bool) else None,
        secondary_keywords=tuple(seconds) if seconds is not None else None,
        secondary_rule=rules.get(rule) if isinstance(rule, str) else None,
    )


def card_type(text: str) -> tuple[str, str]:
    """The card type a type/category/folder name means, and a note keeping the original
    when it was not exactly a card type."""
    plain = " ".join(text.split())
    if not plain or plain.lower() in CARD_TYPES:
        return (plain.lower() or "lore"), ""
    for word in _WORD.findall(plain.lower()):
        forms = (word, word[:-1], word[:-2], word[:-3] + "y") if len(word) > 3 else (word,)
        for form in forms:
            if form in TYPE_WORDS:
                return TYPE_WORDS[form], f"Original type: {plain}"
    return "lore", f"Original type: {plain}"


def instruction_like(text: str) -> bool:
    """Whether an entry reads as an instruction to the model rather than as lore."""
    if INSTRUCTION_WORDS.search(text):
        return True
    for number, sentence in enumerate(_SENTENCE_END.split(text)):
        first = _FIRST_WORD.match(sentence)
        word = first.group(1).lower() if first else ""
        if word in SENTENCE_OPENERS or (number == 0 and word in IMPERATIVES):
            return True
    return False


def split_parts(text: str, limit: int = limits.CARD_ENTRY_MAX) -> list[str]:
    """``text`` in parts of at most ``limit`` characters, cut where a reader pauses."""
    parts: list[str] = []
    start = 0  # indices, not slices of the rest: a long text is never copied part by part
    while len(text) - start > limit:
        end = start + limit
        cut = end
        for mark in ("\n\n", "\n", ". ", " "):
            at = text.rfind(mark, start, end)
            if at > start + limit // 2:
                cut = at + len(mark)
                break
        parts.append(text[start:cut].strip())
        start = cut
        while start < len(text) and text[start].isspace():
            start += 1
    parts.append(text[start:])
    return [part for part in parts if part]


def _name(raw: RawEntry, keywords: list[str], index: int, src: Source) -> str:
    # A card Talekeeper wrote keeps its name as written; any other has its spaces collapsed.
    title = raw.title.strip() if raw.own is not None else " ".join(raw.title.split())
    name = title or (keywords[0] if keywords else "")
    name = name or f"Untitled entry {index}"
    if len(name) > limits.CARD_NAME_MAX:
        src.report.change(
            f"Name {quote(name)} is {len(name):,} characters; cut to {limits.CARD_NAME_MAX}",
            raw.path,
        )
        name = name[: limits.CARD_NAME_MAX].rstrip()
    return name


def _notes(raw: RawEntry, lines: list[str], type_note: str, src: Source, name: str) -> str:
    if raw.own is not None and raw.own.notes is not None:
        head = [raw.own.notes] if raw.own.notes else []
    else:
        head = [src.provenance(raw.label)]
        head += [f"Comment: {raw.comment.strip()}"] if raw.comment.strip() else []
        head += [type_note] if type_note else []
    dropped = ", ".join(value for _, value in raw.lost)
    tail = [f"Dropped settings: {dropped}."] if dropped else []
    notes = "\n".join([*head, *raw.notes, *lines, *tail]).strip()
    if len(notes) > limits.CARD_NOTES_MAX:
        src.report.change(
            f"{quote(name)}: notes are {len(notes):,} characters; the first "
            f"{limits.CARD_NOTES_MAX:,} were kept",
            raw.path,
        )
        notes = notes[: limits.CARD_NOTES_MAX].rstrip()
    return notes


def _drafts(raw: RawEntry, index: int, src: Source) -> list[CardDraft]:
    """The card(s) one entry makes: none when refused, several when split."""
    own = raw.own or Own()
    keys = clean_keywords(raw.keys, raw.mode)
    seconds = own.secondary_keywords  # Talekeeper's own keywords: text, never patterns
    if seconds is None:
        second = clean_keywords(raw.secondary, raw.mode)
    else:
        second = clean_keywords(list(seconds), KeyMode.PLAIN)
    name = _name(raw, keys.kept, index, src)
    changes = keys.changes + second.changes
    for change in changes[:MAX_CHANGES_SHOWN]:
        src.report.change(f"{quote(name)}: {change}", raw.path)
    if len(changes) > MAX_CHANGES_SHOWN:  # one entry cannot flood the report
        more = len(changes) - MAX_CHANGES_SHOWN
        src.report.change(f"{quote(name)}: {more:,} more keyword changes", raw.path, more)
    for setting, _ in raw.lost:
        src.report.lose(setting, raw.path)
    keywords = keys.kept
    if not keywords:
        keywords = [name[: limits.CARD_KEYWORD_MAX].rstrip()]
        src.report.change(f"{quote(name)}: no keywords left; its name is its keyword", raw.path)
    kind, type_note = card_type(raw.type_text)
    kind = own.type if own.type in CARD_TYPES else kind
    always_on = raw.always_on if own.always_on is None else own.always_on
    text = raw.text.strip()
    base = CardDraft(
        name=name,
        type=kind,
        keywords=tuple(keywords),
        entry=text,
        notes=_notes(raw, keys.notes + second.notes, type_note, src, name),
        always_on=always_on,
        secondary_keywords=tuple(second.kept),
        secondary_rule=own.secondary_rule or raw.rule,
        disabled=raw.disabled,
        instruction_like=always_on and instruction_like(text),
        source=raw.path,
    )
    if len(text) <= limits.CARD_ENTRY_MAX:
        return [base]
    parts = split_parts(text)
    if not src.split_long:
        src.report.refuse(
            f"{quote(name)}: the entry is {len(text):,} characters, over the "
            f'{limits.CARD_ENTRY_MAX:,} a card holds; choose "split into parts" to import '
            f"it as {len(parts)} cards",
            raw.path,
        )
        return []
    src.report.change(
        f"{quote(name)}: {len(text):,} characters split into {len(parts)} parts", raw.path
    )
    stem = name[: limits.CARD_NAME_MAX - 3 - len(str(len(parts)))].rstrip()
    return [replace(base, name=f"{stem} ({i})", entry=part) for i, part in enumerate(parts, 1)]


def build_cards(entries: list[RawEntry], src: Source) -> tuple[CardDraft, ...]:
    """The drafts of a file's entries, in creation order (see the module's invariants)."""
    made: list[tuple[float, int, CardDraft]] = []
    for index, raw in enumerate(entries, 1):
        if raw.disabled and not src.include_disabled:
            title = " ".join(raw.title.split()) or raw.label
            src.report.info(f"{quote(title)} is disabled in the file; skipped", raw.path)
            continue
        for draft in _drafts(raw, index, src):
            made.append((raw.order if raw.order is not None else 0.0, len(made), draft))
    made.sort(key=lambda item: (item[0], item[1]))
    cards = tuple(replace(card, order=i) for i, (_, _, card) in enumerate(made, 1))
    names = Counter(card.name.casefold() for card in cards)
    for folded, count in names.items():
        if count > 1:
            first = next(c for c in cards if c.name.casefold() == folded)
            src.report.info(
                f"{count} cards are named {quote(first.name)}; all were kept", first.source
            )
    instructions = sum(card.instruction_like for card in cards)
    if instructions:
        src.report.info(
            f"{instructions} always-on "
            + (
                "entry reads as an instruction; the preview offers it"
                if instructions == 1
                else "entries read as instructions; the preview offers them"
            )
            + " for AI Instructions",
            count=instructions,
        )
    return cards
