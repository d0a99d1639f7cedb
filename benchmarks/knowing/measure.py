"""Reading one question's prompt for one fact: where its object phrase is, and whether a
label covers it; and the figures over many questions.

Invariants:

- A prompt is read from Insights' ``sections`` (the dry run's own), leaving out the
  player's action (the question names the object itself). The phrase is the fact's
  "adjective noun", matched case-insensitively; the generator makes it unique to the fact.
  The fact's place is read the same way (``found_place``): a telling names only the object.
- The Memories section is split into entries (a line opening "- " and the passage lines
  under it); a line is labelled when it, or its memory's line, carries the product's words
  for the addressed character ("— Tobin was not there", "— a secret Tobin was not told").
  Every other section is a channel of its own, by its Insights name (``history``,
  ``story_summary``...). The Story
  Summary is labelled as a whole when the Memories section opens with the product's note
  that it is the narrator's knowledge, not the addressed character's (``summary_note``).
- **Leak** (a question to one who neither saw nor was told): in ``label`` mode the phrase
  anywhere but a labelled entry; in ``strict`` and ``off`` the phrase anywhere.
- **Recall** (a question to one who knows): the phrase somewhere a label does not cover
  (in ``strict`` and ``off`` nothing is labelled, so anywhere).
- Figures are computed from the observations, never written in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from talekeeper.services.prompt.insights.stored import SectionPart
from talekeeper.services.world.knowing import label, secret_label, summary_note

LABELLED = "memories (labelled)"
SUMMARY = "story_summary"
SUMMARY_LABELLED = "story_summary (labelled)"
MEMORIES = "memories"
SKIPPED = ("player_action",)  # the question itself
LEAK_KINDS = ("absent",)
RECALL_KINDS = ("present", "told")
MODES = ("off", "label", "strict")


def entries(text: str) -> list[str]:
    """The Memories section's entries: each "- " line with the lines under it."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("- ") or not out:
            out.append(line)
        else:
            out[-1] += "\n" + line
    return out


def is_labelled(entry: str, who: str | None) -> bool:
    return who is not None and (label(who) in entry or secret_label(who) in entry)


def channels(sections: Sequence[SectionPart], phrase: str, who: str | None) -> tuple[str, ...]:
    """Every place in the prompt the phrase is: section names, the Memories section's
    entries told apart by whether they carry the addressed character's label."""
    needle = phrase.lower()
    found: list[str] = []
    noted = who is not None and any(
        s.name == MEMORIES and summary_note(who) in s.text for s in sections
    )
    for section in sections:
        if section.name in SKIPPED or needle not in section.text.lower():
            continue
        if section.name == SUMMARY and noted:
            found.append(SUMMARY_LABELLED)
            continue
        if section.name != MEMORIES:
            found.append(section.name)
            continue
        for entry in entries(section.text):
            # A memory's line covers the passages under it; a passage's own line, itself.
            head, *passages = entry.split("\n")
            for line in (head, *passages):
                if needle in line.lower():
                    covered = is_labelled(head, who) or is_labelled(line, who)
                    found.append(LABELLED if covered else MEMORIES)
    return tuple(dict.fromkeys(found))


def unlabelled(found: Iterable[str]) -> list[str]:
    return [c for c in found if c not in (LABELLED, SUMMARY_LABELLED)]


@dataclass(frozen=True)
class Observation:
    seed: int
    fact: int
    kind: str  # the question's kind (``generator.KINDS``)
    mode: str
    who: str | None
    addressed: str | None  # who the product read as addressed
    found: tuple[str, ...]  # ``channels`` of the object phrase
    in_history: bool  # the fact's phrase still in the recent history
    prompt: str = ""  # the whole prompt, kept for the story questions only
    # ``channels`` of the place: a telling names the object only, so only the fact's own
    # memory (or the summary, or the history) can give where it is
    found_place: tuple[str, ...] = ()

    @property
    def leaked(self) -> bool:
        return bool(self.found if self.mode != "label" else unlabelled(self.found))

    @property
    def recalled(self) -> bool:
        return self.leaked  # the same test: the phrase where no label covers it

    @property
    def place_shown(self) -> bool:
        """The place somewhere no label covers (in ``label``; anywhere otherwise)."""
        return bool(self.found_place if self.mode != "label" else unlabelled(self.found_place))


