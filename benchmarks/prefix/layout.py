"""A context as the narrator reads it, section by section, and why a turn's prompt stopped
sharing its prefix with the previous turn's.

A ``Layout`` is the context in prompt order: each section (a fixed section by its name,
the Author's Note), each action of the history and the player's action, as segments.
``from_prompt`` reads one from a turn's Insights snapshot and the prompt text that was sent,
placing every segment where the prompt holds it, so it reads any context layout (every
section above the history, or sections placed among the actions). ``classic`` builds the
classic order from its parts (for hand-made contexts).

``first_break(previous, current)`` names the first segment that differs between two
consecutive prompts: everything before it is the prefix a llama.cpp-style cache keeps,
everything from it on is evaluated again. The causes (``CAUSES``):

- ``first_turn``: no previous prompt; ``appended``: the previous prompt is whole at the
  start of this one (only the new actions are evaluated);
- a section by name (``memories``, ``story_cards``, ``authors_note``, ...): its text
  changed, it appeared or vanished, or it moved (the actions before it are not what they
  were); when two sections meet at the break, the one whose text changed (the new one
  first) is named, else the one that moved;
- ``history_dropped``: the oldest action(s) left the history (whole ones dropped, the new
  first action possibly cut, or even newer than all the previous prompt held);
  ``history_cut``: the same oldest action, cut at another sentence (more or less room than
  last turn); ``history_grew``: older actions came back (the sections above it shrank, so
  the history reaches further back); ``history_changed``: any other difference
  within the history (an edit, an undo);
- ``player_action``: the prompts differ only at the player's action.

``changed(previous, current)`` lists every section whose text differs (and how the
history's start moved); ``moved`` every section whose text is the same but whose place
among the actions is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from talekeeper.services.prompt.insights.stored import Snapshot
from talekeeper.services.prompt.sections import (
    AUTHORS_NOTE_DEPTH,
    FIXED_ORDER,
    SEPARATOR,
    render_note,
)

HISTORY = "history"
NOTE = "authors_note"
ACTION = "player_action"
STORY = (HISTORY, ACTION)  # segments that are actions of the story
SECTIONS = (*FIXED_ORDER, NOTE)  # segments that are sections
FIRST_TURN = "first_turn"
APPENDED = "appended"
DROPPED = "history_dropped"
CUT = "history_cut"
GREW = "history_grew"
HISTORY_CHANGED = "history_changed"
HISTORY_CAUSES = (DROPPED, CUT, GREW, HISTORY_CHANGED)  # how the history's actions differ
CAUSES = (FIRST_TURN, APPENDED, *SECTIONS, *HISTORY_CAUSES, ACTION)


@dataclass(frozen=True)
class Segment:
    name: str  # a fixed section's name, NOTE, HISTORY (one action) or ACTION
    text: str  # as the prompt holds it (the note rendered as the context renders it)


Layout = tuple[Segment, ...]
Span = tuple[int, int]  # [start, end) in the prompt text


def classic(
    fixed: Mapping[str, str], history: Sequence[str], note: str = "", action: str = ""
) -> Layout:
    """The classic order from its parts: the fixed sections' rendered texts by name, the
    history's actions (oldest first) with the Author's Note ``AUTHORS_NOTE_DEPTH`` before
    their end, and the player's action."""
    out = [Segment(name, fixed[name]) for name in FIXED_ORDER if fixed.get(name)]
    at = max(len(history) - AUTHORS_NOTE_DEPTH, 0)
    for index, text in enumerate(history):
        if index == at and note:
            out.append(Segment(NOTE, render_note(note)))
        out.append(Segment(HISTORY, text))
    if note and at >= len(history):
        out.append(Segment(NOTE, render_note(note)))
    if action:
        out.append(Segment(ACTION, action))
    return tuple(out)


def _find(text: str, needle: str, at: int, taken: list[Span]) -> int:
    """The first place of ``needle`` in ``text`` from ``at`` that overlaps no taken span."""
    start = text.find(needle, at)
    while start >= 0 and any(s < start + len(needle) and start < e for s, e in taken):
        start = text.find(needle, start + 1)
    return start


