"""The rules' patterns for what befalls someone named: dying, being killed, arriving,
leaving (``rules`` reads each sentence with them).

Invariant: the group ``subject`` is someone named (``grammar.named``); each pattern states
its change in so many words.
"""

from __future__ import annotations

import re

from talekeeper.services.world.grammar import YOU, named
from talekeeper.storage.vocabulary import EventKind

# Someone named and what befalls them.
NAME = named("subject")
THIRD: list[tuple[EventKind, str | None, re.Pattern[str]]] = [
    (
        EventKind.STATUS,
        "dead",
        re.compile(
            NAME + r"\s+(?:dies|died|is dead|falls dead|is killed|is slain|has died|lies dead|"
            r"breathes (?:his|her|their) last)\b"
        ),
    ),
    (
        EventKind.ARRIVED,
        None,
        re.compile(
            NAME + r"\s+(?:arrives|enters|walks in|comes in|steps in|joins you|turns up|"
            r"comes back|appears (?:at|beside|behind|in)|follows (?:you|close behind|behind you)|"
            r"comes with you|walks (?:beside|with) you|keeps pace|steps out of the shadows|"
            r"is waiting for you|hurries over|sits down beside you)\b"
        ),
    ),
    (
        EventKind.ARRIVED,
        None,
        re.compile(YOU + r"(?i:turn to find|turn and find)\s+" + NAME + r"\s+(?:standing|waiting)"),
    ),
    (
        EventKind.LEFT,
        None,
        re.compile(
            NAME + r"\s+(?:leaves|departs|walks away|walks out|heads off|slips away|goes away|"
            r"goes off|takes (?:his|her|their) leave|says goodbye and is gone)\b"
        ),
    ),
    (
        EventKind.LEFT,
        None,
        re.compile(YOU + r"(?i:watch)\s+" + NAME + r"\s+(?:go|leave|walk away)\b"),
    ),
]
KILLS = [
    re.compile(YOU + r"(?i:kill|slay|strike down|cut down)\s+" + NAME),
    re.compile(YOU + r"(?i:strike|cut)\s+" + NAME + r"\s+down\b"),
]
