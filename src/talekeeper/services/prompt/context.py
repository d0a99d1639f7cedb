"""The context builder: a pure function from sections to a budgeted prompt plus a report.

Invariants:

- Two layouts (``ContextLayout``; docs/context.md says why ``cache`` is the default):

  - ``classic``, top to bottom: AI Instructions, Plot Essentials, Story Summary,
    Memories, Story Cards, Knowledge, the recent history (newest last) with the
    Author's Note placed ``AUTHORS_NOTE_DEPTH`` actions before its end, then the
    player's action.
  - ``cache``: a prompt that changes at its end, so a model server's prompt cache
    keeps the rest. The stable sections (AI Instructions, Plot Essentials, Story
    Summary) open it; the history follows; the floating sections (Author's Note,
    Story Cards, Memories, Knowledge, in ``FLOATING_ORDER``) go in the history.
    Given the previous prompt's ``Placement``, everything before the first point
    where the prompt changes (a floating section whose text changed or that is
    more than ``MAX_FLOAT_ACTIONS`` actions back, the history's first action, the
    stable sections) stays where it was, so a turn that changes nothing only
    appends; the floating sections after that point are evaluated again anyway
    and are placed anew: just before the player's action, or at the head of a
    history of at most ``MAX_FLOAT_ACTIONS`` actions that is evaluated again
    whole (there older actions' drops do not move them). Sections at one place
    keep ``FLOATING_ORDER``. The history keeps the previous prompt's
    first action while it fits; when it overflows, it drops the oldest actions
    until a ``CHUNK_FRACTION`` of its room is free, so several turns only append
    again, and it never starts with a part of an action (unless a single action
    alone is larger than all the room).
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

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from talekeeper.core.tokens import TokenCounter
from talekeeper.services.endpoints.models import ContextLayout

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
    "story_cards_new",  # ``cache`` only: the cards fired since a card last left
)
# ``cache``: the sections that float in the history, the least likely to change first (the
# Author's Note is set by hand; cards follow the scene; memories and knowledge the action).
FLOATING_ORDER = ("story_cards", "authors_note", "memories", "knowledge", "story_cards_new")
# ``cache``: floating sections that always head the history (the cards describe the scene's
# world, as a lorebook's entries do at the top; they change when the scene does): placed at
# its first action and never stale, so a turn that only appends or drops older actions
# leaves them as they were.
HEAD_SECTIONS = ("story_cards",)
# A floating section left in place goes no further back than this many actions (a few
# turns): far enough that most turns only append, near enough to steer the reply.
MAX_FLOAT_ACTIONS = 8
# When the history overflows, it drops the oldest actions until room // CHUNK_FRACTION is
# free: the next turns only append until that is used up. A judgement, not tuned: a larger
# fraction would free less history per drop and drop oftener, a smaller keep less history.
CHUNK_FRACTION = 3
# Cut first when the fixed sections alone overflow: the least essential first.
TRIM_ORDER = (
    "knowledge",
    "story_cards_new",
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
    "story_cards_new": "World",
    "knowledge": "Knowledge",
    "authors_note": "Author's Note",
}
_SENTENCE_END = re.compile(r"(?<=[.!?…\"”'])\s+")


@dataclass(frozen=True)
class Placement:
    """Where a ``cache`` prompt put what may change between turns, by depth on the story
    path: the history's first action, and, per floating section, the depth of the action
    it went before (one past the history's end: before the player's action) with a digest
    of its text. The next turn keeps what it can of it (``services.prompt.placement``
    keeps it for that turn; Insights shows it)."""

    history_start: int | None = None
    sections: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    top: str = ""  # the digest of the stable sections above the history


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


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
    depth: int | None = None  # its place on the path; None: its index in the list given


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
    layout: ContextLayout = ContextLayout.CLASSIC
    placement: Placement | None = None  # ``cache`` only
    tail_depth: int = 0  # the depth just after the history: where the player's action is
    rebuilt: bool = False  # ``cache``: the ``rebuilt`` sections were used

    def actions_back(self, name: str) -> int | None:
        """How many actions before the player's action a floating section went (0: just
        before it); one heading the history is as far back as the history's first action."""
        if self.placement is None or name not in self.placement.sections:
            return None
        at = self.placement.sections[name][0]
        start = self.placement.history_start
        return self.tail_depth - (at if start is None else max(at, start))