def from_prompt(snapshot: Snapshot, text: str) -> tuple[Layout, list[Span]]:
    """The layout of the prompt ``text`` whose Insights snapshot is ``snapshot``, and each
    segment's span in it. Sections are found first (each opens with its own title), then
    the actions in order outside them (a memory may quote the story)."""
    texts = {s.name: s.text for s in snapshot.sections}
    kept = snapshot.history.kept
    history = texts.get(HISTORY, "").split(SEPARATOR) if kept else []
    if len(history) != kept:
        raise ValueError(
            f"the history's text splits into {len(history)} actions, not the {kept} kept: "
            "an action holds a blank line"
        )
    found: list[tuple[Span, Segment]] = []
    taken: list[Span] = []

    def place(segment: Segment, at: int) -> int:
        start = _find(text, segment.text, at, taken)
        if start < 0:
            raise ValueError(f"the {segment.name} segment is not in the prompt")
        span = (start, start + len(segment.text))
        found.append((span, segment))
        taken.append(span)
        return span[1]

    for name in FIXED_ORDER:
        if texts.get(name):
            place(Segment(name, texts[name]), 0)
    if texts.get(NOTE):
        place(Segment(NOTE, render_note(texts[NOTE])), 0)
    at = 0
    for action in history:
        at = place(Segment(HISTORY, action), at)
    if texts.get(ACTION):
        place(Segment(ACTION, texts[ACTION]), at)
    found.sort(key=lambda item: item[0])
    return tuple(s for _, s in found), [span for span, _ in found]


def _same(a: Segment, b: Segment) -> bool:
    # The player's action of one turn is an action of the next turn's history, same text.
    kinds_match = a.name == b.name or (a.name in STORY and b.name in STORY)
    return kinds_match and a.text == b.text


def _story_cause(before: Sequence[Segment], now: Sequence[Segment]) -> str:
    """Why the actions differ where the previous prompt (``before``, from the break on) and
    this one (``now``) part: the history's start moved on (the action now there is a later
    one of the previous prompt, or the one that was there is gone), it was cut at another
    sentence, it reached further back (the action that was there is further on now), or
    something else."""
    was, new = before[0], now[0]
    later = [s.text for s in before[1:] if s.name in STORY]
    if new.text in later or any(t.endswith(new.text) for t in later):
        return DROPPED
    if was.text.endswith(new.text) or new.text.endswith(was.text):
        return CUT
    if any(s.name in STORY and s.text.endswith(was.text) for s in now[1:]):
        return GREW
    if not any(s.name in STORY and s.text.endswith(was.text) for s in now):
        return DROPPED  # all the actions it had left: the history starts further on
    if was.name == ACTION and new.name == ACTION:
        return ACTION
    return HISTORY_CHANGED


def first_break(previous: Layout | None, current: Layout) -> tuple[str, int]:
    """The cause (one of ``CAUSES``) and the index in ``current`` of the first segment that
    differs from ``previous`` (``len(previous)`` when the prompt only appended)."""
    if previous is None:
        return FIRST_TURN, 0
    for index, (before, now) in enumerate(zip(previous, current, strict=False)):
        if _same(before, now):
            continue
        if before.name == now.name and before.name in SECTIONS:
            return now.name, index
        if now.name in SECTIONS and _text(previous, now.name) != now.text:
            return now.name, index  # it is new, or its text changed
        if before.name in SECTIONS and _text(current, before.name) != before.text:
            return before.name, index  # it went, or its text changed
        if before.name in SECTIONS:
            return before.name, index  # the same text, moved further on
        if now.name in SECTIONS:
            return now.name, index  # the same text, moved here
        return _story_cause(previous[index:], current[index:]), index
    if len(current) >= len(previous):
        return APPENDED, len(previous)
    return HISTORY_CHANGED, len(current)  # the new prompt is the old one cut short


def _text(lay: Layout, name: str) -> str:
    return next((s.text for s in lay if s.name == name), "")


def _after(lay: Layout, name: str) -> str | None:
    """The action just before section ``name`` (None: no action is before it)."""
    last = None
    for segment in lay:
        if segment.name == name:
            return last
        if segment.name in STORY:
            last = segment.text
    return None


def changed(previous: Layout | None, current: Layout) -> list[str]:
    """The sections whose text differs from ``previous`` (or that appeared or vanished),
    then how the history's start moved (``history_dropped``, ``history_cut``). The player's
    action, new every turn, is left out."""
    if previous is None:
        return []
    out = [name for name in SECTIONS if _text(previous, name) != _text(current, name)]
    story = [s for s in previous if s.name in STORY]
    now = [s for s in current if s.name in STORY]
    if story and now and story[0].text != now[0].text:
        out.append(_story_cause(story, now))
    return out


def moved(previous: Layout | None, current: Layout) -> list[str]:
    """The sections whose text is unchanged but which follow another action than before."""
    if previous is None:
        return []
    return [
        name
        for name in SECTIONS
        if _text(current, name)
        and _text(previous, name) == _text(current, name)
        and _after(previous, name) != _after(current, name)
    ]
