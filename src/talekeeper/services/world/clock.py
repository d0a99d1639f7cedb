"""In-story time along a path: a ``time`` event's value read as a moment, so time only moves
forward (docs/world.md).

Invariants:

- A moment is (day, part of the day). Parts run from dawn to midnight (``PARTS``); a day
  is counted from the story's first known time.
- A value reads as absolute ("day 3", "day 3, evening"), relative ("the next morning",
  "hours later", "days later"), or a part of the day alone ("at dusk"). A part alone is
  the same day when it is still ahead, else the next day: a story moves forward. A value
  that names no time it can read keeps the day and part as they were (the text is still
  shown).
- ``advance`` refuses a moment earlier than the current one (a flashback or a mistake):
  the event is kept as evidence and not applied. Within one action the day moves once,
  however many sentences say "the next morning".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PARTS = {
    "dawn": 0,
    "sunrise": 0,
    "morning": 1,
    "noon": 2,
    "midday": 2,
    "afternoon": 3,
    "evening": 4,
    "dusk": 4,
    "sunset": 4,
    "nightfall": 5,
    "night": 5,
    "midnight": 6,
}
_PART = re.compile(r"\b(" + "|".join(PARTS) + r")\b")
_DAY = re.compile(r"\bday (\d{1,6})\b")
_NEXT = re.compile(r"\b(?:next|following)\b")
_LATER = re.compile(r"\b(hours?|days?|weeks?|while) later\b")
_JUMP = {"days": 2, "weeks": 7, "day": 1, "week": 7}  # "hours", "an hour", "a while": a step


@dataclass(frozen=True, order=True)
class Moment:
    day: int
    part: int


@dataclass(frozen=True)
class Reading:
    """What a value says: an absolute day, a step of days, a part of the day."""

    day: int | None = None
    days_on: int = 0
    part: int | None = None
    hours_on: bool = False


def read(value: str) -> Reading | None:
    """The value as a time, or None when it names none this can read."""
    text = value.casefold()
    day = _DAY.search(text)
    part = _PART.search(text)
    later = _LATER.search(text)
    reading = Reading(
        day=int(day.group(1)) if day else None,
        days_on=1 if _NEXT.search(text) else _JUMP.get(later.group(1), 0) if later else 0,
        part=PARTS[part.group(1)] if part else None,
        hours_on=bool(later and later.group(1) in ("hours", "hour", "while")),
    )
    return reading if reading != Reading() else None


def advance(now: Moment | None, reading: Reading, day_moved: bool) -> Moment | None:
    """The moment ``reading`` brings, from ``now``; None when it would run backward.
    ``day_moved``: the day already moved in this action (it moves once an action)."""
    base = now or Moment(1, 0)
    if reading.day is not None:
        moment = Moment(reading.day, reading.part if reading.part is not None else 0)
    else:
        day = base.day + (0 if day_moved else reading.days_on)
        part = base.part
        if reading.part is not None:
            part = reading.part
            if reading.days_on == 0 and now is not None and part < base.part:
                day += 1  # "at dawn" after dusk: the next dawn
        elif reading.hours_on:
            part = min(base.part + 1, max(PARTS.values()))
        elif reading.days_on and not day_moved:
            part = 0
        moment = Moment(day, part)
    if now is not None and moment < now:
        return None
    return moment