@dataclass
class BuiltContext:
    system: str
    history: list[HistoryEntry]
    authors_note: str
    # Rendered sections placed in the history: index in ``history`` before which they go
    # (``len(history)``: after it, before the player's action), in order.
    inserts: dict[int, list[str]]
    player_action: str
    report: ContextReport

    def parts(self) -> list[tuple[str, str]]:
        """(role, text) in context order; both output shapes are built from this one list.
        A section placed in the history speaks as the user (many chat templates accept a
        system message only first), so it joins the player's message beside it."""
        out = [("system", self.system)] if self.system else []
        for index, entry in enumerate(self.history):
            out.extend(("user", text) for text in self.inserts.get(index, ()))
            out.append(("user" if entry.role == "player" else "assistant", entry.text))
        out.extend(("user", text) for text in self.inserts.get(len(self.history), ()))
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
    layout: ContextLayout = ContextLayout.CLASSIC,
    previous: Placement | None = None,
    rebuilt: list[Section] | None = None,
) -> BuiltContext:
    """``entry_overhead``: tokens a chat template adds around each message (role markers);
    every part is charged it, so the rendered messages stay within ``budget``.
    ``previous``: where the previous prompt put things (``cache`` keeps what it can).
    ``rebuilt``: sections that replace their namesakes (an empty one removes it) on a turn
    whose whole history is evaluated again anyway (``cache``: the Story Cards heading the
    history are brought up to date only then; ``ContextReport.rebuilt`` says which)."""
    args = (history, authors_note, player_action, budget, counter, entry_overhead, layout)
    built = _build(fixed, *args, previous)
    if layout is not ContextLayout.CACHE or not rebuilt:
        return built
    placement = built.report.placement
    if (
        previous is not None
        and placement is not None
        and placement.history_start == previous.history_start
        and placement.top == previous.top
    ):
        return built  # the history's head stayed: the held sections stay too
    names = {s.name for s in rebuilt}
    fresh = [s for s in fixed if s.name not in names] + [s for s in rebuilt if s.text]
    built = _build(fresh, *args, previous)
    built.report.rebuilt = True
    return built


def _build(
    fixed: list[Section],
    history: list[HistoryEntry],
    authors_note: str,
    player_action: str,
    budget: int,
    counter: TokenCounter,
    entry_overhead: int,
    layout: ContextLayout,
    previous: Placement | None,
) -> BuiltContext:
    report = ContextReport(budget=budget, layout=layout)
    by_name = {s.name: s for s in fixed}
    rendered = {name: render_fixed(by_name[name]) for name in FIXED_ORDER if name in by_name}
    note = authors_note.strip()
    history = _with_depths(history)

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
    if layout is ContextLayout.CACHE:
        overhead = separator + entry_overhead
        kept, history_cut = _chunked_history(history, room, previous, cost, counter, overhead)
    else:
        kept, history_cut = _filled_history(
            history, room, cost, counter, separator + entry_overhead
        )
    room -= sum(cost(e.text) for e in kept)
    report.history_cut = history_cut
    kept_ids = {e.id for e in kept}
    report.history_kept = [e.id for e in kept]
    report.history_dropped = [e.id for e in history if e.id not in kept_ids]
    tail = history[-1].depth + 1 if history and history[-1].depth is not None else 0
    report.tail_depth = tail

    inserts: dict[int, list[str]] = {}
    floating_names: tuple[str, ...] = ()
    if layout is ContextLayout.CACHE:
        floating_names = FLOATING_ORDER
        floating = {name: rendered[name] for name in FLOATING_ORDER if rendered.get(name)}
        if note:
            floating = {"authors_note": render_note(note), **floating}
        top = SEPARATOR.join(t for n, t in rendered.items() if t and n not in FLOATING_ORDER)
        placement = _place(floating, kept, tail, previous, digest(top))
        report.placement = placement
        order = sorted(floating, key=lambda n: (placement.sections[n][0], _order(n)))
        for name in order:
            at = placement.sections[name][0]
            index = next((i for i, e in enumerate(kept) if _depth(e) >= at), len(kept))
            inserts.setdefault(index, []).append(floating[name])
    elif note:
        inserts[max(len(kept) - AUTHORS_NOTE_DEPTH, 0)] = [render_note(note)]

    system = SEPARATOR.join(
        text for name, text in rendered.items() if text and name not in floating_names
    )
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
        inserts=inserts,
        player_action=player_action,
        report=report,
    )


def _depth(entry: HistoryEntry) -> int:
    assert entry.depth is not None  # ``_with_depths`` gave every entry one
    return entry.depth


def _with_depths(history: list[HistoryEntry]) -> list[HistoryEntry]:
    if all(e.depth is not None for e in history):
        return history
    return [HistoryEntry(e.id, e.role, e.text, index) for index, e in enumerate(history)]


