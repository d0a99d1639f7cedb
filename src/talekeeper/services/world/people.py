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
            NAME + r",?\s+(?:who\s+)?(?:dies|died|is dead|falls dead|is killed|is slain|has died|"
            r"lies dead|drops dead|breathes (?:his|her|their) last|(?:\w+\s+){0,2}?and "
            r"(?:goes|lies|falls) still|goes still|falls lifeless|lies lifeless)\b"
        ),
    ),
    (
        EventKind.ARRIVED,
        None,
        re.compile(
            NAME + r"\s+(?:arrives|enters|walks in|comes in|steps in|joins you|turns up|"
            r"comes back|appears (?:at|beside|behind|in)|follows (?:you|close behind|behind you)|"
            r"comes with you|walks (?:beside|with) you|keeps pace|steps out of the shadows|"
            r"is waiting for you|hurries over|sits down beside you|strides in|marches in|"
            r"bursts in|lets (?:himself|herself|themselves) in|ducks in|tags along|comes along|"
            r"trails (?:after|behind) you|hurries after you|is at your (?:heels|side|elbow)|"
            r"(?:pushes|shoulders|elbows) (?:through|past) (?:\w+\s+){0,3}?to your side|"
            r"comes to your side|is right behind you)\b"
        ),
    ),
    (  # "Into the room strides Hob.", "You are joined by Hob.", "says Hob, pushing ..."
        EventKind.ARRIVED,
        None,
        re.compile(
            r"(?:(?i:^in(?:to)? the \w+|^in) (?i:strides|walks|steps|comes|bursts|marches|wanders|"
            r"hurries|slips|stumbles)\s+|(?:^|\s)(?i:you are joined by|you bring)\s+)" + NAME
        ),
    ),
    (
        EventKind.ARRIVED,
        None,
        re.compile(
            NAME + r",?\s+(?:who\s+)?(?:ducks|comes|steps|walks|strides|hurries|bursts) in\b"
        ),
    ),
    (
        EventKind.ARRIVED,
        None,
        re.compile(
            NAME + r",\s+(?:pushing|shouldering|elbowing|making (?:his|her|their) way) "
            r"(?:through|past) (?:\w+\s+){0,3}?to your side"
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
            r"goes off|takes (?:his|her|their) leave|says goodbye and is gone|is gone|"
            r"hurries out|steps outside|steps out(?! of the shadows)|walks off|stalks off|"
            r"storms out|goes out|"
            r"says, and goes|says, and leaves|excuses (?:himself|herself|themselves) and "
            r"(?:goes|leaves|steps outside|steps out))\b"
        ),
    ),
    (  # "The door swings shut behind Hob."
        EventKind.LEFT,
        None,
        re.compile(r"\b(?i:door) (?i:swings|slams|closes|bangs|clicks) (?i:shut )?behind " + NAME),
    ),
    (
        EventKind.LEFT,
        None,
        re.compile(YOU + r"(?i:watch)\s+" + NAME + r"\s+(?:go|leave|walk away)\b"),
    ),
]
KILLS = [
    re.compile(YOU + r"(?i:kill|slay|strike down|cut down)\s+" + NAME),
    re.compile(r"(?:^|\s)(?i:you|your \w+)\s+(?i:run|runs)\s+" + NAME + r"\s+(?i:through)\b"),
    re.compile(YOU + r"(?i:end)\s+" + NAME + r"['’]s\s+(?i:life)\b"),
    re.compile(YOU + r"(?i:strike|cut)\s+" + NAME + r"\s+down\b"),
]
