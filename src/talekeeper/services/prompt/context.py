"""The context builder: a pure function from sections to a budgeted prompt plus a report
(``built.BuiltContext``).

Invariants:

- Two layouts (``ContextLayout``; docs/context.md says why ``cache`` is the default):

  - ``classic``, top to bottom: AI Instructions, Plot Essentials, Story Summary,
    Memories, Story Cards, Knowledge, the recent history (newest last) with the
    Author's Note placed ``AUTHORS_NOTE_DEPTH`` actions before its end, then the
    player's action.
  - ``cache``: a prompt that changes at its end, so a model server's prompt cache
    keeps the rest. The stable sections open it; the history follows; the floating
    sections go in the history where the previous prompt had them while nothing
    before them changed (``floating``), and the history drops its oldest actions in
    chunks (``history``).
- The budget is counted with the injected ``TokenCounter``; the built context
  never exceeds it (each part is counted with the separator that joins it, apart,
  which can only over-count: ``sections.Cost``).
- Fixed sections get priority, but for the history's reserve (``history.reserve``):
  the fixed sections fit what the budget leaves after the player's action and the
  reserve; the history fills what is left, dropping the oldest actions first
  (``history``), so it is never empty while any story fits.
- If the fixed sections exceed their room, the lowest-priority ones are
  cut first (``TRIM_ORDER``), each from its end; the player's action is never
  cut. A section that offers shorter forms of itself (``Section.shorter``: the
  Memories without some of their passages of the story) falls back to the
  longest of them that fits before it is cut.
- The report records every section's tokens and why it is there, and what
  was dropped or cut for budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from talekeeper.core.tokens import TokenCounter
from talekeeper.services.endpoints.models import ContextLayout
from talekeeper.services.prompt.built import BuiltContext, ContextReport, SectionReport
from talekeeper.services.prompt.floating import FLOATING_ORDER, Placement, floating_inserts
from talekeeper.services.prompt.history import chunked_history, filled_history, reserve
from talekeeper.services.prompt.sections import (
    AUTHORS_NOTE_DEPTH,
    FIXED_ORDER,
    SEPARATOR,
    TRIM_ORDER,
    Cost,
    HistoryEntry,
    Section,
    render_fixed,
    render_note,
    with_depths,
)

# The builder, and the types of what it takes and gives (declared beside the steps that use
# them: ``sections``, ``floating``, ``built``).
__all__ = [
    "BuiltContext",
    "ContextReport",
    "HistoryEntry",
    "Placement",
    "Section",
    "SectionReport",
    "build_context",
]


def build_context(
    fixed: Sequence[Section],
    history: Sequence[HistoryEntry],
    authors_note: str,
    player_action: str,
    *,
    budget: int,
    counter: TokenCounter,
    entry_overhead: int = 0,
    layout: ContextLayout = ContextLayout.CLASSIC,
    previous: Placement | None = None,
    rebuilt: Sequence[Section] | None = None,
    history_floor: int | None = None,
) -> BuiltContext:
    """``entry_overhead``: tokens a chat template adds around each message (role markers);
    every part is charged it, so the rendered messages stay within ``budget``.
    ``previous``: where the previous prompt put things (``cache`` keeps what it can).
    ``rebuilt``: sections that replace their namesakes (an empty one removes it) on a turn
    whose whole history is evaluated again anyway (``cache``: the Story Cards heading the
    history are brought up to date only then; ``ContextReport.rebuilt`` says which).
    ``history_floor``: the history holds no action above this depth."""
    cost = Cost.of(counter, entry_overhead)
    if history_floor is not None:
        history = [e for e in history if e.depth is None or e.depth >= history_floor]
    args = (list(history), authors_note, player_action, budget, cost, layout, previous)
    built = _build(list(fixed), *args)
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
    # The history keeps the drop that called for the rebuild: were the rebuilt sections
    # smaller and the dropped actions taken back, the cards at its head would still be new
    # (the whole history evaluated again) with no room freed, and the next turn would drop
    # and evaluate it all again.
    start = placement.history_start if placement is not None else None
    built = _build(fresh, *args, history_from=start)
    return replace(built, report=replace(built.report, rebuilt=True))


@dataclass(frozen=True)
class _Fixed:
    """The fixed sections rendered (in ``FIXED_ORDER``) and the Author's Note, trimmed to
    their room, with what each is charged and which were cut."""

    rendered: dict[str, str]
    costs: dict[str, int]
    note: str
    note_cost: int
    cut: frozenset[str]


def _build(
    fixed: list[Section],
    history: list[HistoryEntry],
    authors_note: str,
    player_action: str,
    budget: int,
    cost: Cost,
    layout: ContextLayout,
    previous: Placement | None,
    history_from: int | None = None,
) -> BuiltContext:
    """``history_from``: the depth the ``cache`` history keeps from while it fits (by
    default the previous prompt's first action)."""
    by_name = {s.name: s for s in fixed}
    action_cost = cost(player_action)
    history = with_depths(history)
    kept_back = reserve(history, budget - action_cost, cost)
    parts = _trimmed(by_name, authors_note.strip(), budget - action_cost - kept_back, cost)
    room = budget - action_cost - parts.note_cost - sum(parts.costs.values())
    if layout is ContextLayout.CACHE:
        if history_from is None and previous is not None:
            history_from = previous.history_start
        kept, history_cut = chunked_history(history, room, history_from, cost)
    else:
        kept, history_cut = filled_history(history, room, cost)
    history_tokens = sum(cost(e.text) for e in kept)  # what the budget charged, entry by entry
    tail = history[-1].depth + 1 if history and history[-1].depth is not None else 0
    system, inserts, placement = _laid_out(parts, kept, tail, layout, previous)
    sections = _reports(parts, by_name, kept, history_tokens)
    if player_action:
        sections.append(SectionReport("player_action", action_cost, player_action))
    kept_ids = {e.id for e in kept}
    report = ContextReport(
        budget=budget,
        used=budget - (room - history_tokens),
        sections=sections,
        history_kept=[e.id for e in kept],
        history_dropped=[e.id for e in history if e.id not in kept_ids],
        history_cut=history_cut,
        layout=layout,
        placement=placement,
        tail_depth=tail,
        history_reserve=kept_back,
    )
    return BuiltContext(
        system=system,
        history=kept,
        authors_note=parts.note,
        inserts=inserts,
        player_action=player_action,
        report=report,
    )


def _trimmed(by_name: dict[str, Section], note: str, room: int, cost: Cost) -> _Fixed:
    """The fixed sections and the Author's Note (``note``) rendered, the least essential cut
    first (``TRIM_ORDER``) until together they fit ``room``."""
    rendered = {name: render_fixed(by_name[name]) for name in FIXED_ORDER if name in by_name}
    costs = {name: cost(text) for name, text in rendered.items()}
    note_cost = cost(render_note(note)) if note else 0
    overflow = note_cost + sum(costs.values()) - room
    cut: set[str] = set()
    for name in TRIM_ORDER:
        if overflow <= 0:
            break
        if name == "authors_note":
            if note:
                note = cost.counter.head(note, max(cost.counter.count(note) - overflow, 0))
                new_cost = cost(render_note(note)) if note else 0
                overflow -= note_cost - new_cost
                note_cost = new_cost
                cut.add(name)
            continue
        if not rendered.get(name):
            continue
        text = _shortened(by_name[name], rendered[name], max(costs[name] - overflow, 0), cost)
        overflow -= costs[name] - cost(text)
        rendered[name], costs[name] = text, cost(text)
        cut.add(name)
    return _Fixed(rendered, costs, note, note_cost, frozenset(cut))


def _shortened(section: Section, rendered: str, room: int, cost: Cost) -> str:
    """The longest of ``section``'s shorter forms that fits ``room``; else ``rendered``
    (the section as rendered) cut from its end to fit."""
    forms = (render_fixed(Section(section.name, text)) for text in section.shorter)
    shorter = next((text for text in forms if cost(text) <= room), None)
    if shorter is not None:
        return shorter
    return cost.counter.head(rendered, max(room - cost.overhead, 0))


def _laid_out(
    parts: _Fixed,
    kept: list[HistoryEntry],
    tail: int,
    layout: ContextLayout,
    previous: Placement | None,
) -> tuple[str, dict[int, list[str]], Placement | None]:
    """The system text above the history, the sections placed in the history (by the index
    in ``kept`` before which they go) and, for ``cache``, where they went."""
    if layout is ContextLayout.CACHE:
        inserts, placement = floating_inserts(parts.rendered, parts.note, kept, tail, previous)
        above = [t for n, t in parts.rendered.items() if t and n not in FLOATING_ORDER]
        return SEPARATOR.join(above), inserts, placement
    inserts = {}
    if parts.note:
        inserts[max(len(kept) - AUTHORS_NOTE_DEPTH, 0)] = [render_note(parts.note)]
    return SEPARATOR.join(t for t in parts.rendered.values() if t), inserts, None


def _reports(
    parts: _Fixed, by_name: dict[str, Section], kept: list[HistoryEntry], history_tokens: int
) -> list[SectionReport]:
    """The report's sections in context order, up to the player's action: the fixed ones
    that have text, the history, the Author's Note."""
    reports = [
        SectionReport(
            name,
            parts.costs[name],
            text,
            by_name[name].reason,
            name in parts.cut,
            by_name[name].budget,
        )
        for name, text in parts.rendered.items()
        if text
    ]
    reports.append(SectionReport("history", history_tokens, SEPARATOR.join(e.text for e in kept)))
    if parts.note:
        cut = "authors_note" in parts.cut
        reports.append(SectionReport("authors_note", parts.note_cost, parts.note, "", cut))
    return reports