def _filled_history(
    history: list[HistoryEntry],
    room: int,
    cost: Callable[[str], int],
    counter: TokenCounter,
    overhead: int,
) -> tuple[list[HistoryEntry], int | None]:
    """``classic``: the newest actions that fit, the oldest of them cut at a sentence.
    ``overhead``: what ``cost`` adds to a text's own tokens."""
    kept: list[HistoryEntry] = []
    for entry in reversed(history):
        entry_cost = cost(entry.text)
        if entry_cost <= room:
            kept.insert(0, entry)
            room -= entry_cost
            continue
        limit = room - overhead
        text = cut_to_sentences(entry.text, limit, counter) if limit > 0 else ""
        if not text and not kept and limit > 0:
            text = counter.tail(entry.text, limit)  # a single action larger than all the room
        if text:
            kept.insert(0, HistoryEntry(entry.id, entry.role, text, entry.depth))
            return kept, entry.id
        break
    return kept, None


def _chunked_history(
    history: list[HistoryEntry],
    room: int,
    previous: Placement | None,
    cost: Callable[[str], int],
    counter: TokenCounter,
    overhead: int,
) -> tuple[list[HistoryEntry], int | None]:
    """``cache``: whole actions from the previous prompt's first one while they fit; else
    all of them if they fit; else the newest that leave ``room // CHUNK_FRACTION`` free."""
    suffix = [0] * (len(history) + 1)
    for index in range(len(history) - 1, -1, -1):
        suffix[index] = suffix[index + 1] + cost(history[index].text)
    if previous is not None and previous.history_start is not None:
        start = next(
            (i for i, e in enumerate(history) if _depth(e) >= previous.history_start),
            len(history),
        )
        if start < len(history) and suffix[start] <= room:
            return history[start:], None
    if suffix[0] <= room:
        return list(history), None
    target = room - room // CHUNK_FRACTION
    start = next((i for i in range(len(history)) if suffix[i] <= target), len(history))
    if start == len(history):  # not even the newest action leaves the chunk free
        start = next((i for i in range(len(history)) if suffix[i] <= room), len(history))
    if start < len(history):
        return history[start:], None
    return _filled_history(
        history[-1:], room, cost, counter, overhead
    )  # one action larger than all


def _order(name: str) -> int:
    return FLOATING_ORDER.index(name) if name in FLOATING_ORDER else len(FLOATING_ORDER)


def _place(
    floating: dict[str, str],
    kept: list[HistoryEntry],
    tail: int,
    previous: Placement | None,
    top: str,
) -> Placement:
    """Where each floating section goes this turn (see the module docstring).

    Positions are (depth, order): a section at depth ``at`` goes before the first kept
    action at or after ``at``, so one at or before the history's first action heads the
    history and stays there when older actions are dropped. The first position where this
    prompt differs from the previous one is found; what is before it stays. The rest is
    evaluated again anyway, and goes where it serves best: to the head of the history when
    the whole history is evaluated again and holds at most ``MAX_FLOAT_ACTIONS`` actions
    (a short history turns over each turn: there a section is safest from its drops and
    still near the end), else just before the player's action. ``HEAD_SECTIONS`` always
    head the history."""
    start = _depth(kept[0]) if kept else tail
    digests = {name: digest(text) for name, text in floating.items()}
    first = start if kept else None
    short = len(kept) <= MAX_FLOAT_ACTIONS

    def anew(name: str, home: int) -> int:
        return start if name in HEAD_SECTIONS else home

    if previous is None or previous.top != top:
        home = start if short else tail
        return Placement(first, {n: (anew(n, home), d) for n, d in digests.items()}, top)
    old_start = previous.history_start if previous.history_start is not None else -1
    everything = len(FLOATING_ORDER) + 1  # past any section at one depth: an action there

    def position(at: int, name: str) -> tuple[int, int]:
        return (max(at, old_start), _order(name))

    changed_at = (tail + 1, 0)  # the first position that differs; past the end: none
    if previous.history_start != first:
        changed_at = (old_start, everything)  # the previous history's first action
    for name, (at, old) in previous.sections.items():
        # How far back it is: a section heading the history is as far back as its head.
        stale = name not in HEAD_SECTIONS and tail - max(at, start) > MAX_FLOAT_ACTIONS
        if digests.get(name) != old or at > tail or stale:
            changed_at = min(changed_at, position(at, name))
    home = start if short and changed_at <= (old_start, everything) else tail
    spots = {}
    for name, new in digests.items():
        old_spot = previous.sections.get(name)
        keep = (
            old_spot is not None and old_spot[1] == new and position(old_spot[0], name) < changed_at
        )
        spots[name] = (old_spot[0] if keep and old_spot else anew(name, home), new)
    return Placement(first, spots, top)