@dataclass
class Rate:
    hits: int = 0
    total: int = 0

    @property
    def value(self) -> float:
        return self.hits / self.total if self.total else 0.0

    def add(self, hit: bool) -> None:
        self.hits += hit
        self.total += 1


@dataclass
class ModeFigures:
    leak: Rate = field(default_factory=Rate)
    leak_channels: Counter[str] = field(default_factory=Counter)
    leak_no_summary: Rate = field(default_factory=Rate)  # channels other than the summary
    leak_place: Rate = field(default_factory=Rate)  # (b): the place, not the object
    recall_place: Rate = field(default_factory=Rate)  # (a) and (c): the place
    recall: Rate = field(default_factory=Rate)  # (a) and (c)
    recall_memories: Rate = field(default_factory=Rate)  # in the Memories section, unlabelled
    recall_left: Rate = field(default_factory=Rate)  # (a'): saw it, left mid-stretch
    recall_all: Rate = field(default_factory=Rate)  # (a), (a') and (c): all who know it
    by_kind: dict[str, Rate] = field(default_factory=dict)  # recall by kind
    strict_in_memories: int = 0  # (b) facts in the Memories section at all
    not_addressed: int = 0  # say questions the product read as addressing no one
    in_history: int = 0  # questions whose fact was in this mode's recent history

    def kind(self, name: str) -> Rate:
        return self.by_kind.get(name, Rate())


def figures(observations: Iterable[Observation]) -> dict[str, ModeFigures]:
    out = {mode: ModeFigures() for mode in MODES}
    for o in observations:
        f = out[o.mode]
        if o.kind == "story":
            continue
        if o.addressed != o.who:
            f.not_addressed += 1
        f.in_history += o.in_history
        leaked = o.leaked
        if o.kind in LEAK_KINDS:
            f.leak.add(leaked)
            shown = o.found if o.mode != "label" else unlabelled(o.found)
            f.leak_channels.update(shown)
            f.leak_no_summary.add(any(c not in (SUMMARY, SUMMARY_LABELLED) for c in shown))
            f.strict_in_memories += any(c in (MEMORIES, LABELLED) for c in o.found)
            f.leak_place.add(o.place_shown)
        elif o.kind in RECALL_KINDS:
            f.recall.add(leaked)
            f.recall_all.add(leaked)
            f.recall_memories.add(MEMORIES in o.found)
            f.recall_place.add(o.place_shown)
            f.by_kind.setdefault(o.kind + " place", Rate()).add(o.place_shown)
            f.by_kind.setdefault(o.kind, Rate()).add(leaked)
        elif o.kind == "present_left":
            f.recall_left.add(leaked)
            f.recall_all.add(leaked)
    return out


@dataclass
class Counts:
    facts: int = 0
    told: int = 0
    questions: Counter[str] = field(default_factory=Counter)  # by kind
    in_history: int = 0  # questions (off mode) whose fact was still in the history
    story_same: int = 0  # story questions whose prompt was identical in every mode
    story_total: int = 0
    story_addressed: int = 0  # story questions the product read as addressing someone


def counts(observations: Sequence[Observation], facts: int, told: int) -> Counts:
    c = Counts(facts, told)
    prompts: dict[tuple[int, int], set[str]] = {}
    for o in observations:
        if o.mode == "off":
            c.questions[o.kind] += 1
            c.in_history += o.in_history and o.kind != "story"
        if o.kind == "story":
            prompts.setdefault((o.seed, o.fact), set()).add(o.prompt)
            c.story_addressed += o.addressed is not None
    c.story_total = len(prompts)
    c.story_same = sum(len(p) == 1 for p in prompts.values())
    return c
