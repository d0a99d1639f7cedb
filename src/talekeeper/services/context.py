"""The context builder: a pure function from sections to a budgeted prompt plus a report.

Invariants:

- Order, top to bottom: AI Instructions, Plot Essentials, Story Summary,
  Memories, Story Cards, Knowledge, the recent history (newest last) with the
  Author's Note placed ``AUTHORS_NOTE_DEPTH`` actions before its end, then the
  player's action.
- The budget is counted with the injected ``TokenCounter``; the built context
  never exceeds it (each part is counted with the separator that joins it, apart,
  which can only over-count).
- Fixed sections get priority. The history fills what is left, dropping the
  oldest actions first. An action that does not fit whole is cut at a
  sentence boundary (its opening sentences dropped); only an action that is
  alone larger than the room left is cut mid-sentence (its tail kept).
- If the fixed sections alone exceed the budget, the lowest-priority ones are
  cut first (``TRIM_ORDER``), each from its end; the player's action is never
  cut. A section that offers shorter forms of itself (``Section.shorter``: the
  Memories without some of their passages of the story) falls back to the
  longest of them that fits before it is cut.
- The report records every section's tokens and why it is there, and what
  was dropped or cut for budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from talekeeper.core.tokens import TokenCounter

AUTHORS_NOTE_DEPTH = 3  # actions before the end: close enough to steer, not the last word
SEPARATOR = "\n\n"
STORY_START = "[Story start]"  # the user turn placed before a story that opens with narration
FIXED_ORDER = (
    "ai_instructions",
    "plot_essentials",
    "story_summary",
    "memories",
    "story_cards",
    "knowledge",
)
# Cut first when the fixed sections alone overflow: the least essential first.
TRIM_ORDER = (
    "knowledge",
    "story_cards",
    "memories",
    "story_summary",
    "plot_essentials",
    "authors_note",
    "ai_instructions",
)
TITLES = {
    "plot_essentials": "Plot Essentials",
    "story_summary": "Story Summary",
    "memories": "Memories",
    "story_cards": "World",
    "knowledge": "Knowledge",
    "authors_note": "Author's Note",
}
_SENTENCE_END = re.compile(r"(?<=[.!?…\"”'])\s+")


@dataclass(frozen=True)
class Section:
    name: str
    text: str
    reason: str = ""
    shorter: tuple[str, ...] = ()  # shorter forms of ``text``, longest first


@dataclass(frozen=True)
class HistoryEntry:
    id: int
    role: Literal["player", "narrator"]
    text: str


@dataclass
class SectionReport:
    name: str
    tokens: int
    text: str
    reason: str = ""
    cut: bool = False


@dataclass
class ContextReport:
    budget: int
    used: int = 0
    sections: list[SectionReport] = field(default_factory=list)
    history_kept: list[int] = field(default_factory=list)
    history_dropped: list[int] = field(default_factory=list)
    history_cut: int | None = None


@dataclass
class BuiltContext:
    system: str
    history: list[HistoryEntry]
    authors_note: str
    authors_note_at: int  # index in ``history`` before which the note goes
    player_action: str
    report: ContextReport

    def parts(self) -> list[tuple[str, str]]:
        """(role, text) in context order; both output shapes are built from this one list."""
        out = [("system", self.system)] if self.system else []
        for index, entry in enumerate(self.history):
            if index == self.authors_note_at and self.authors_note:
                out.append(("user", render_note(self.authors_note)))
            out.append(("user" if entry.role == "player" else "assistant", entry.text))
        if self.authors_note_at >= len(self.history) and self.authors_note:
            out.append(("user", render_note(self.authors_note)))
        if self.player_action:
            out.append(("user", self.player_action))
        return out

    def messages(self) -> list[dict[str, str]]:
        """Chat mode: one system message, then alternating user/assistant messages, the first
        of them from the user (many chat templates refuse an assistant turn first)."""
        out: list[dict[str, str]] = []
        for role, text in self.parts():
            if role == "assistant" and (not out or out[-1]["role"] == "system"):
                out.append({"role": "user", "content": STORY_START})
            _append(out, role, text)
        return out

    def prompt(self) -> str:
        """Completion mode: the same parts as one prompt string."""
        return SEPARATOR.join(text for _role, text in self.parts())


def _append(messages: list[dict[str, str]], role: str, content: str) -> None:
    """Alternating roles: consecutive messages of one role are merged."""
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"] += SEPARATOR + content
    else:
        messages.append({"role": role, "content": content})


def render_note(note: str) -> str:
    return f"[{TITLES['authors_note']}: {note}]"


def render_fixed(section: Section) -> str:
    if not section.text.strip():
        return ""
    if section.name == "ai_instructions":
        return section.text.strip()
    return f"[{TITLES[section.name]}]\n{section.text.strip()}"


def cut_to_sentences(text: str, limit: int, counter: TokenCounter) -> str:
    """The longest run of whole closing sentences of ``text`` within ``limit`` tokens."""
    sentences = _SENTENCE_END.split(text.strip())
    kept: list[str] = []
    space = counter.count(" ")
    used = 0
    for sentence in reversed(sentences):
        # Sentences are counted one by one (cached, no quadratic recount); the joins can
        # only merge into fewer tokens, so the sum never under-counts.
        cost = counter.count(sentence) + (space if kept else 0)
        if used + cost > limit:
            break
        kept.insert(0, sentence)
        used += cost
    return " ".join(kept)


def build_context(
    fixed: list[Section],
    history: list[HistoryEntry],
    authors_note: str,
    player_action: str,
    *,
    budget: int,
    counter: TokenCounter,
    entry_overhead: int = 0,
) -> BuiltContext:
    """``entry_overhead``: tokens a chat template adds around each message (role markers);
    every part is charged it, so the rendered messages stay within ``budget``."""
    report = ContextReport(budget=budget)
    by_name = {s.name: s for s in fixed}
    rendered = {name: render_fixed(by_name[name]) for name in FIXED_ORDER if name in by_name}
    note = authors_note.strip()

    separator = counter.count(SEPARATOR)

    def cost(text: str) -> int:
        # Counted apart so each text's count is cached whole; BPE merges across the join only
        # ever shorten the real prompt, so the sum is a safe upper bound.
        return counter.count(text) + separator + entry_overhead if text else 0

    action_cost = cost(player_action)
    note_cost = cost(render_note(note)) if note else 0
    fixed_costs = {name: cost(text) for name, text in rendered.items()}
    overflow = action_cost + note_cost + sum(fixed_costs.values()) - budget
    cut_names: set[str] = set()
    for name in TRIM_ORDER:
        if overflow <= 0:
            break
        if name == "authors_note":
            if note:
                note = counter.head(note, max(counter.count(note) - overflow, 0))
                new_cost = cost(render_note(note)) if note else 0
                overflow -= note_cost - new_cost
                note_cost = new_cost
                cut_names.add(name)
            continue
        if name not in rendered or not rendered[name]:
            continue
        room = max(fixed_costs[name] - overflow, 0)
        forms = (render_fixed(Section(name, t)) for t in by_name[name].shorter)
        text = next((t for t in forms if cost(t) <= room), None) if name in by_name else None
        if text is None:
            text = counter.head(rendered[name], max(room - separator - entry_overhead, 0))
        overflow -= fixed_costs[name] - cost(text)
        rendered[name], fixed_costs[name] = text, cost(text)
        cut_names.add(name)

    room = budget - action_cost - note_cost - sum(fixed_costs.values())
    kept: list[HistoryEntry] = []
    for entry in reversed(history):
        entry_cost = cost(entry.text)
        if entry_cost <= room:
            kept.insert(0, entry)
            room -= entry_cost
            continue
        limit = room - separator - entry_overhead
        text = cut_to_sentences(entry.text, limit, counter) if limit > 0 else ""
        if not text and not kept and limit > 0:
            text = counter.tail(entry.text, limit)  # a single action larger than all the room
        if text:
            kept.insert(0, HistoryEntry(entry.id, entry.role, text))
            report.history_cut = entry.id
            room -= cost(text)
        break
    kept_ids = {e.id for e in kept}
    report.history_kept = [e.id for e in kept]
    report.history_dropped = [e.id for e in history if e.id not in kept_ids]

    system = SEPARATOR.join(text for text in rendered.values() if text)
    for name, text in rendered.items():
        if text:
            report.sections.append(
                SectionReport(
                    name, fixed_costs[name], text, by_name[name].reason, name in cut_names
                )
            )
    history_text = SEPARATOR.join(e.text for e in kept)
    history_tokens = sum(cost(e.text) for e in kept)  # what the budget charged, entry by entry
    report.sections.append(SectionReport("history", history_tokens, history_text))
    if note:
        report.sections.append(
            SectionReport("authors_note", note_cost, note, "", "authors_note" in cut_names)
        )
    if player_action:
        report.sections.append(SectionReport("player_action", action_cost, player_action))
    report.used = budget - room
    return BuiltContext(
        system=system,
        history=kept,
        authors_note=note,
        authors_note_at=max(len(kept) - AUTHORS_NOTE_DEPTH, 0),
        player_action=player_action,
        report=report,
    )
